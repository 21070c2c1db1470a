"""Rates with their sample size and a 95 % interval, corrected for a judge's measured error.

Pure functions over counts, standard library only (the offline commands and the service both
import it). Every value names its method; docs/statistics.md states each formula.

- :func:`wilson` — a proportion ``k/n`` with the Wilson score interval (Wilson 1927): good
  coverage down to small ``n`` and at 0 or ``n``, unlike the Wald interval.
- :func:`bootstrap_mean` — a mean of values in [0, 1] with a seeded percentile bootstrap (Efron
  1979): the same values and seed always give the same interval. :func:`mean_rates` uses it below
  :data:`BOOTSTRAP_MAX_N` values and the normal approximation ``mean ± z·s/√n`` from there on,
  where the bootstrap converges to it and would take seconds.
- :func:`rogan_gladen` — the true share of positives behind an imperfect judge's share:
  ``(p + Sp − 1) / (Se + Sp − 1)`` (Rogan & Gladen 1978). Its interval adds the uncertainty of
  Se and Sp, measured on a calibration set, to that of ``p``: the Rogan–Gladen delta-method
  variance on Agresti–Coull-adjusted inputs (each count given z²/2 extra successes and failures),
  the construction of Lang & Reiczigel (2014, Prev. Vet. Med. 113:13-22) without their bias
  shift of the centre.
- :func:`compare_rates` — the pooled two-proportion z-test: a change is *beyond noise* when
  two-sided p < 0.05.

Assumptions, everywhere: independent samples, and a judge (and its error) that does not change
between the calibration and the rated window.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from statistics import NormalDist

__all__ = [
    "BOOTSTRAP",
    "BOOTSTRAP_MAX_N",
    "CONFIDENCE",
    "NORMAL",
    "ROGAN_GLADEN",
    "TWO_PROPORTION_Z",
    "WILSON",
    "Change",
    "CorrectedRate",
    "Rate",
    "bootstrap_mean",
    "bootstrap_intervals",
    "bootstrap_means",
    "compare_rates",
    "mean_rates",
    "rogan_gladen",
    "wilson",
]

CONFIDENCE = 0.95
WILSON = "wilson"
BOOTSTRAP = "bootstrap"
NORMAL = "normal"
BOOTSTRAP_MAX_N = 500
ROGAN_GLADEN = "rogan-gladen (lang-reiczigel interval)"
TWO_PROPORTION_Z = "two-proportion z-test, p < 0.05"
_BOOTSTRAP_RESAMPLES = 2000


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


@dataclass(frozen=True)
class Rate:
    """``k`` out of ``n`` (``k`` is the sum of the values for a mean), with the interval
    ``[low, high]`` given by ``method``. ``n == 0`` is a rate of nothing: value, low and high
    are NaN."""

    k: float
    n: int
    low: float
    high: float
    method: str

    def __post_init__(self) -> None:
        if self.n < 0 or self.k < 0 or (self.n and self.k > self.n):
            raise ValueError(f"Rate needs 0 <= k <= n, got k={self.k!r}, n={self.n!r}")

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else math.nan

    def to_dict(self) -> dict[str, object]:
        """JSON form; NaN (nothing rated) as null."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        k: float = int(self.k) if float(self.k).is_integer() else round(self.k, 6)
        return {
            "value": num(self.value),
            "k": k,
            "n": self.n,
            "low": num(self.low),
            "high": num(self.high),
            "method": self.method,
        }

    def describe(self, *, percent: bool = True) -> str:
        """``12.5 % [9.1, 16.9] n=200`` (``n=0`` alone when nothing was rated)."""
        if not self.n:
            return "n/a n=0"
        if percent:
            return (
                f"{100 * self.value:.1f} % [{100 * self.low:.1f}, {100 * self.high:.1f}] n={self.n}"
            )
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}] n={self.n}"


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> Rate:
    """``k`` successes in ``n`` trials with the Wilson score interval:
    ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``."""
    if n == 0:
        return Rate(k, 0, math.nan, math.nan, WILSON)
    z = _z(confidence)
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    # At k = 0 (k = n) the bound is 0 (1) exactly; the formula leaves a rounding residue.
    low = 0.0 if k == 0 else _clip((centre - half) / scale)
    high = 1.0 if k == n else _clip((centre + half) / scale)
    return Rate(k, n, low, high, WILSON)


