"""Human-labelled hallucination sets: answers with the context they were given and what people
marked in them, read from RAGTruth's files or from ragtrace's generic JSON Lines.

Generic JSON Lines, one answer per line::

    {"id": "q1-m2", "context": ["passage", ...], "answer": "...",
     "spans": [[start, end], ...], "hallucinated": true,
     "task_type": "qa", "split": "test"}

``context`` is a string or a list of strings. ``spans`` (optional) are half-open character
offsets into ``answer`` that people marked unsupported; ``hallucinated`` (optional when
``spans`` is given: any span makes the answer hallucinated) is the response label, and must not
contradict the spans. ``task_type`` (optional, default ``all``) groups the report. ``split``
(optional): ``tune`` (also ``train``, ``dev``, ``validation``) or ``test``; an answer without
one is assigned by a hash of its ``id`` (:func:`hash_split`), so a file with no splits still
gets a tuning half and a disjoint held-out half.

RAGTruth (Niu et al., 2024): a directory with ``response.jsonl`` and ``source_info.jsonl``.
Each response is joined to its source on ``source_id``; the context is the QA passages (split
at RAGTruth's ``passage N:`` markers), the article of a summary, or the JSON of a data-to-text
record. Every entry of ``labels`` is a hallucinated span (``implicit_true`` and ``due_to_null``
ones included: they are not supported *by the context*); RAGTruth's ``train`` split is the
tuning split. As in RAGTruth's own baseline, responses whose ``quality`` is not ``good``
(refusals, truncations) are left out unless ``include_all_quality``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .labels import InputFileError, read_json_lines

__all__ = [
    "SPLITS",
    "LabelledAnswer",
    "hash_split",
    "load_generic",
    "load_hallucination_set",
    "load_ragtruth",
    "ragtruth_context",
    "sample_tune",
]

SPLITS = ("tune", "test")
_TUNE_ALIASES = frozenset({"tune", "train", "dev", "validation", "val"})
_PASSAGE = re.compile(r"(?:^|\n)\s*passage \d+:", re.IGNORECASE)


@dataclass(frozen=True)
class LabelledAnswer:
    """One answer and the human verdict on it. ``spans`` is None when people gave only a
    response label; ``()`` when they marked nothing."""

    id: str
    answer: str
    context: tuple[str, ...]
    hallucinated: bool
    spans: tuple[tuple[int, int], ...] | None = None
    task_type: str = "all"
    split: str = "test"

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("LabelledAnswer.id must be non-empty")
        if self.split not in SPLITS:
            raise ValueError(f"LabelledAnswer.split must be one of {SPLITS}, got {self.split!r}")
        if self.spans is not None:
            for start, end in self.spans:
                if not 0 <= start <= end <= len(self.answer):
                    raise ValueError(
                        f"{self.id}: span ({start}, {end}) is outside the answer "
                        f"({len(self.answer)} characters)"
                    )
            if self.spans and not self.hallucinated:
                raise ValueError(f"{self.id}: marked spans but labelled not hallucinated")


def hash_split(item_id: str) -> str:
    """``tune`` or ``test``, from the first byte of SHA-256 of the id: stable across runs and
    machines, about half each."""
    return "tune" if hashlib.sha256(item_id.encode("utf-8")).digest()[0] < 128 else "test"


def _split(value: object, item_id: str, where: tuple[Path, int]) -> str:
    if value is None:
        return hash_split(item_id)
    text = str(value).strip().lower()
    if text in _TUNE_ALIASES:
        return "tune"
    if text == "test":
        return "test"
    raise InputFileError(*where, "split", f"expected tune or test, got {value!r}")


def _spans(value: object, where: tuple[Path, int]) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list):
        raise InputFileError(*where, "spans", "expected a list of [start, end] pairs")
    spans = []
    for span in value:
        if isinstance(span, Mapping):
            span = [span.get("start"), span.get("end")]
        if (
            not isinstance(span, list)
            or len(span) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in span)
        ):
            raise InputFileError(
                *where, "spans", f"expected [start, end] or {{start, end}}, got {span!r}"
            )
        spans.append((span[0], span[1]))
    return tuple(spans)


def _answer(
    doc: Mapping[str, object],
    where: tuple[Path, int],
    answer: str,
    context: tuple[str, ...],
    hallucinated: bool,
    spans: tuple[tuple[int, int], ...] | None,
    task_type: str,
    blame: str | None,
) -> LabelledAnswer:
    """The line's answer, with its ``id`` (default: the line number) and split; what
    :class:`LabelledAnswer` refuses is an :class:`InputFileError` on field ``blame``."""
    item_id = str(doc.get("id", where[1]))
    split = _split(doc.get("split"), item_id, where)
    try:
        return LabelledAnswer(item_id, answer, context, hallucinated, spans, task_type, split)
    except ValueError as exc:
        raise InputFileError(*where, blame, str(exc)) from None


def _checked(items: list[LabelledAnswer], path: Path) -> list[LabelledAnswer]:
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise InputFileError(path, None, "id", f"duplicate id {it.id!r} (resuming needs ids)")
        seen.add(it.id)
    if not items:
        raise InputFileError(path, None, None, "no labelled answers")
    return items


def load_generic(path: str | Path) -> list[LabelledAnswer]:
    """The generic JSON Lines (module docstring); :class:`InputFileError` names file, line and
    field of the first problem."""
    path = Path(path)
    items = []
    for n, doc in read_json_lines(path):
        where = (path, n)
        answer, context = doc.get("answer"), doc.get("context")
        if not isinstance(answer, str):
            raise InputFileError(*where, "answer", "must be a string")
        if isinstance(context, str):
            context = [context]
        if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
            raise InputFileError(*where, "context", "must be a string or a list of strings")
        spans = None if doc.get("spans") is None else _spans(doc["spans"], where)
        label = doc.get("hallucinated")
        if label is None:
            if spans is None:
                raise InputFileError(*where, "hallucinated", "give a response label or spans")
            label = bool(spans)
        if not isinstance(label, bool):
            raise InputFileError(*where, "hallucinated", f"must be true or false, got {label!r}")
        task = str(doc.get("task_type", "all"))
        items.append(_answer(doc, where, answer, tuple(context), label, spans, task, None))
    return _checked(items, path)


def ragtruth_context(task: str, info: object) -> tuple[str, ...]:
    """The context of a RAGTruth source: a QA source's passages (split at ``passage N:``), a
    summary's article, or the JSON of a data-to-text record."""
    if task == "QA" and isinstance(info, Mapping):
        passages = str(info.get("passages", ""))
        parts = [p.strip() for p in _PASSAGE.split(passages)]
        return tuple(p for p in parts if p) or (passages,)
    if isinstance(info, str):
        return (info,)
    return (json.dumps(info, ensure_ascii=False),)


