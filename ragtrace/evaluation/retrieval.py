"""Retrieval metrics: set and rank comparisons of a retrieved list against a labelled gold set.

No model call is involved. Conventions shared by every function here:

* ``retrieved`` is a ranked sequence of chunk IDs, best first. Duplicate IDs count once: the list
  is de-duplicated before ranking, keeping the first occurrence, so a repeated ID neither scores
  twice nor takes up a slot (``[a, a, b]`` ranks ``b`` second). This is what trec_eval, and so
  pytrec_eval and ir_measures, do — their run format cannot hold a duplicate.
* ``k`` is a positive int; a ``k`` larger than the list is fine (the whole list is used).
* An empty gold set marks an unanswerable question: every metric returns NaN, and aggregates
  exclude it instead of counting a false zero (see ``ragtrace.evaluation.report``).
* Relevance is binary: an ID is relevant iff it is in the gold set.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "ENV_RECALL_DEFINITION",
    "QuestionScores",
    "RecallDefinition",
    "context_precision",
    "context_relevancy",
    "dedupe",
    "hit_rate_at_k",
    "pooled_top_k",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "resolve_recall_definition",
    "score_question",
    "score_steps",
]

_log = logging.getLogger(__name__)

ENV_RECALL_DEFINITION = "RAGTRACE_SCORING_RECALL_DEFINITION"
"""Environment variable naming the recall definition when none is given explicitly: the same
variable as the consumer service's ``scoring.recall_definition``."""
_ENV_RECALL_DEFINITION_OLD = "RAGTRACE_RECALL_DEFINITION"
"""Its former name, still read (with a deprecation warning) when the new one is not set."""

_NAN = float("nan")


class RecallDefinition(str, Enum):
    """What a report calls "recall@k". Pick one and keep it: switching from mean recall to hit
    rate raises the number with no change in the system (hit rate ≥ mean recall, always)."""

    MEAN_RECALL = "mean_recall"
    """Fraction of the gold set found in the top k (TREC's Recall@k, ir_measures ``R@k``)."""
    HIT_RATE = "hit_rate"
    """1 if any gold chunk is in the top k, else 0 (TREC's Success@k)."""


def resolve_recall_definition(explicit: str | RecallDefinition | None = None) -> RecallDefinition:
    """The definition in force: ``explicit`` > ``$RAGTRACE_SCORING_RECALL_DEFINITION`` (formerly
    ``$RAGTRACE_RECALL_DEFINITION``, still read with a deprecation warning) > mean recall.

    A bad explicit value raises ``ValueError``; a bad environment value logs a warning and falls
    back to the default.
    """
    if explicit is not None:
        try:
            return RecallDefinition(explicit)
        except ValueError:
            choices = ", ".join(d.value for d in RecallDefinition)
            raise ValueError(
                f"unknown recall definition {explicit!r} (expected one of: {choices})"
            ) from None
    name = ENV_RECALL_DEFINITION
    env = os.environ.get(name)
    if not env and os.environ.get(_ENV_RECALL_DEFINITION_OLD):
        name = _ENV_RECALL_DEFINITION_OLD
        env = os.environ[name]
        _log.warning("%s is deprecated: set %s instead", name, ENV_RECALL_DEFINITION)
    if env:
        try:
            return RecallDefinition(env.strip())
        except ValueError:
            _log.warning(
                "ignoring %s=%r (expected mean_recall or hit_rate); using mean_recall",
                name,
                env,
            )
    return RecallDefinition.MEAN_RECALL


def dedupe(retrieved: Iterable[str]) -> list[str]:
    """``retrieved`` without repeats, each ID at its first position."""
    if isinstance(retrieved, str):
        raise TypeError("retrieved must be a sequence of chunk IDs, not a single string")
    seen: set[str] = set()
    out: list[str] = []
    for doc in retrieved:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _as_set(gold: AbstractSet[str] | Iterable[str]) -> AbstractSet[str]:
    if isinstance(gold, str):
        raise TypeError("gold must be a set of chunk IDs, not a single string")
    return gold if isinstance(gold, AbstractSet) else frozenset(gold)


def _hits_at_k(retrieved: Sequence[str], gold: AbstractSet[str], k: int) -> int:
    return sum(1 for doc in dedupe(retrieved)[:k] if doc in gold)