def bootstrap_mean(
    values: Sequence[float],
    *,
    seed: int = 0,
    resamples: int = _BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Rate:
    """The mean of ``values`` (each in [0, 1]) with the percentile interval of ``resamples``
    means of resamples drawn with replacement from a ``random.Random(seed)``."""
    return bootstrap_means([values], seed=seed, resamples=resamples, confidence=confidence)[0]


def bootstrap_means(
    columns: Sequence[Sequence[float]],
    *,
    seed: int = 0,
    resamples: int = _BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
) -> list[Rate]:
    """:func:`bootstrap_mean` of each column, all of the same length (one value per question),
    over the same resampled questions (:func:`bootstrap_intervals`)."""
    intervals = bootstrap_intervals(columns, resamples, confidence, seed)
    return [
        Rate(math.fsum(column), len(column), low, high, BOOTSTRAP)
        for column, (low, high) in zip(columns, intervals, strict=True)
    ]


def mean_rates(columns: Sequence[Sequence[float]], *, seed: int = 0) -> list[Rate]:
    """The mean of each column (values in [0, 1], one per question, every column as long) with
    its 95 % interval: :func:`bootstrap_means` below :data:`BOOTSTRAP_MAX_N` questions, else the
    normal approximation ``mean ± z·s/√n`` (``s`` the sample standard deviation), clipped to
    [0, 1]."""
    n = len(columns[0]) if columns else 0
    if n < BOOTSTRAP_MAX_N:
        return bootstrap_means(columns, seed=seed)
    z = _z(CONFIDENCE)
    rates = []
    for column in columns:
        total = math.fsum(column)
        mean = total / n
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in column) / (n - 1))
        half = z * sd / math.sqrt(n)
        rates.append(Rate(total, n, _clip(mean - half), _clip(mean + half), NORMAL))
    return rates


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    # Linear interpolation between closest ranks (numpy's default method).
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_intervals(
    columns: Sequence[Sequence[float]], resamples: int, confidence: float, seed: int
) -> list[tuple[float, float]]:
    """Percentile intervals of the mean of each column (one value per question; any real
    values), every column resampled with the same question indices, drawn ``resamples`` times
    from a ``random.Random(seed)``, so the columns stay paired with each other. (NaN, NaN) for
    empty columns."""
    _z(confidence)
    n = len(columns[0]) if columns else 0
    if any(len(c) != n for c in columns):
        raise ValueError("every column needs one value per question")
    if n == 0:
        return [(math.nan, math.nan) for _ in columns]
    rng = random.Random(seed)
    population = range(n)
    means: list[list[float]] = [[] for _ in columns]
    for _ in range(resamples):
        idx = rng.choices(population, k=n)
        # itemgetter(*idx) returns a bare item, not a tuple, when idx has one element.
        pick = itemgetter(*idx) if n > 1 else (lambda row, i=idx[0]: (row[i],))
        for column, out in zip(columns, means, strict=True):
            out.append(sum(pick(column)) / n)
    tail = (1.0 - confidence) / 2.0
    intervals = []
    for out in means:
        out.sort()
        intervals.append((_quantile(out, tail), _quantile(out, 1.0 - tail)))
    return intervals


@dataclass(frozen=True)
class CorrectedRate:
    """The true share behind ``raw`` (the judge's share of positives), corrected with the
    judge's ``sensitivity`` (positives it flags) and ``specificity`` (negatives it passes),
    each a :class:`Rate` of its calibration counts. ``value`` is clipped to [0, 1]; it is NaN
    when the judge is no better than chance (Se + Sp ≤ 1) or nothing was rated."""

    raw: Rate
    sensitivity: Rate
    specificity: Rate
    value: float
    low: float
    high: float
    method: str = ROGAN_GLADEN

    def to_dict(self) -> dict[str, object]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        return {
            "value": num(self.value),
            "low": num(self.low),
            "high": num(self.high),
            "method": self.method,
            "raw": self.raw.to_dict(),
            "sensitivity": self.sensitivity.to_dict(),
            "specificity": self.specificity.to_dict(),
        }

    def describe(self) -> str:
        if math.isnan(self.value):
            return "n/a (judge no better than chance on its calibration, or nothing judged)"
        return f"{100 * self.value:.1f} % [{100 * self.low:.1f}, {100 * self.high:.1f}]"