def load_ragtruth(
    directory: str | Path, *, include_all_quality: bool = False
) -> list[LabelledAnswer]:
    """RAGTruth's ``response.jsonl`` joined with ``source_info.jsonl`` (module docstring)."""
    directory = Path(directory)
    sources: dict[str, tuple[str, tuple[str, ...]]] = {}
    source_path = directory / "source_info.jsonl"
    for n, doc in read_json_lines(source_path):
        task = doc.get("task_type")
        if "source_id" not in doc or not isinstance(task, str):
            raise InputFileError(source_path, n, None, "needs source_id and task_type")
        sources[str(doc["source_id"])] = (task, ragtruth_context(task, doc.get("source_info")))
    items = []
    response_path = directory / "response.jsonl"
    for n, doc in read_json_lines(response_path):
        where = (response_path, n)
        if not include_all_quality and doc.get("quality", "good") != "good":
            continue
        source = sources.get(str(doc.get("source_id")))
        if source is None:
            raise InputFileError(*where, "source_id", f"{doc.get('source_id')!r} not in sources")
        answer = doc.get("response")
        if not isinstance(answer, str):
            raise InputFileError(*where, "response", "must be a string")
        labels = doc.get("labels") or []
        spans = _spans(labels, where)
        task, context = source
        items.append(_answer(doc, where, answer, context, bool(spans), spans, task, "labels"))
    return _checked(items, response_path)


def sample_tune(items: Sequence[LabelledAnswer], limit: int) -> list[LabelledAnswer]:
    """``items`` with at most ``limit`` tune-split answers (the same ones on every run: lowest
    SHA-256 of the id), every test answer kept, order preserved — to tune on a sample of a
    large training split (RAGTruth's has 15,090 answers) without paying to judge all of it."""
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    tune = sorted(
        (it.id for it in items if it.split == "tune"),
        key=lambda i: hashlib.sha256(i.encode("utf-8")).digest(),
    )
    keep = set(tune[:limit])
    return [it for it in items if it.split == "test" or it.id in keep]


def load_hallucination_set(
    path: str | Path, *, include_all_quality: bool = False
) -> list[LabelledAnswer]:
    """A RAGTruth directory (or its ``response.jsonl``, next to ``source_info.jsonl``), else the
    generic JSON Lines."""
    path = Path(path)
    if path.is_dir():
        return load_ragtruth(path, include_all_quality=include_all_quality)
    if path.name == "response.jsonl" and (path.parent / "source_info.jsonl").exists():
        return load_ragtruth(path.parent, include_all_quality=include_all_quality)
    return load_generic(path)
