"""Delivery per signal in ``serve``: results are recorded whatever the OTLP endpoint takes; a
trace backend refusing /v1/logs and /v1/metrics gets evaluation spans only, after one warning
per refused signal; a transient failure still parks the trace for a retry (it stays recorded)."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services.otlp_sink import OtlpSink
from tests.metric_points import histogram, points, values
from tests.unit.consumers.demo_client import QUESTIONS, run_app

from .test_embedded import LABELS


def _evaluator(state: Path, endpoint: str) -> EmbeddedEvaluator:
    return EmbeddedEvaluator(
        ConsumerConfig.defaults().replace(
            scoring={"k": 3},
            assembly={"quiet_s": 0.1},
            export={"metrics_interval_s": 0.05},
            serve={
                "port": 0,
                "state": state,
                "labels": LABELS,
                "otlp_endpoint": endpoint,
                "otlp_signals": "all",
                "metrics": False,
            },
        ),
        judge=LexicalJudge(),
    )


def _forward(endpoint: str, path: str) -> None:
    request = urllib.request.Request(
        endpoint + path,
        data=b"",
        method="POST",
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert urllib.request.urlopen(request, timeout=5).status == 200


@pytest.mark.parametrize("status", [404, 405, 415, 501])
def test_a_trace_only_backend_gets_every_evaluation_span_and_one_warning_per_signal(
    tmp_path: Path, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with OtlpSink(refuse={"logs": status, "metrics": status}) as backend:
        with _evaluator(tmp_path / "s.db", backend.endpoint) as ev:
            run_app(ev.endpoint)
            rows = ev.wait_for_results(len(QUESTIONS), timeout_s=30)
            evals = backend.wait_for_spans(
                lambda s: s.name == semconv.SPAN_EVALUATION, count=len(QUESTIONS)
            )
            for _ in range(3):  # the app's own logs and metrics: forwarded until refused
                _forward(ev.endpoint, "/v1/logs")
                _forward(ev.endpoint, "/v1/metrics")
                time.sleep(0.1)  # several metric intervals
        refused = dict(backend.refused)
    assert len(rows) == len(QUESTIONS)
    assert {s.trace_id for s in evals} == {r.trace_id for r in rows}
    assert refused["traces"] == 0 and 1 <= refused["logs"] <= 2 and 1 <= refused["metrics"] <= 2
    lines = [r.getMessage() for r in caplog.records]
    for path in ("/v1/logs", "/v1/metrics"):
        (line,) = [x for x in lines if path in x]
        assert f"answers {status}" in line and "--otlp-signals" in line
    assert not [x for x in lines if "not delivered" in x or "Failed to export" in x], lines


def test_results_are_recorded_while_the_endpoint_is_down_and_delivered_after(
    tmp_path: Path,
) -> None:
    """A closed port (connection refused) is transient: the trace is recorded at once, parked,
    and its evaluation span delivered once the backend is up."""
    from scripts.services.process import free_port

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    ev = EmbeddedEvaluator(
        ConsumerConfig.defaults().replace(
            scoring={"k": 3},
            assembly={"quiet_s": 0.1},
            judge={"park_backoff_s": 0.2, "park_backoff_max_s": 0.5},
            export={"metrics_interval_s": 3600, "timeout_s": 0.5},
            serve={
                "port": 0,
                "state": tmp_path / "s.db",
                "labels": LABELS,
                "otlp_endpoint": endpoint,
                "otlp_signals": "traces",
                "metrics": False,
            },
        ),
        judge=LexicalJudge(),
    )
    with ev:
        run_app(ev.endpoint, questions=QUESTIONS[:1])
        (row,) = ev.wait_for_results(1, timeout_s=30)
        with OtlpSink(port=port) as backend:
            (span,) = backend.wait_for_spans(
                lambda s: s.name == semconv.SPAN_EVALUATION, count=1, timeout=30
            )
    assert span.trace_id == row.trace_id


def _until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_metrics_are_counted_once_on_recording_through_an_outage(tmp_path: Path) -> None:
    """The endpoint answers 503 for a while (transient: the trace is parked and retried): the
    trace's metrics are counted when it is scored and recorded, not when it is delivered, and
    the retry that delivers it counts nothing again."""
    reader = InMemoryMetricReader()
    asked = QUESTIONS[:2]
    with OtlpSink(refuse={"traces": 503}) as backend:
        ev = EmbeddedEvaluator(
            ConsumerConfig.defaults().replace(
                scoring={"k": 3},
                assembly={"quiet_s": 0.1},
                judge={"park_backoff_s": 0.2, "park_backoff_max_s": 0.3},
                export={"metrics_interval_s": 3600, "timeout_s": 0.3},
                serve={
                    "port": 0,
                    "state": tmp_path / "s.db",
                    "labels": LABELS,
                    "otlp_endpoint": backend.endpoint,
                    "otlp_signals": "traces",
                    "metrics": False,
                },
            ),
            judge=LexicalJudge(),
            extra_metric_readers=[reader],
        )
        with ev:
            run_app(ev.endpoint, questions=asked)
            rows = ev.wait_for_results(len(asked), timeout_s=30)
            # Several deliveries refused: every trace was parked and retried at least once.
            _until(lambda: backend.refused["traces"] >= 2 * len(asked), 30, "no retries")
            during = _counted(reader)
            backend.set_refusal("traces", None)
            evals = backend.wait_for_spans(
                lambda s: s.name == semconv.SPAN_EVALUATION, count=len(asked), timeout=30
            )
            _until(lambda: ev.traces.pending() == 0, 30, "traces still pending")
            after = _counted(reader)
    assert len(rows) == len(asked) and {s.trace_id for s in evals} == {r.trace_id for r in rows}
    assert during == after == (len(asked), len(asked))


def _counted(reader: InMemoryMetricReader) -> tuple[float, int]:
    """Traces counted as scored, and recall observations recorded."""
    scored = sum(values(reader, semconv.METRIC_TRACES_SCORED).values())
    recall = sum(histogram(p).count for p in points(reader, semconv.METRIC_RECALL).values())
    return scored, recall
