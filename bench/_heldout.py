"""Held-out discipline for the judge-quality benchmark: which sets a figure may be tuned on, and
how sure a figure is.

Sets are files of ``bench/data/hallucination/``, named ``<dataset>[-<part>]`` (``qags-cnndm``,
``ragtruth-qa``, ``faithbench-rest``): the parts of one dataset share annotators, guidelines or
sources, so leave-one-dataset-out holds out the whole dataset — :func:`lodo` gives, for each set,
the sets of every *other* dataset. Bootstrap intervals resample answers with replacement from a
seeded generator, so a run reproduces its intervals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ragtrace.evaluation.detection import auroc

__all__ = ["Interval", "bootstrap", "bootstrap_auroc", "bootstrap_auroc_gap", "dataset", "lodo"]

RESAMPLES = 1000
SEED = 30


def dataset(set_name: str) -> str:
    """The dataset a set belongs to: its name up to the first ``-``."""
    return set_name.split("-", 1)[0]


def lodo(set_names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each set, the sets it may be tuned on: those of every other dataset (sorted)."""
    names = sorted(set(set_names))
    return {n: tuple(m for m in names if dataset(m) != dataset(n)) for n in names}


@dataclass(frozen=True)
class Interval:
    """A point estimate and its percentile bootstrap interval (``level``, e.g. 0.95)."""

    value: float
    low: float
    high: float
    level: float = 0.95

    def excludes(self, x: float) -> bool:
        """Whether ``x`` lies outside the interval."""
        return x < self.low or x > self.high

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def bootstrap(
    statistic: Callable[[Sequence[int]], float],
    n: int,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> Interval:
    """``statistic`` of the indices ``0..n-1`` and its percentile interval over ``resamples``
    resamples of them (with replacement); resamples where it is NaN (e.g. one class only) are
    dropped."""
    if n < 1:
        raise ValueError("bootstrap needs at least one answer")
    rng = random.Random(seed)
    everyone = range(n)
    draws = sorted(
        v
        for v in (statistic(rng.choices(everyone, k=n)) for _ in range(resamples))
        if not math.isnan(v)
    )
    if not draws:
        return Interval(statistic(list(everyone)), math.nan, math.nan, level)
    tail = (1 - level) / 2
    low = draws[min(len(draws) - 1, int(tail * len(draws)))]
    high = draws[min(len(draws) - 1, int((1 - tail) * len(draws)))]
    return Interval(statistic(list(everyone)), low, high, level)


def bootstrap_auroc(
    scores: Sequence[float],
    hallucinated: Sequence[bool],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """AUROC of ``scores`` (lower: more suspect) with its bootstrap interval."""
    if len(scores) != len(hallucinated):
        raise ValueError("scores and hallucinated must have one entry per answer")
    return bootstrap(
        lambda ix: auroc([scores[i] for i in ix], [hallucinated[i] for i in ix]),
        len(scores),
        resamples=resamples,
        seed=seed,
    )


def bootstrap_auroc_gap(
    a: Sequence[float],
    b: Sequence[float],
    hallucinated: Sequence[bool],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """AUROC of ``a`` minus AUROC of ``b`` on the same answers, paired: each resample draws
    the answers once for both."""

    def gap(ix: Sequence[int]) -> float:
        labels = [hallucinated[i] for i in ix]
        return auroc([a[i] for i in ix], labels) - auroc([b[i] for i in ix], labels)

    if not len(a) == len(b) == len(hallucinated):
        raise ValueError("a, b and hallucinated must have one entry per answer")
    return bootstrap(gap, len(a), resamples=resamples, seed=seed)