def recall_at_k(retrieved: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """Recall@k: |top-k ∩ gold| / |gold| (TREC ``recall_k``, ir_measures ``R@k``).

    NaN when ``gold`` is empty (unanswerable: exclude, do not score 0).
    """
    _check_k(k)
    gold = _as_set(gold)
    if not gold:
        return _NAN
    return _hits_at_k(retrieved, gold, k) / len(gold)


def hit_rate_at_k(retrieved: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """Hit rate@k: 1.0 if any gold ID is in the top k, else 0.0 (TREC's Success@k, ir_measures
    ``Success@k``; some libraries call this "recall@k", which it is not).

    Always ≥ ``recall_at_k`` for the same inputs. NaN when ``gold`` is empty.
    """
    _check_k(k)
    gold = _as_set(gold)
    if not gold:
        return _NAN
    return 1.0 if _hits_at_k(retrieved, gold, k) else 0.0


def precision_at_k(retrieved: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """Precision@k: |top-k ∩ gold| / k (TREC ``P_k``, ir_measures ``P@k``).

    The denominator is k even when fewer than k IDs were retrieved (missing slots count as
    non-relevant). NaN when ``gold`` is empty.
    """
    _check_k(k)
    gold = _as_set(gold)
    if not gold:
        return _NAN
    return _hits_at_k(retrieved, gold, k) / k


def reciprocal_rank(
    retrieved: Sequence[str], gold: AbstractSet[str], k: int | None = None
) -> float:
    """Reciprocal rank: 1 / rank of the first gold ID (ranks from 1), 0.0 if none is found
    (TREC ``recip_rank``, ir_measures ``RR``). With ``k``, only the top k are searched
    (ir_measures ``RR@k``). Its mean over questions is MRR. NaN when ``gold`` is empty.
    """
    if k is not None:
        _check_k(k)
    gold = _as_set(gold)
    if not gold:
        return _NAN
    ranked = dedupe(retrieved)
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """nDCG@k with binary gains (TREC ``ndcg_cut_k``, ir_measures ``nDCG@k``).

    DCG@k = Σ_{i≤k, d_i ∈ gold} 1/log2(i+1); divided by the ideal DCG@k, which has every one of
    the first min(|gold|, k) ranks relevant. NaN when ``gold`` is empty.
    """
    _check_k(k)
    gold = _as_set(gold)
    if not gold:
        return _NAN
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, doc in enumerate(dedupe(retrieved)[:k], start=1)
        if doc in gold
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def context_relevancy(supplied: Sequence[str], useful: AbstractSet[str]) -> float:
    """Context relevancy (a.k.a. context precision): the useful fraction of the chunks supplied,
    |supplied ∩ useful| / |supplied|, duplicates counted once.

    Its denominator is what was sent, not what was sought, so padding the context with
    irrelevant chunks lowers it while recall stays put. NaN when nothing was supplied; 0.0 when
    chunks were supplied and none is useful (including an empty ``useful`` set).
    """
    useful = _as_set(useful)
    unique = dedupe(supplied)
    if not unique:
        return _NAN
    return sum(1 for doc in unique if doc in useful) / len(unique)


context_precision = context_relevancy
"""Alias: the same metric under the name several evaluation libraries use."""


def _unit_or_nan(name: str, value: float) -> None:
    if not (math.isnan(value) or 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1] or NaN, got {value!r}")


@dataclass(frozen=True)
class QuestionScores:
    """Every retrieval metric for one question at one cutoff ``k``.

    ``recall`` is mean recall and ``hit_rate`` is hit rate, whatever definition a report uses
    (``recall_as`` picks one). ``reciprocal_rank`` searches the whole retrieved list (no cutoff),
    as TREC's ``recip_rank`` does. All metrics are NaN iff ``gold_size`` is 0.
    """

    k: int
    recall: float
    hit_rate: float
    precision: float
    reciprocal_rank: float
    ndcg: float
    gold_size: int

    def __post_init__(self) -> None:
        _check_k(self.k)
        if isinstance(self.gold_size, bool) or not isinstance(self.gold_size, int):
            raise TypeError(f"gold_size must be an int, got {self.gold_size!r}")
        if self.gold_size < 0:
            raise ValueError(f"gold_size must be >= 0, got {self.gold_size}")
        values = {
            "recall": self.recall,
            "hit_rate": self.hit_rate,
            "precision": self.precision,
            "reciprocal_rank": self.reciprocal_rank,
            "ndcg": self.ndcg,
        }
        for name, value in values.items():
            _unit_or_nan(name, value)
            if math.isnan(value) != (self.gold_size == 0):
                raise ValueError(f"{name} must be NaN exactly when gold_size is 0")

    @property
    def answerable(self) -> bool:
        return self.gold_size > 0

    def recall_as(self, definition: RecallDefinition) -> float:
        """The question's recall under ``definition``."""
        return self.hit_rate if definition is RecallDefinition.HIT_RATE else self.recall


def score_question(retrieved: Sequence[str], gold: AbstractSet[str], k: int) -> QuestionScores:
    """All metrics for one question at cutoff ``k`` (see each function for its definition)."""
    gold = _as_set(gold)
    return QuestionScores(
        k=k,
        recall=recall_at_k(retrieved, gold, k),
        hit_rate=hit_rate_at_k(retrieved, gold, k),
        precision=precision_at_k(retrieved, gold, k),
        reciprocal_rank=reciprocal_rank(retrieved, gold),
        ndcg=ndcg_at_k(retrieved, gold, k),
        gold_size=len(gold),
    )


def _step_cutoffs(steps: Sequence[Sequence[str]], k: int | Sequence[int]) -> list[int]:
    """One cut-off per step: ``k`` for every step, or the step's own from a sequence."""
    if isinstance(k, int):
        _check_k(k)
        return [k] * len(steps)
    ks = list(k)
    if len(ks) != len(steps):
        raise ValueError(f"one cut-off per step: {len(steps)} steps, {len(ks)} cut-offs")
    for each in ks:
        _check_k(each)
    return ks


def pooled_top_k(steps: Sequence[Sequence[str]], k: int | Sequence[int]) -> list[str]:
    """The union of every step's top k (each step de-duplicated first), in first-appearance
    order: ``[[a, b, c], [d, a, e]]`` at k=2 pools ``[a, b, d]``. ``k`` is one cut-off for every
    step or one per step (each step's declared top-k)."""
    ks = _step_cutoffs(steps, k)
    return dedupe(
        doc for ranked, cut in zip(steps, ks, strict=True) for doc in dedupe(ranked)[:cut]
    )


def score_steps(
    steps: Sequence[Sequence[str]], gold: AbstractSet[str], k: int | Sequence[int]
) -> QuestionScores:
    """All metrics for one question answered from several retrievals (an agent that searched
    n times, each step a ranked list of IDs; steps with no IDs do not count).

    ``k`` is one cut-off for every step, or one per step (each step's own declared top-k).
    Each step contributes its top k; the pool (:func:`pooled_top_k`) is one ranking of
    Σk slots: recall@k = |pool ∩ gold| / |gold|, hit rate@k = 1 if the pool holds a gold ID,
    precision@k = |pool ∩ gold| / Σk, nDCG@k over the pool's order with the ideal of Σk
    slots; the reciprocal rank searches the union of the whole lists in first-appearance order.
    With one step (n = 1) this is exactly :func:`score_question`; with none, the scores of an
    empty retrieval. The result's ``k`` is the per-step cutoff (the largest, when steps declare
    different ones).
    """
    cuts = _step_cutoffs(steps, k)
    pairs = [(list(s), cut) for s, cut in zip(steps, cuts, strict=True) if s]
    if len(pairs) == 1:
        return score_question(pairs[0][0], gold, pairs[0][1])
    if not pairs:
        if isinstance(k, int) or cuts:
            return score_question([], gold, k if isinstance(k, int) else max(cuts))
        raise ValueError("no step and no cut-off to score")
    ranked = [s for s, _ in pairs]
    ks = [cut for _, cut in pairs]
    gold = _as_set(gold)
    pool = pooled_top_k(ranked, ks)
    slots = sum(ks)
    k = max(ks)
    return QuestionScores(
        k=k,
        recall=recall_at_k(pool, gold, slots),
        hit_rate=hit_rate_at_k(pool, gold, slots),
        precision=precision_at_k(pool, gold, slots),
        reciprocal_rank=reciprocal_rank(dedupe(d for s in ranked for d in s), gold),
        ndcg=ndcg_at_k(pool, gold, slots),
        gold_size=len(gold),
    )
