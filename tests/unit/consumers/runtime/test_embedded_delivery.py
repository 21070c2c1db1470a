"""Delivery per signal in ``serve``: results are recorded whatever the OTLP endpoint takes; a
trace backend refusing /v1/logs and /v1/metrics gets evaluation spans only, after one warning
per refused signal; a transient failure still parks the trace for a retry (it stays recorded)."""

from __future__ import annotations

import logging
import time
import urllib.request
from pathlib import Path

import pytest

from ragtrace import semconv
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services.otlp_sink import OtlpSink
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
