"""The overview's rates with n and interval, the chosen period against the previous one (the
two-proportion test), and the not-grounded share corrected by the judge's calibration."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.calibration import CalibrationStamp, Confusion
from ragtrace.evaluation.judges.base import JudgeInfo
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.pages import render_overview
from ragtrace_consumers.webview.queries import Overview, OverviewFilter, overview
from ragtrace_consumers.webview.window_rates import NOT_GROUNDED, window_rates
from tests.unit.consumers.webview.rows import result

JUDGE = JudgeInfo("lexical", None, "c" * 64)
STAMP = CalibrationStamp(
    JUDGE, 0.9, 0.78, 300, "2026-12-01T10:00:00+00:00", Confusion(190, 20, 10, 80)
)
HOUR = 3600.0
NOW = 1_800_100_000.0


def _state(previous: tuple[int, int], current: tuple[int, int]) -> SqliteState:
    """(judged, not grounded) in the hour before the last one and in the last hour; every
    judged trace is labelled: fine, or generation failed."""
    state = SqliteState(":memory:")
    n = 0
    for (judged, failed), hour_ago in ((previous, 1), (current, 0)):
        for i in range(judged):
            n += 1
            bad = i < failed
            state.results.put(
                result(
                    n,
                    "generation_failed" if bad else "fine",
                    scored_at=NOW - hour_ago * HOUR - 1 - i % 3000,
                    groundedness=0.5 if bad else 1.0,
                )
            )
    return state


def _last_hour(state: SqliteState) -> Overview:
    return overview(state, OverviewFilter(range="1h"), now=NOW)


def test_a_real_rise_is_beyond_noise_and_every_rate_has_its_n() -> None:
    w = window_rates(_last_hour(_state((200, 15), (200, 30))), JUDGE, None)
    assert w is not None
    name, rate = w.rates[0]
    assert name == NOT_GROUNDED and (rate.k, rate.n) == (30, 200)
    changes = dict(w.changes)
    change = changes[NOT_GROUNDED]
    assert (change.previous.k, change.previous.n) == (15, 200)
    # 30/200 against 15/200: pooled 0.1125, z = 2.37, p = 0.018
    assert change.beyond_noise and change.p_value == pytest.approx(0.01762, abs=1e-4)
    assert changes["generation_failed"].beyond_noise
    assert (changes["fine"].current.k, changes["fine"].current.n) == (170, 200)
    page = render_overview(_last_hour(_state((200, 15), (200, 30))), "lexical", None, rates=w)
    assert "<strong>beyond noise</strong> (p = 0.018)" in page
    assert "15.0% [10.7%–20.6%] n=200" in page


def test_a_small_change_on_few_answers_is_within_noise() -> None:
    w = window_rates(_last_hour(_state((20, 2), (20, 3))), JUDGE, None)
    assert w is not None and not dict(w.changes)[NOT_GROUNDED].beyond_noise


def test_without_a_time_range_there_is_nothing_to_compare() -> None:
    w = window_rates(overview(_state((20, 2), (20, 3)), now=NOW), JUDGE, None)
    assert w is not None and w.changes == ()
    assert dict(w.rates)[NOT_GROUNDED].n == 40
    page = render_overview(overview(_state((20, 2), (20, 3)), now=NOW), "lexical", None, rates=w)
    assert "choose a time range to test each against the previous period" in page


def test_the_share_is_corrected_by_the_matching_stamp() -> None:
    o = _last_hour(_state((100, 10), (2000, 250)))
    w = window_rates(o, JUDGE, STAMP)
    assert w is not None and w.not_grounded.corrected is not None
    # 250 of 2000 judged: (0.125 + 0.95 - 1) / (0.8 + 0.95 - 1) = 0.1
    assert w.not_grounded.corrected.value == pytest.approx(0.1)
    page = render_overview(o, "lexical", None, rates=w)
    assert "Corrected: <strong>10.0% [4.6%–13.8%]</strong>" in page
    assert "Raw (the judge's verdicts): <strong>12.5% [11.1%–14.0%] n=2000</strong>" in page
    assert "sensitivity 80.0% [71.1%–86.7%] n=100" in page
    assert "within noise (p = " in page  # 12.5 % of 2,000 against 10 % of 100


def test_without_a_matching_stamp_the_page_says_uncorrected_and_how_to_calibrate() -> None:
    other = CalibrationStamp(
        JudgeInfo("lexical", None, "d" * 64), None, None, 10, "2026-01-01", Confusion(5, 1, 1, 3)
    )
    o = _last_hour(_state((100, 10), (100, 30)))
    page = render_overview(o, "lexical", None, rates=window_rates(o, JUDGE, other))
    assert "<strong>uncorrected</strong>" in page
    assert "ragtrace calibrate --labels HUMAN.jsonl" in page
    assert "Rates with their uncertainty" in page


def test_nothing_scored_gives_rates_of_nothing() -> None:
    o = overview(SqliteState(":memory:"), now=NOW)
    w = window_rates(o, JUDGE, STAMP)
    assert w is not None and all(rate.n == 0 for _, rate in w.rates)
    page = render_overview(o, "lexical", None, rates=w)
    assert "n/a (n=0)" in page and "Corrected: <strong>n/a (nothing judged)</strong>" in page
    assert w.not_grounded.corrected is not None and w.not_grounded.corrected.describe().startswith(
        "n/a"
    )
