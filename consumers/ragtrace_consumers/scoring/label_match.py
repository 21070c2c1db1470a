"""Matching live traces to labelled questions (the index the label stores are built from,
:class:`~ragtrace_consumers.model.LabelIndex`, is seam vocabulary in the model), through the
pipeline's :class:`LabelView` of the label store.

A trace matches a labelled question by its explicit question ID (``ragtrace.question.id``) when
that ID is labelled, else by its query text: the SHA-256 of the normalised query
(:func:`ragtrace.normalize.question_sha256` — case, white space, punctuation and Unicode form do
not matter), which the SDK records even when content capture is off.

Two labelled questions that normalise to the same text are *ambiguous*: neither is matched by
text (which gold set would apply?), both still match by ID, and ``labels stats`` reports them.
A question that normalises to nothing (only punctuation) is never matched by text.
"""

from __future__ import annotations

from typing import Literal

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import (
    EMPTY_QUESTION_SHA256,
    LabelIndex,
    LabelLookup,
    LabelStore,
    RagTrace,
)

__all__ = [
    "MATCHED_BY_ID",
    "MATCHED_BY_TEXT",
    "LabelView",
    "MatchedBy",
    "match_label",
]

MATCHED_BY_ID: Literal["question_id"] = "question_id"
MATCHED_BY_TEXT: Literal["query_text"] = "query_text"
MatchedBy = Literal["question_id", "query_text"]


class LabelView:
    """The label set as the pipeline reads it: indexed in process, reloaded from the store only
    when the store's version changes (checked once per batch with :meth:`refresh`)."""

    def __init__(self, store: LabelStore) -> None:
        self._store = store
        self._index: LabelIndex | None = None
        self._version = ""

    def refresh(self) -> None:
        version = self._store.version()
        if version == self._version:
            return
        questions = self._store.questions() if version else []
        # Indexed from what was read, with its own version: a reload between the two reads is
        # picked up at the next batch, never mixed.
        self._index = LabelIndex.build(questions) if questions else None
        self._version = self._index.version if self._index is not None else ""

    def by_id(self, qid: str) -> object | None:
        found: object | None = self._index.by_id.get(qid) if self._index is not None else None
        return found

    def by_question_sha256(self, digest: str) -> object | None:
        index = self._index
        if index is None or digest not in index.by_sha256:
            return None
        found: object = index.by_id[index.by_sha256[digest]]
        return found

    def version(self) -> str:
        return self._version


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
