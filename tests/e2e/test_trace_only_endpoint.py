"""Delivery per signal at a real trace-only endpoint: the built collector with a traces pipeline
only (tests/e2e/trace_only_collector.yaml), which answers 404 to /v1/logs and /v1/metrics, and
passes what it takes on to an OTLP sink the test reads.

``serve --otlp-endpoint`` at it (every signal on, the default): every trace is scored (state and
web view), its evaluation span comes out of the collector, and the log has one line per refused
signal, no more. ``consume``'s write-back (its sink and metrics exporter, as ``build_service``
makes them) the same: spans delivered, logs and metrics turned off with one line each.
"""

from __future__ import annotations

import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource

from ragtrace import semconv
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.runtime.kafka_service import consume_refusals
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink, make_meter_provider
from scripts.services.collector import start_trace_only_collector
from scripts.services.otlp_sink import OtlpSink
from tests.e2e.conftest import _start, _started
from tests.unit.consumers.demo_client import QUESTIONS, run_app
from tests.unit.consumers.runtime.test_embedded import LABELS
from tests.unit.consumers.scoring_helpers import grounded, trace_scores

CONFIG = Path(__file__).with_name("trace_only_collector.yaml")


@pytest.fixture(scope="module")
def backend() -> Iterator[OtlpSink]:
    """What the collector delivers to (it takes every signal; only traces ever reach it)."""
    with OtlpSink() as sink:
        yield sink


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory, backend: OtlpSink) -> Iterator[str]:
    """The trace-only collector's OTLP/HTTP base URL."""
    proc, endpoint = _start(
        "The trace-only collector",
        lambda: start_trace_only_collector(
            tmp_path_factory.mktemp("collector"), backend.endpoint, CONFIG
        ),
    )
    _started.append(proc)
    yield endpoint
    proc.stop()


def _post(url: str) -> int:
    request = urllib.request.Request(
        url, data=b"", method="POST", headers={"Content-Type": "application/x-protobuf"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        return str(response.read().decode())


def _write_back_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and r.name.startswith(("ragtrace_consumers.writeback", "ragtrace_consumers.runtime"))
    ]


def _one_line_per_refused_signal(lines: list[str], setting: str) -> None:
    for path in ("/v1/logs", "/v1/metrics"):
        (line,) = [x for x in lines if path in x]
        assert "answers 404" in line and setting in line, line
    assert len(lines) == 2, lines  # nothing else: no "not delivered", no exporter errors


def test_the_collector_takes_traces_only(collector: str) -> None:
    assert _post(collector + "/v1/traces") == 200
    assert _post(collector + "/v1/logs") == 404
    assert _post(collector + "/v1/metrics") == 404


def test_serve_at_a_trace_only_collector_scores_every_trace_and_delivers_its_spans(
    tmp_path: Path, collector: str, backend: OtlpSink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = ConsumerConfig.defaults().replace(
        scoring={"k": 3},
        assembly={"quiet_s": 0.1},
        export={"metrics_interval_s": 0.05},
        serve={
            "port": 0,
            "state": tmp_path / "state.db",
            "labels": LABELS,
            "otlp_endpoint": collector,
            "otlp_signals": "all",
            "metrics": False,
        },
    )
    with EmbeddedEvaluator(config, judge=LexicalJudge()) as ev:
        asked = run_app(ev.endpoint)
        ids = {str(a["trace_id"]) for a in asked}
        rows = ev.wait_for_results(len(QUESTIONS), timeout_s=60)
        evals = backend.wait_for_spans(
            lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids,
            count=len(ids),
            timeout=30,
        )
        for _ in range(3):  # the app's own logs and metrics: forwarded until refused
            assert _post(ev.endpoint + "/v1/logs") == 200
            assert _post(ev.endpoint + "/v1/metrics") == 200
            time.sleep(0.1)  # several metric intervals
        web = ev.web_url
        assert web is not None
        listed = _get(web + "traces")
        pages = {t: _get(f"{web}traces/{t}") for t in ids}
    assert {r.trace_id for r in rows} == ids
    assert {s.trace_id for s in evals} == ids
    assert all(t[:12] in listed for t in ids), listed
    assert all(t in page for t, page in pages.items())
    _one_line_per_refused_signal(_write_back_lines(caplog), "--otlp-signals")


def test_consumes_write_back_at_a_trace_only_collector(
    collector: str, backend: OtlpSink, caplog: pytest.LogCaptureFixture
) -> None:
    """``consume``'s defaults (``results_as: both``, metrics pushed) at the same endpoint."""
    caplog.set_level(logging.INFO)
    export = ConsumerConfig.defaults().export
    resource = Resource.create({"service.name": "ragtrace-consumer-test"})
    refusals = consume_refusals(collector)
    sink = OtlpScoreSink.to_collector(
        collector, resource, timeout_s=5, results_as=export.results_as, refusals=refusals
    )
    provider = make_meter_provider(
        resource, endpoint=collector, interval_s=3600, timeout_s=5, refusals=refusals
    )
    counter = provider.get_meter("t").create_counter("ragtrace_test_total")
    batch = [trace_scores(n, result=grounded(1, 1)) for n in range(900, 906)]
    try:
        for scores in batch:
            assert sink.write_many([scores]) == [None]
            counter.add(1)
            assert provider.force_flush(5_000)
    finally:
        sink.shutdown()
        provider.shutdown()
    ids = {s.trace.trace_id for s in batch}
    evals = backend.wait_for_spans(
        lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids, count=len(ids)
    )
    assert {s.trace_id for s in evals} == ids
    assert refusals.off == {"logs", "metrics"}
    _one_line_per_refused_signal(_write_back_lines(caplog), "export.")
