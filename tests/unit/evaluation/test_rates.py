"""Rates with their n and interval: hand-computed values, edge cases, seeded determinism."""

from __future__ import annotations

import math

import pytest

from ragtrace.evaluation.rates import (
    BOOTSTRAP,
    BOOTSTRAP_MAX_N,
    NORMAL,
    WILSON,
    Rate,
    bootstrap_intervals,
    bootstrap_mean,
    bootstrap_means,
    compare_rates,
    mean_rates,
    rogan_gladen,
    wilson,
)


def test_wilson_matches_the_hand_computed_interval() -> None:
    # p = 0.8, n = 5: the published Wilson interval 0.3755-0.9638
    r = wilson(4, 5)
    assert (r.k, r.n, r.method) == (4, 5, WILSON)
    assert r.value == pytest.approx(0.8)
    assert r.low == pytest.approx(0.3755, abs=1e-4)
    assert r.high == pytest.approx(0.9638, abs=1e-4)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (1, 1), (0, 1)])
def test_wilson_stays_inside_zero_one_and_holds_the_estimate(k: int, n: int) -> None:
    r = wilson(k, n)
    assert 0.0 <= r.low <= r.value <= r.high <= 1.0
    assert r.high - r.low > 0  # never a zero-width interval at 0 or n


def test_wilson_narrows_as_n_grows() -> None:
    widths = [wilson(n // 10, n).high - wilson(n // 10, n).low for n in (20, 200, 2000)]
    assert widths[0] > widths[1] > widths[2]


def test_nothing_rated_is_nan_with_n_zero() -> None:
    r = wilson(0, 0)
    assert r.n == 0 and math.isnan(r.value) and math.isnan(r.low) and math.isnan(r.high)
    assert r.to_dict() == {
        "value": None,
        "k": 0,
        "n": 0,
        "low": None,
        "high": None,
        "method": WILSON,
    }
    assert r.describe() == "n/a n=0"


def test_rate_refuses_k_above_n() -> None:
    with pytest.raises(ValueError, match="0 <= k <= n"):
        Rate(3, 2, 0.0, 1.0, WILSON)


def test_describe_names_value_interval_and_n() -> None:
    assert wilson(25, 200).describe() == "12.5 % [8.6, 17.8] n=200"


def test_bootstrap_mean_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 0.5, 1.0, 1.0, 0.25, 0.75, 1.0, 0.0] * 5
    a = bootstrap_mean(values, seed=3)
    assert a == bootstrap_mean(values, seed=3)
    assert a != bootstrap_mean(values, seed=4)
    assert a.method == BOOTSTRAP and a.n == 40 and a.value == pytest.approx(4.5 / 8)
    assert 0.0 <= a.low < a.value < a.high <= 1.0


def test_bootstrap_of_a_constant_is_that_constant() -> None:
    r = bootstrap_mean([0.5] * 7)
    assert (r.low, r.high) == (0.5, 0.5)


def test_bootstrap_means_resample_every_column_alike() -> None:
    column = [0.1, 0.9, 0.4, 0.7, 0.2]
    twice = bootstrap_means([column, column], seed=1)
    assert twice[0] == twice[1] == bootstrap_mean(column, seed=1)
    assert all(math.isnan(x) for pair in bootstrap_intervals([[], []], 10, 0.95, 0) for x in pair)


def test_bootstrap_columns_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="one value per question"):
        bootstrap_means([[0.1], [0.1, 0.2]])


def test_rogan_gladen_point_value_is_the_textbook_formula() -> None:
    # raw 0.125, Se 0.8, Sp 0.95: (0.125 + 0.95 - 1) / (0.8 + 0.95 - 1) = 0.1
    c = rogan_gladen(wilson(250, 2000), wilson(80, 100), wilson(190, 200))
    assert c.value == pytest.approx(0.1)
    assert c.low < 0.1 < c.high
    # the calibration's uncertainty widens the interval beyond the raw rate's alone
    assert c.high - c.low > wilson(250, 2000).high - wilson(250, 2000).low


def test_rogan_gladen_widens_with_a_smaller_calibration_set() -> None:
    raw = wilson(250, 2000)
    small = rogan_gladen(raw, wilson(8, 10), wilson(19, 20))
    large = rogan_gladen(raw, wilson(800, 1000), wilson(1900, 2000))
    assert small.high - small.low > large.high - large.low


def test_a_perfect_judge_leaves_the_rate_alone() -> None:
    raw = wilson(30, 300)
    c = rogan_gladen(raw, wilson(100, 100), wilson(100, 100))
    assert c.value == pytest.approx(0.1)


def test_a_judge_no_better_than_chance_cannot_correct() -> None:
    c = rogan_gladen(wilson(50, 100), wilson(5, 10), wilson(5, 10))
    assert math.isnan(c.value) and math.isnan(c.low)
    assert c.describe().startswith("n/a")
    assert c.to_dict()["value"] is None


def test_a_corrected_value_outside_zero_one_is_clipped() -> None:
    # raw below the false-positive rate: the estimate would be negative
    c = rogan_gladen(wilson(1, 1000), wilson(80, 100), wilson(180, 200))
    assert c.value == 0.0 and c.low == 0.0


def test_compare_rates_hand_computed() -> None:
    # 30/200 vs 15/200: pooled 0.1125, se = sqrt(.1125*.8875*(2/200)) = 0.031598, z = 2.3735
    change = compare_rates(wilson(30, 200), wilson(15, 200))
    assert change.difference == pytest.approx(0.075)
    assert change.p_value == pytest.approx(0.01762, abs=1e-4)
    assert change.beyond_noise
    assert change.to_dict()["beyond_noise"] is True


def test_a_small_change_on_few_answers_is_noise() -> None:
    change = compare_rates(wilson(3, 20), wilson(2, 20))
    assert not change.beyond_noise and change.p_value > 0.05


def test_an_empty_or_constant_window_is_undecided() -> None:
    assert math.isnan(compare_rates(wilson(3, 20), wilson(0, 0)).p_value)
    constant = compare_rates(wilson(0, 20), wilson(0, 30))
    assert math.isnan(constant.p_value) and not constant.beyond_noise


def test_mean_rates_bootstrap_small_samples_and_approximate_large_ones() -> None:
    small = [[0.0, 1.0] * 10]
    assert mean_rates(small) == bootstrap_means(small)
    values = [0.0, 1.0] * (BOOTSTRAP_MAX_N // 2)
    (large,) = mean_rates([values])
    # mean 0.5, s = sqrt(0.25 · n/(n-1)), half-width 1.96·s/√n
    half = 1.959964 * math.sqrt(0.25 * 500 / 499) / math.sqrt(500)
    assert large.method == NORMAL and large.n == 500
    assert (large.low, large.high) == pytest.approx((0.5 - half, 0.5 + half))
    # the bootstrap it stands in for agrees to a few thousandths
    (boot,) = bootstrap_means([values])
    assert boot.low == pytest.approx(large.low, abs=0.01)
    assert boot.high == pytest.approx(large.high, abs=0.01)
