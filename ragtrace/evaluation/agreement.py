"""Cohen's κ between the judge and a second rater, with its n and a 95 % interval.

The interval is κ ± z·SE with the large-sample standard error of Fleiss, Cohen & Everitt (1969)
for two raters and two categories (the delta-method variance of κ under multinomial sampling of
the units), clipped to [−1, 1]. It assumes the units are independent draws — units of one answer
are not quite, so the interval is somewhat narrow — and it is poor for small n; the audit's alert
waits for a minimum n for that reason (docs/statistics.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragtrace.evaluation.calibration import Confusion, cohen_kappa

__all__ = ["Agreement", "agreement", "kappa_standard_error"]

_Z95 = 1.959963984540054


@dataclass(frozen=True)
class Agreement:
    """κ over ``n`` units with its interval ``low``..``high`` (all NaN when κ is undefined)."""

    n: int
    kappa: float
    low: float
    high: float
    confusion: Confusion


def kappa_standard_error(c: Confusion) -> float:
    """The large-sample standard error of κ (Fleiss, Cohen & Everitt 1969); NaN when κ is
    undefined."""
    n = c.total
    kappa = cohen_kappa(c)
    if n == 0 or math.isnan(kappa):
        return math.nan
    # p[i][j]: judge i, human j; index 0 = entailed/supported.
    p = ((c.both_entailed / n, c.judge_only / n), (c.human_only / n, c.neither / n))
    row = (p[0][0] + p[0][1], p[1][0] + p[1][1])  # judge's margins
    col = (p[0][0] + p[1][0], p[0][1] + p[1][1])  # human's margins
    p_e = row[0] * col[0] + row[1] * col[1]
    diagonal = sum(p[i][i] * (1 - (row[i] + col[i]) * (1 - kappa)) ** 2 for i in (0, 1))
    off = (1 - kappa) ** 2 * sum(
        p[i][j] * (col[i] + row[j]) ** 2 for i in (0, 1) for j in (0, 1) if i != j
    )
    variance = (diagonal + off - (kappa - p_e * (1 - kappa)) ** 2) / (n * (1 - p_e) ** 2)
    return math.sqrt(max(variance, 0.0))


def agreement(c: Confusion, *, z: float = _Z95) -> Agreement:
    """κ of ``c`` with its n and the interval κ ± z·SE, clipped to [−1, 1] (module doc)."""
    kappa = cohen_kappa(c)
    se = kappa_standard_error(c)
    if math.isnan(kappa):
        return Agreement(c.total, math.nan, math.nan, math.nan, c)
    return Agreement(c.total, kappa, max(-1.0, kappa - z * se), min(1.0, kappa + z * se), c)
