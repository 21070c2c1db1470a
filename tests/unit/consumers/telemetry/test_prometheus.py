"""A replica's own GET /metrics: the ConsumerMetrics instruments through the real OpenTelemetry
Prometheus reader, served by the health server, parsed back with prometheus_client's parser."""

from __future__ import annotations

import urllib.request

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client.parser import text_string_to_metric_families

from ragtrace_consumers.telemetry.health import HealthServer, Heartbeat
from ragtrace_consumers.telemetry.lag import PartitionLag
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from ragtrace_consumers.telemetry.prometheus import prometheus_exposition


def _scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=")
        text = resp.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith("ragtrace_"):  # the reader labels the scope; set aside here
                assert s.labels.pop("otel_scope_name") == "ragtrace.evaluation"
            labels = {k: v for k, v in s.labels.items() if not k.startswith("otel_scope_")}
            out.setdefault(s.name, {})[tuple(sorted(labels.items()))] = s.value
    return out


def test_metrics_are_served_per_replica_with_per_partition_lag() -> None:
    exposition = prometheus_exposition()
    provider = MeterProvider(metric_readers=[exposition.reader])
    metrics = ConsumerMetrics(provider)
    held = [PartitionLag("otlp_spans", 0, 90, 40), PartitionLag("otlp_spans", 2, 7, 7)]
    metrics.set_lag_source(lambda: tuple(held))
    metrics.trace_seen("shop", "qa")
    metrics.groundedness(0.5, "shop", "qa", "claude", generator_model="gpt-4o")
    srv = HealthServer(
        "127.0.0.1", 0, heartbeat=Heartbeat(), liveness_timeout_s=30, metrics=exposition.render
    ).start()
    try:
        got = _scrape(srv.url)
        assert got["ragtrace_consumer_lag"] == {
            (("partition", "0"), ("topic", "otlp_spans")): 50.0,
            (("partition", "2"), ("topic", "otlp_spans")): 0.0,
        }
        assert got["ragtrace_consumer_partitions"] == {(): 2.0}
        assert got["ragtrace_traces_seen_total"] == {(("pipeline", "qa"), ("service", "shop")): 1}
        assert got["ragtrace_groundedness_count"] == {
            (
                ("judge_model", "claude"),
                ("model", "gpt-4o"),
                ("pipeline", "qa"),
                ("service", "shop"),
            ): 1
        }
        held.pop(0)  # partition 0 moved to another replica: this one stops reporting it
        assert list(_scrape(srv.url)["ragtrace_consumer_lag"]) == [
            (("partition", "2"), ("topic", "otlp_spans"))
        ]
    finally:
        srv.stop()
        provider.shutdown()


def test_no_metrics_path_without_an_exposition() -> None:
    import json
    import urllib.error

    srv = HealthServer("127.0.0.1", 0, heartbeat=Heartbeat(), liveness_timeout_s=30).start()
    try:
        try:
            urllib.request.urlopen(f"{srv.url}/metrics", timeout=5)
            raise AssertionError("expected 404")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
            assert json.load(exc)["paths"] == ["/livez", "/readyz"]
    finally:
        srv.stop()


def test_consume_serves_metrics_on_its_health_port_and_can_stop_pushing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``build_service``: with health on, GET /metrics answers with the replica's metrics;
    ``export.metrics_otlp=false`` (what the Helm chart sets) leaves out the OTLP push."""
    from ragtrace_consumers.config import ConsumerConfig
    from tests.unit.consumers.service_fakes import build_with_fakes

    health = {"enabled": True, "port": 0}
    for push in (True, False):
        cfg = ConsumerConfig.defaults().replace(health=health, export={"metrics_otlp": push})
        built = build_with_fakes(monkeypatch, cfg)
        try:
            assert (built.meter_options["endpoint"] is not None) is push
            server = built.service.health
            assert server is not None
            server.start()
            built.service.runner._metrics.trace_seen("shop", "qa")
            got = _scrape(server.url)
            assert got["ragtrace_traces_seen_total"] == {
                (("pipeline", "qa"), ("service", "shop")): 1
            }
        finally:
            if built.service.health is not None:
                built.service.health.stop()
            built.service.meter_provider.shutdown()
