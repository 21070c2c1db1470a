"""The Prometheus names in helm/ragtrace/files/prometheus-metrics.yaml are also the names a
consumer's own /metrics exposes (the OpenTelemetry SDK's Prometheus reader, which the chart's
PodMonitor scrapes), so the alerts and dashboards read the same series on either path. (The
collector path is checked end to end in tests/e2e/test_dashboards_promql.py.)"""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client.parser import text_string_to_metric_families

from ragtrace_consumers.telemetry.prometheus import prometheus_exposition
from tests.every_metric import expected_prometheus_names, record_every_metric


def test_scraped_names_are_the_charts() -> None:
    exposition = prometheus_exposition()
    provider = MeterProvider(metric_readers=[exposition.reader])
    record_every_metric(provider)
    body, _ = exposition.render()
    provider.shutdown()
    stored = {
        s.name
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
        if s.name.startswith(("ragtrace_", "gen_ai_")) and not s.name.endswith("_created")
    }
    assert stored == expected_prometheus_names()
