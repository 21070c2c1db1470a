"""The soak's history checker and schedule (tests/soak): the checker must be able to fail."""

from __future__ import annotations

import pytest

from ragtrace import semconv
from scripts.services import ReceivedSpan
from tests.soak.history import History, check, p95, recovery_s
from tests.soak.schedule import FAULT_KINDS, Fault, fault_schedule


def _result(trace: str, span: str, metric: str = "groundedness", **extra: object) -> ReceivedSpan:
    attrs = {semconv.GEN_AI_EVALUATION_NAME: metric, **extra}
    return ReceivedSpan(
        trace_id=trace,
        span_id=span,
        parent_span_id="",
        name=f"{semconv.SPAN_EVALUATION}.{metric}",
        kind=1,
        attributes={},
        resource={},
        scope=semconv.EVALUATION_SCOPE,
        status_code=0,
        events=((semconv.GEN_AI_EVALUATION_RESULT, attrs),),
    )


def _summary(trace: str, span: str) -> ReceivedSpan:
    return ReceivedSpan(
        trace, span, "", semconv.SPAN_EVALUATION, 1, {}, {}, semconv.EVALUATION_SCOPE, 0
    )


def test_every_trace_scored_once_holds() -> None:
    verdict = check(
        History(
            {"t1": 0.0, "t2": 1.0},
            [(0.5, _result("t1", "a")), (0.6, _summary("t1", "s1")), (3.0, _result("t2", "b"))],
            scored_counted=2,
        )
    )
    assert verdict.violations == []
    assert (verdict.accepted, verdict.scored, verdict.resent) == (2, 2, 0)
    assert verdict.latency_s == {"t1": 0.5, "t2": 2.0}


def test_a_lost_trace_is_a_violation_unless_given_up_with_a_reason() -> None:
    history = History({"t1": 0.0, "t2": 0.0}, [(1.0, _result("t1", "a"))])
    verdict = check(history)
    assert verdict.lost == ("t2",)
    assert "1 accepted traces lost" in verdict.violations[0]
    given_up = check(History(history.accepted, history.writebacks, {"t2": "max_attempts"}))
    assert given_up.violations == [] and given_up.given_up == {"t2": "max_attempts"}


def test_a_result_under_two_span_ids_is_a_duplicate_an_identical_resend_is_not() -> None:
    resent = check(History({"t1": 0.0}, [(1.0, _result("t1", "a")), (2.0, _result("t1", "a"))]))
    assert resent.violations == [] and resent.resent == 1
    assert resent.latency_s == {"t1": 1.0}  # the first arrival
    twice = check(History({"t1": 0.0}, [(1.0, _result("t1", "a")), (2.0, _result("t1", "b"))]))
    assert twice.duplicated == {("t1", "groundedness"): frozenset({"a", "b"})}
    assert "written under several spans" in twice.violations[0]
    summaries = check(
        History({"t1": 0.0}, [(1.0, _summary("t1", "s")), (1.0, _summary("t1", "r"))])
    )
    assert ("t1", "summary") in summaries.duplicated


def test_a_double_count_in_the_metrics_is_a_violation() -> None:
    verdict = check(History({"t1": 0.0}, [(1.0, _result("t1", "a"))], scored_counted=2))
    assert verdict.violations == [
        "the metrics count 2 traces scored, but only 1 were: a double count"
    ]
    assert (
        check(History({"t1": 0.0}, [(1.0, _result("t1", "a"))], scored_counted=0)).violations == []
    )


def test_error_results_are_counted_by_reason() -> None:
    bad = _result(
        "t1",
        "a",
        **{"error.type": "judge_error", semconv.GEN_AI_EVALUATION_EXPLANATION: "too_large: x"},
    )
    assert check(History({"t1": 0.0}, [(1.0, bad)])).errors == {"groundedness: too_large": 1}


def test_recovery_is_the_start_of_the_first_window_after_which_all_are_under() -> None:
    accepted = {f"t{i}": float(i) for i in range(10)}
    latency = {f"t{i}": (5.0 if i in (1, 4) else 0.5) for i in range(10)}
    assert recovery_s(accepted, latency, after=0.0, threshold_s=1.0, window_s=2.0) == 6.0
    latency["t9"] = 9.0
    assert recovery_s(accepted, latency, after=0.0, threshold_s=1.0, window_s=2.0) is None
    assert recovery_s(accepted, latency, after=100.0, threshold_s=1.0) is None
    assert p95([1.0, 2.0, 3.0]) == 3.0 and p95(range(1, 101)) == 95


def test_the_schedule_is_a_function_of_the_seed_and_covers_every_kind() -> None:
    one = fault_schedule(5, 600.0, gap_s=(5.0, 10.0))
    assert one == fault_schedule(5, 600.0, gap_s=(5.0, 10.0))
    assert one != fault_schedule(6, 600.0, gap_s=(5.0, 10.0))
    assert {f.kind for f in one[: len(FAULT_KINDS)]} == set(FAULT_KINDS)
    assert all(f.end_s <= 600.0 for f in one)
    assert [f.at_s for f in one] == sorted(f.at_s for f in one)
    assert all(f.hold_s <= 3.0 for f in fault_schedule(5, 600.0, gap_s=(5, 10), max_hold_s=3.0))


def test_bad_schedule_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="Fault.kind"):
        Fault(0.0, "meteor", 1.0)
    with pytest.raises(ValueError, match="kinds"):
        fault_schedule(1, 60.0, kinds=("meteor",))
