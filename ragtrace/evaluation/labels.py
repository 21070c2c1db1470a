"""Labelled questions and retrieval runs, read from JSON Lines files.

Labels: one object per line, ``{"qid": "q1", "question": "…", "gold": ["chunk-id", …]}``. An
empty ``gold`` list marks a question the corpus cannot answer (scored NaN, excluded from means).
An optional ``"reference_answer": "…"`` (a person's answer to the question) lets the consumers
score answer correctness on live traces that ask it.
Run: one object per line, ``{"qid": "q1", "retrieved": ["chunk-id", …]}`` in rank order.

Other keys on a line are ignored. Blank lines are skipped. Every error is an ``InputFileError``
naming the file, the (1-based) line and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtrace._nesting import DEFAULT_MAX_DEPTH, too_deep_at
from ragtrace.errors import RagtraceError
from ragtrace.evaluation._input import read_input_text
from ragtrace.normalize import question_sha256

__all__ = [
    "InputFileError",
    "LabelledQuestion",
    "label_set_version",
    "load_labels",
    "load_run",
    "parse_json",
    "read_input_file",
    "read_json_lines",
]


class InputFileError(RagtraceError, ValueError):
    """A problem in an input file, with where it is: ``path``, ``line`` (1-based, or None when the
    problem is not on one line) and ``field`` (or None when no single field is at fault)."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, reason: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.reason = reason
        where = self.path if line is None else f"{self.path}, line {line}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {reason}")


def parse_json(text: str, path: str | Path, line: int | None = None) -> object:
    """``json.loads(text)``, refusing a document nested deeper than 100 arrays or objects with
    an :class:`InputFileError` naming the file, line and column (the decoder itself would end in a
    bare ``RecursionError``). ``line``: the line ``text`` is, in a JSON Lines file. Syntax errors
    raise ``json.JSONDecodeError`` as usual (callers word them)."""
    if text.count("[") + text.count("{") > DEFAULT_MAX_DEPTH:  # cheap: only then scan
        where = too_deep_at(text)
        if where is not None:
            at_line = line if line is not None else where.line
            raise InputFileError(
                path,
                at_line,
                None,
                f"JSON nested deeper than {DEFAULT_MAX_DEPTH} levels at column {where.column}",
            )
    try:
        return json.loads(text)
    except RecursionError:  # nesting the scan let through but the decoder cannot follow
        raise InputFileError(path, line, None, "JSON nested too deep to read") from None


@dataclass(frozen=True)
class LabelledQuestion:
    """A question with the chunk IDs that contain its answer (empty: unanswerable) and,
    optionally, a reference answer written by a person (None: none given)."""

    qid: str
    question: str
    gold: frozenset[str]
    reference_answer: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.qid, str) or not self.qid:
            raise ValueError(f"qid must be a non-empty string, got {self.qid!r}")
        if not isinstance(self.question, str):
            raise TypeError(f"question must be a string, got {type(self.question).__name__}")
        if not isinstance(self.gold, frozenset):
            object.__setattr__(self, "gold", frozenset(self.gold))
        if not all(isinstance(g, str) and g for g in self.gold):
            raise ValueError("gold must hold non-empty string chunk IDs")
        if self.reference_answer is not None and not (
            isinstance(self.reference_answer, str) and self.reference_answer.strip()
        ):
            raise ValueError("reference_answer must be a non-empty string or None")

    @property
    def answerable(self) -> bool:
        return bool(self.gold)

    @property
    def question_sha256(self) -> str:
        """SHA-256 of the normalised question text (how live traces are matched to it)."""
        return question_sha256(self.question)


