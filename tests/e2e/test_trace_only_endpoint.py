"""Delivery per signal at a real trace-only endpoint: the built collector with a traces pipeline
only (tests/e2e/trace_only_collector.yaml), which answers 404 to /v1/logs and /v1/metrics, and
passes what it takes on to an OTLP sink the test reads.

``ragtrace serve --otlp-endpoint`` at it (every signal on, the default): every trace is scored
(printed, and in the web view), its evaluation span comes out of the collector, and its stderr
has one line per refused signal, no more. ``consume``'s write-back (its sink and its metrics
exporter) the same: spans delivered, logs and metrics turned off with one line each.
"""

from __future__ import annotations

import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource

from ragtrace import semconv
from ragtrace.evaluation.attribution import Thresholds
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.kafka_service import consume_refusals, consume_sink
from ragtrace_consumers.writeback.otlp_sink import make_meter_provider
from scripts.services.collector import start_trace_only_collector
from scripts.services.otlp_sink import OtlpSink
from tests.e2e.conftest import _start, _started
from tests.unit.consumers.commands.test_serve import Serve
from tests.unit.consumers.demo_client import QUESTIONS, run_app
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


_WRITE_BACK_TROUBLE = (
    r"/v1/(logs|metrics)|not delivered|[Ff]ailed to export|[Tt]ransient error|Traceback|Error"
)
"""A write-back line on serve's stderr: a refusal, a failed delivery or export, a retry."""


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


def test_ragtrace_serve_at_a_trace_only_collector_scores_every_trace_and_delivers_its_spans(
    tmp_path: Path, collector: str, backend: OtlpSink
) -> None:
    """A real ``ragtrace serve --otlp-endpoint`` process (every signal on, the default), its
    whole stderr read: one line per refused signal, nothing else from the write-back."""
    config = tmp_path / "consumer.yaml"
    config.write_text("export:\n  metrics_interval_s: 0.2\n")
    args = ("--json", "--otlp-endpoint", collector, "--config", str(config))
    serve = Serve(tmp_path / "state.sqlite3", json_args=args)
    try:
        endpoint = serve.err_line(r"receiving OTLP/HTTP on (http://127\.0\.0\.1:\d+)/v1/traces")[1]
        web = serve.err_line(r"(http://127\.0\.0\.1:\d+/ui/)")[1]
        asked = run_app(endpoint)
        ids = {str(a["trace_id"]) for a in asked}
        rows = serve.results(len(QUESTIONS))
        evals = backend.wait_for_spans(
            lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids,
            count=len(ids),
            timeout=30,
        )
        for _ in range(3):  # the app's own logs and metrics: forwarded until refused
            assert _post(endpoint + "/v1/logs") == 200
            assert _post(endpoint + "/v1/metrics") == 200
            time.sleep(0.3)  # a metric interval
        listed = _get(web + "traces")
        pages = {t: _get(f"{web}traces/{t}") for t in ids}
        assert serve.terminate() == 0
    finally:
        if serve.proc.poll() is None:
            serve.proc.kill()
            serve.proc.wait()
    assert {str(r["trace_id"]) for r in rows} == ids
    assert {s.trace_id for s in evals} == ids
    assert all(t[:12] in listed for t in ids), listed
    assert all(t in page for t, page in pages.items())
    serve.err_line(r"ragtrace serve: stopping")
    time.sleep(0.2)  # the rest of stderr, up to its end
    while not serve.err.empty():
        serve.err_lines.append(serve.err.get_nowait())
    lines = [x for x in serve.err_lines if re.search(_WRITE_BACK_TROUBLE, x)]
    _one_line_per_refused_signal(lines, "--otlp-signals")


def test_consumes_write_back_at_a_trace_only_collector(
    collector: str, backend: OtlpSink, caplog: pytest.LogCaptureFixture
) -> None:
    """``consume``'s defaults (``results_as: both``, metrics pushed) at the same endpoint: its
    own sink (:func:`consume_sink`) and its metrics exporter as ``build_service`` makes it."""
    caplog.set_level(logging.INFO)
    cfg = ConsumerConfig.defaults().replace(export={"otlp_endpoint": collector, "timeout_s": 5})
    resource = Resource.create({"service.name": "ragtrace-consumer-test"})
    refusals = consume_refusals(cfg.export.otlp_endpoint)
    sink = consume_sink(cfg, resource, Thresholds(), refusals)
    assert cfg.export.metrics_otlp
    provider = make_meter_provider(
        resource,
        endpoint=cfg.export.otlp_endpoint,
        interval_s=3600,
        timeout_s=cfg.export.timeout_s,
        refusals=refusals,
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
