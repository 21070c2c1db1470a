"""Cohen's κ with its standard-error interval, against worked examples."""

from __future__ import annotations

import math

import pytest

from ragtrace.evaluation.agreement import agreement, kappa_standard_error
from ragtrace.evaluation.calibration import Confusion


def _kappa(p: list[float]) -> float:
    """κ of cell proportions (both, judge only, human only, neither), written out anew."""
    both, judge_only, human_only, neither = p
    judge_yes, human_yes = both + judge_only, both + human_only
    p_e = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    return (both + neither - p_e) / (1 - p_e)


def _delta_method_se(c: Confusion) -> float:
    """The delta-method standard error under multinomial sampling, by numerical gradient:
    an independent route to the Fleiss–Cohen–Everitt variance."""
    n = c.total
    p = [c.both_entailed / n, c.judge_only / n, c.human_only / n, c.neither / n]
    h = 1e-6
    grad = []
    for i in range(4):
        up, down = list(p), list(p)
        up[i] += h
        down[i] -= h
        grad.append((_kappa(up) - _kappa(down)) / (2 * h))
    cov = [[(p[i] if i == j else 0.0) - p[i] * p[j] for j in range(4)] for i in range(4)]
    var = sum(grad[i] * cov[i][j] * grad[j] for i in range(4) for j in range(4)) / n
    return math.sqrt(var)


def test_the_textbook_table_gives_kappa_0_4() -> None:
    # 50 units: both yes 20, judge yes/human no 5, judge no/human yes 10, both no 15:
    # p_o = 0.7, p_e = 0.5·0.6 + 0.5·0.4 = 0.5, κ = 0.2 / 0.5 = 0.4.
    a = agreement(Confusion(20, 5, 10, 15))
    assert a.n == 50
    assert a.kappa == pytest.approx(0.4)
    assert a.low < 0.4 < a.high


@pytest.mark.parametrize(
    "cells", [(20, 5, 10, 15), (88, 4, 6, 2), (40, 1, 1, 40), (7, 3, 2, 8), (300, 20, 35, 45)]
)
def test_the_standard_error_is_the_delta_method_one(cells: tuple[int, int, int, int]) -> None:
    c = Confusion(*cells)
    assert kappa_standard_error(c) == pytest.approx(_delta_method_se(c), rel=1e-5)


def test_the_interval_is_kappa_plus_minus_1_96_se_clipped() -> None:
    c = Confusion(20, 5, 10, 15)
    se = kappa_standard_error(c)
    a = agreement(c)
    assert (a.low, a.high) == pytest.approx((0.4 - 1.959964 * se, 0.4 + 1.959964 * se))
    perfect = agreement(Confusion(10, 0, 0, 10))
    assert (perfect.kappa, perfect.high) == (1.0, 1.0)


def test_more_units_at_the_same_rates_narrow_the_interval() -> None:
    small, large = agreement(Confusion(20, 5, 10, 15)), agreement(Confusion(200, 50, 100, 150))
    assert small.kappa == pytest.approx(large.kappa)
    assert (large.high - large.low) == pytest.approx((small.high - small.low) / math.sqrt(10))


def test_undefined_kappa_is_nan_with_its_n() -> None:
    for c in (Confusion(0, 0, 0, 0), Confusion(12, 0, 0, 0)):
        a = agreement(c)
        assert a.n == c.total and math.isnan(a.kappa) and math.isnan(a.low)
