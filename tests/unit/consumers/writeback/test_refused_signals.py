"""An endpoint refusing a signal: that signal off with one warning, the others (and transient
failures) untouched. Against a fake backend at the HTTP wire, through the SDK's real exporters."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.sdk.resources import Resource

from ragtrace_consumers.writeback.evaluation_logs import OtlpLogRequestExporter
from ragtrace_consumers.writeback.otlp_sink import make_meter_provider
from ragtrace_consumers.writeback.refused_signals import (
    REFUSING_STATUSES,
    RefusedSignals,
    signal_of_path,
)
from scripts.services.otlp_sink import OtlpSink

SETTINGS = {"logs": "serve --otlp-signals", "metrics": "serve --otlp-signals"}
RESOURCE = Resource.create({"service.name": "ragtrace-test"})


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("status", sorted(REFUSING_STATUSES))
def test_a_refusing_status_turns_the_signal_off_once(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    refusals = RefusedSignals("http://user:secret@backend:6006/", SETTINGS)
    assert refusals.refused("logs", status) and refusals.refused("logs", status)
    assert refusals.off == {"logs"} and not refusals.is_off("metrics")
    (line,) = _warnings(caplog)
    assert f"answers {status} to /v1/logs" in line and "serve --otlp-signals" in line
    assert "secret" not in line


@pytest.mark.parametrize("status", [None, 400, 408, 429, 500, 502, 503, 504])
def test_a_transient_or_other_failure_is_no_refusal(
    status: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    refusals = RefusedSignals("http://backend:4318", SETTINGS)
    assert not refusals.refused("metrics", status)
    assert refusals.off == frozenset() and _warnings(caplog) == []


def test_signal_of_path() -> None:
    assert [signal_of_path(p) for p in ("/v1/traces", "/v1/logs", "/v1/metrics", "/ui/")] == [
        "traces",
        "logs",
        "metrics",
        None,
    ]


@dataclass(frozen=True)
class _Result:
    success: bool
    status_code: int | None


class _Client:
    """The SDK client's surface: ``export`` answers the queued results in turn."""

    def __init__(self, *results: _Result) -> None:
        self.results = list(results)
        self.sent = 0
        self._logger = logging.getLogger("sdk")

    def export(self, data: bytes) -> _Result:
        self.sent += 1
        return self.results.pop(0)

    def shutdown(self) -> None:
        pass


class _Exporter:
    def __init__(self, client: _Client) -> None:
        self._client = client


def test_a_guarded_client_passes_transient_failures_through_and_stops_after_a_refusal() -> None:
    client = _Client(_Result(False, 503), _Result(True, 200), _Result(False, 405))
    exporter = RefusedSignals("http://backend:4318", SETTINGS).guard(_Exporter(client), "logs")
    guarded = exporter._client
    assert guarded.export(b"1").success is False  # 503: the caller retries, as before
    assert guarded.export(b"2").success is True
    assert guarded.export(b"3").success is True  # 405: handled, nothing more to do
    assert guarded.export(b"4").success is True and client.sent == 3


def test_log_records_refused_by_a_trace_backend_are_sent_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    with OtlpSink(refuse={"logs": 405}) as backend:
        refusals = RefusedSignals(backend.endpoint, SETTINGS)
        sdk = OTLPLogExporter(endpoint=backend.endpoint + "/v1/logs", timeout=5)
        exporter = OtlpLogRequestExporter(refusals.guard(sdk, "logs"), RESOURCE)
        assert [exporter.export([LogRecord()]) for _ in range(3)] == [True, True, True]
        assert backend.refused["logs"] == 1 and backend.requests["logs"] == 0
    assert len(_warnings(caplog)) == 1  # ours; the SDK's own error line is dropped


def test_metrics_refused_by_a_trace_backend_are_pushed_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with OtlpSink(refuse={"metrics": 405}) as backend:
        refusals = RefusedSignals(backend.endpoint, SETTINGS)
        provider = make_meter_provider(
            RESOURCE, endpoint=backend.endpoint, interval_s=0.05, timeout_s=5, refusals=refusals
        )
        counter = provider.get_meter("t").create_counter("c")
        for _ in range(4):
            counter.add(1)
            assert provider.force_flush(5_000)
            time.sleep(0.06)
        provider.shutdown()
        assert backend.refused["metrics"] == 1
    assert refusals.off == {"metrics"}
    (line,) = _warnings(caplog)
    assert "/v1/metrics" in line


def test_metrics_keep_going_to_an_endpoint_that_takes_them() -> None:
    with OtlpSink(refuse={"logs": 405}) as backend:
        refusals = RefusedSignals(backend.endpoint, SETTINGS)
        provider = make_meter_provider(
            RESOURCE, endpoint=backend.endpoint, interval_s=3600, timeout_s=5, refusals=refusals
        )
        counter = provider.get_meter("t").create_counter("c")
        for _ in range(2):
            counter.add(1)
            assert provider.force_flush(5_000)
        provider.shutdown()
        assert backend.requests["metrics"] >= 2 and refusals.off == frozenset()


@pytest.mark.parametrize("results_as", ["both", "events"])
def test_consumes_write_back_delivers_while_log_records_are_refused(
    results_as: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``consume``'s sink (``results_as`` both/events) at a backend refusing /v1/logs: every
    write succeeds (the spans still go with ``both``), the logs are tried once."""
    from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
    from tests.unit.consumers.scoring_helpers import grounded, trace_scores

    with OtlpSink(refuse={"logs": 405}) as backend:
        refusals = RefusedSignals(backend.endpoint, {"logs": "export.results_as"})
        sink = OtlpScoreSink.to_collector(
            backend.endpoint, RESOURCE, timeout_s=5, results_as=results_as, refusals=refusals
        )
        try:
            errors = sink.write_many([trace_scores(n, result=grounded(1, 1)) for n in (1, 2)])
            assert errors == [None, None]
            sink.write(trace_scores(3, result=grounded(1, 1)))
        finally:
            sink.shutdown()
        assert backend.refused["logs"] == 1
        assert backend.requests["traces"] == (2 if results_as == "both" else 0)
    (line,) = _warnings(caplog)
    assert "export.results_as" in line