def rogan_gladen(
    raw: Rate, sensitivity: Rate, specificity: Rate, confidence: float = CONFIDENCE
) -> CorrectedRate:
    """Correct ``raw`` for the judge's error (module docstring). With ``ã = (k + z²/2)/(n + z²)``
    for each of the three counts and ``P = (p̃ + S̃p − 1)/(S̃e + S̃p − 1)``::

        var = [p̃(1−p̃)/ñ + P²·S̃e(1−S̃e)/ñ_se + (1−P)²·S̃p(1−S̃p)/ñ_sp] / (S̃e + S̃p − 1)²

    and the interval ``P ± z·sqrt(var)``, clipped to [0, 1]. The point value is the plain
    Rogan–Gladen estimate on the unadjusted counts."""
    z = _z(confidence)
    nan = CorrectedRate(raw, sensitivity, specificity, math.nan, math.nan, math.nan)
    if not (raw.n and sensitivity.n and specificity.n):
        return nan
    youden = sensitivity.value + specificity.value - 1
    if youden <= 0:
        return nan
    value = _clip((raw.value + specificity.value - 1) / youden)

    def adjusted(rate: Rate) -> tuple[float, float]:
        n = rate.n + z * z
        return (rate.k + z * z / 2) / n, n

    p, n_p = adjusted(raw)
    se, n_se = adjusted(sensitivity)
    sp, n_sp = adjusted(specificity)
    youden_adj = se + sp - 1
    if youden_adj <= 0:
        return nan
    centre = (p + sp - 1) / youden_adj
    var = (
        p * (1 - p) / n_p
        + centre**2 * se * (1 - se) / n_se
        + (1 - centre) ** 2 * sp * (1 - sp) / n_sp
    ) / youden_adj**2
    half = z * math.sqrt(var)
    return CorrectedRate(
        raw, sensitivity, specificity, value, _clip(centre - half), _clip(centre + half)
    )


@dataclass(frozen=True)
class Change:
    """``current`` against ``previous``: the difference of their values, the two-sided p-value
    of the pooled two-proportion z-test, and whether it is below 0.05 (``beyond_noise``).
    Undecidable (an empty window, or both rates 0 or 1) gives p = NaN and not beyond noise."""

    current: Rate
    previous: Rate
    difference: float
    p_value: float
    method: str = TWO_PROPORTION_Z

    @property
    def beyond_noise(self) -> bool:
        return not math.isnan(self.p_value) and self.p_value < 1 - CONFIDENCE

    def to_dict(self) -> dict[str, object]:
        return {
            "current": self.current.to_dict(),
            "previous": self.previous.to_dict(),
            "difference": None if math.isnan(self.difference) else round(self.difference, 6),
            "p_value": None if math.isnan(self.p_value) else round(self.p_value, 6),
            "beyond_noise": self.beyond_noise,
            "method": self.method,
        }


def compare_rates(current: Rate, previous: Rate) -> Change:
    """The pooled two-proportion z-test of ``current`` against ``previous``:
    ``z = (p₁ − p₂) / sqrt(p̄(1−p̄)(1/n₁ + 1/n₂))`` with ``p̄ = (k₁ + k₂)/(n₁ + n₂)``."""
    if not (current.n and previous.n):
        return Change(current, previous, math.nan, math.nan)
    difference = current.value - previous.value
    pooled = (current.k + previous.k) / (current.n + previous.n)
    se = math.sqrt(pooled * (1 - pooled) * (1 / current.n + 1 / previous.n))
    if se == 0:
        return Change(current, previous, difference, math.nan)
    z = difference / se
    return Change(current, previous, difference, 2 * (1 - NormalDist().cdf(abs(z))))
