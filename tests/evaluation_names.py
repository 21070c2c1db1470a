"""The evaluation results the write-back emits, by name and in their order, as every suite pins
them (written here, not read from the code under test, so a renamed or reordered result fails)."""

from __future__ import annotations

__all__ = ["RETRIEVAL_RESULTS"]

RETRIEVAL_RESULTS = (
    "recall",
    "hit_rate",
    "precision",
    "reciprocal_rank",
    "ndcg",
    "context_relevancy",
)
"""The retrieval family's results, in the order of the evaluation span's events."""
