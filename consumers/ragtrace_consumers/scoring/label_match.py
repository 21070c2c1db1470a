"""Matching live traces to labelled questions (the index the label stores are built from,
:class:`~ragtrace_consumers.model.LabelIndex`, is seam vocabulary in the model).

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
from ragtrace_consumers.model import EMPTY_QUESTION_SHA256, LabelLookup, RagTrace

__all__ = [
    "MATCHED_BY_ID",
    "MATCHED_BY_TEXT",
    "MatchedBy",
    "match_label",
]

MATCHED_BY_ID: Literal["question_id"] = "question_id"
MATCHED_BY_TEXT: Literal["query_text"] = "query_text"
MatchedBy = Literal["question_id", "query_text"]


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
