"""The offline judge: no model and no key.

``judge`` is :class:`LexicalJudge` (each answer unit aligned with the source, the ranking key of
detection runs); ``align`` the support of one unit against its best source window and the
contradiction cues; ``tokens`` the tokens it aligns (numbers, lemma keys, rarity weights), built
on the shared :mod:`ragtrace.evaluation.judges.terms`. Nothing here is imported by the shared
judge modules or the model judges.
"""

from __future__ import annotations

from .judge import (
    DEFAULT_THRESHOLD,
    OVERLAP_SHARE,
    SEED_THRESHOLD,
    TIE_BREAK,
    LexicalJudge,
    ranking_score,
    word_overlap,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "OVERLAP_SHARE",
    "SEED_THRESHOLD",
    "TIE_BREAK",
    "LexicalJudge",
    "ranking_score",
    "word_overlap",
]