def read_input_file(path: str | Path) -> str:
    """The text of ``path`` (``-``: stdin; UTF-8, a BOM dropped); a missing, unreadable or
    binary file raises :class:`InputFileError`."""
    try:
        return read_input_text(path, encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputFileError(path, None, None, "no such file") from None
    except OSError as exc:
        raise InputFileError(path, None, None, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputFileError(
            path,
            None,
            None,
            f"not UTF-8 text (a binary file?): byte "
            f"{exc.start} is {exc.object[exc.start : exc.start + 1]!r}",
        ) from None


def read_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, object]]]:
    """Each non-blank line of a JSON Lines file (:func:`read_input_file`) as ``(line number,
    object)``; a line that is not a JSON object raises :class:`InputFileError` naming it."""
    for number, line in enumerate(read_input_file(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = parse_json(line, path, number)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, number, None, f"not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InputFileError(
                path, number, None, f"expected a JSON object, got {type(obj).__name__}"
            )
        yield number, obj


def _string(path: Path, number: int, obj: Mapping[str, object], field: str) -> str:
    if field not in obj:
        raise InputFileError(path, number, field, "missing")
    value = obj[field]
    if not isinstance(value, str) or not value.strip():
        raise InputFileError(path, number, field, f"must be a non-empty string, got {value!r}")
    return value


def _ids(path: Path, number: int, obj: Mapping[str, object], field: str) -> list[str]:
    if field not in obj:
        raise InputFileError(path, number, field, "missing")
    value = obj[field]
    if not isinstance(value, list):
        raise InputFileError(
            path, number, field, f"must be a list of chunk IDs, got {type(value).__name__}"
        )
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise InputFileError(
                path, number, f"{field}[{i}]", f"must be a non-empty string, got {item!r}"
            )
    return value


def _unique_qid(
    path: Path, number: int, obj: Mapping[str, object], first_line: dict[str, int]
) -> str:
    """The line's qid, refused when an earlier line had it; ``first_line`` records it."""
    qid = _string(path, number, obj, "qid")
    if qid in first_line:
        raise InputFileError(
            path, number, "qid", f"duplicate qid {qid!r} (first on line {first_line[qid]})"
        )
    first_line[qid] = number
    return qid


def load_labels(path: str | Path) -> list[LabelledQuestion]:
    """Read a labels file, in file order. Duplicate qids and an empty file are errors."""
    path = Path(path)
    questions: list[LabelledQuestion] = []
    first_line: dict[str, int] = {}
    for number, obj in read_json_lines(path):
        qid = _unique_qid(path, number, obj, first_line)
        question = _string(path, number, obj, "question")
        gold = _ids(path, number, obj, "gold")
        reference = (
            _string(path, number, obj, "reference_answer")
            if obj.get("reference_answer") is not None
            else None
        )
        questions.append(
            LabelledQuestion(
                qid=qid, question=question, gold=frozenset(gold), reference_answer=reference
            )
        )
    if not questions:
        raise InputFileError(path, None, None, "no labelled questions")
    return questions


def load_run(
    path: str | Path, questions: Sequence[LabelledQuestion] | None = None
) -> dict[str, list[str]]:
    """Read a run file into ``{qid: retrieved IDs in rank order}``.

    Duplicate qids are an error. With ``questions``, so is an entry for a qid that is not
    labelled, and so is a labelled question with no entry (a question the retriever found
    nothing for is written ``"retrieved": []``, never left out).
    """
    path = Path(path)
    known = None if questions is None else {q.qid for q in questions}
    run: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for number, obj in read_json_lines(path):
        qid = _unique_qid(path, number, obj, first_line)
        if known is not None and qid not in known:
            raise InputFileError(path, number, "qid", f"unknown qid {qid!r} (not in the labels)")
        run[qid] = _ids(path, number, obj, "retrieved")
    if questions is not None:
        missing = [q.qid for q in questions if q.qid not in run]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5]) + (" …" if len(missing) > 5 else "")
            raise InputFileError(
                path, None, "qid", f"no entry for {len(missing)} labelled question(s): {shown}"
            )
    return run


def label_set_version(questions: Sequence[LabelledQuestion]) -> str:
    """A short hash of the label set's content (qids, questions, gold sets, reference answers),
    independent of order: two evaluations with the same version scored against the same labels.
    A question without a reference answer hashes as it did before the field existed."""
    canonical = sorted(
        (q.qid, q.question, sorted(q.gold))
        + (() if q.reference_answer is None else (q.reference_answer,))
        for q in questions
    )
    blob = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
