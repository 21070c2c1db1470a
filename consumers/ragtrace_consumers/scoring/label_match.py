"""Matching live traces to labelled questions, and the index both label stores are built from.

A trace matches a labelled question by its explicit question ID (``ragtrace.question.id``) when
that ID is labelled, else by its query text: the SHA-256 of the normalised query
(:func:`ragtrace.normalize.question_sha256` — case, white space, punctuation and Unicode form do
not matter), which the SDK records even when content capture is off.

Two labelled questions that normalise to the same text are *ambiguous*: neither is matched by
text (which gold set would apply?), both still match by ID, and ``labels stats`` reports them.
A question that normalises to nothing (only punctuation) is never matched by text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ragtrace.evaluation.labels import LabelledQuestion, label_set_version
from ragtrace.normalize import question_sha256
from ragtrace_consumers.model import RagTrace

__all__ = [
    "EMPTY_QUESTION_SHA256",
    "MATCHED_BY_ID",
    "MATCHED_BY_TEXT",
    "LabelIndex",
    "LabelLookup",
    "LabelStats",
    "MatchedBy",
    "match_label",
    "question_from_json",
    "question_to_json",
]

MATCHED_BY_ID: Literal["question_id"] = "question_id"
MATCHED_BY_TEXT: Literal["query_text"] = "query_text"
MatchedBy = Literal["question_id", "query_text"]
EMPTY_QUESTION_SHA256 = question_sha256("")


@dataclass(frozen=True)
class LabelStats:
    """What ``ragtrace labels stats`` prints about the loaded label set (version None: none)."""

    version: str | None
    questions: int = 0
    answerable: int = 0
    ambiguous: int = 0
    loaded_at: float | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        if min(self.questions, self.answerable, self.ambiguous) < 0:
            raise ValueError("label counts must be >= 0")

    def to_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "questions": self.questions,
            "answerable": self.answerable,
            "ambiguous": self.ambiguous,
            "loaded_at": self.loaded_at,
            "source": self.source,
        }


@dataclass(frozen=True)
class LabelIndex:
    """A label set ready for lookups: by qid, by normalised-question digest, and its version."""

    by_id: Mapping[str, LabelledQuestion]
    by_sha256: Mapping[str, str]  # digest -> qid, unambiguous digests only
    ambiguous: frozenset[str]  # digests shared by two or more questions
    version: str

    @classmethod
    def build(cls, questions: Sequence[LabelledQuestion]) -> LabelIndex:
        """Index ``questions``; a duplicate qid raises ValueError naming it."""
        by_id: dict[str, LabelledQuestion] = {}
        owners: dict[str, list[str]] = {}
        for q in questions:
            if q.qid in by_id:
                raise ValueError(f"duplicate qid {q.qid!r} in the label set")
            by_id[q.qid] = q
            digest = q.question_sha256
            if digest != EMPTY_QUESTION_SHA256:
                owners.setdefault(digest, []).append(q.qid)
        by_sha = {d: qids[0] for d, qids in owners.items() if len(qids) == 1}
        ambiguous = frozenset(d for d, qids in owners.items() if len(qids) > 1)
        return cls(by_id, by_sha, ambiguous, label_set_version(list(questions)))

    def stats(self, *, loaded_at: float | None = None, source: str | None = None) -> LabelStats:
        return LabelStats(
            version=self.version,
            questions=len(self.by_id),
            answerable=sum(1 for q in self.by_id.values() if q.gold),
            ambiguous=sum(1 for q in self.by_id.values() if q.question_sha256 in self.ambiguous),
            loaded_at=loaded_at,
            source=source,
        )


class LabelLookup(Protocol):
    """The two lookups matching needs (a label store, or the pipeline's indexed view of one)."""

    def by_id(self, qid: str) -> object | None: ...

    def by_question_sha256(self, digest: str) -> object | None: ...


def match_label(
    trace: RagTrace, store: LabelLookup
) -> tuple[LabelledQuestion | None, MatchedBy | None]:
    """The labelled question ``trace`` asks and how it was matched, or ``(None, None)``."""
    if trace.question_id:
        found = store.by_id(trace.question_id)
        if isinstance(found, LabelledQuestion):
            return found, MATCHED_BY_ID
    digest = trace.query_sha256
    if digest and digest != EMPTY_QUESTION_SHA256:
        found = store.by_question_sha256(digest)
        if isinstance(found, LabelledQuestion):
            return found, MATCHED_BY_TEXT
    return None, None


def question_to_json(q: LabelledQuestion) -> str:
    """The storage form of one labelled question (the labels file's line format)."""
    d: dict[str, object] = {"qid": q.qid, "question": q.question, "gold": sorted(q.gold)}
    if q.reference_answer is not None:
        d["reference_answer"] = q.reference_answer
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def question_from_json(raw: str | bytes) -> LabelledQuestion:
    d = json.loads(raw)
    return LabelledQuestion(
        qid=d["qid"],
        question=d["question"],
        gold=frozenset(d["gold"]),
        reference_answer=d.get("reference_answer"),
    )


def sorted_questions(questions: Iterable[LabelledQuestion]) -> list[LabelledQuestion]:
    return sorted(questions, key=lambda q: q.qid)
