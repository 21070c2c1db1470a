"""The Prometheus names in helm/ragtrace/files/prometheus-metrics.yaml are also the names a
consumer's own /metrics exposes (the OpenTelemetry SDK's Prometheus reader, which the chart's
PodMonitor scrapes), so the alerts and dashboards read the same series on either path. (The
collector path is checked end to end in tests/e2e/test_dashboards_promql.py.)"""

from __future__ import annotations

from pathlib import Path

import yaml
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client.parser import text_string_to_metric_families

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers.unrecognised import UnrecognisedSpans
from ragtrace_consumers.telemetry.lag import PartitionLag
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from ragtrace_consumers.telemetry.prometheus import prometheus_exposition

ROOT = Path(__file__).resolve().parents[3]
NAMES: dict[str, str] = yaml.safe_load(
    (ROOT / "helm" / "ragtrace" / "files" / "prometheus-metrics.yaml").read_text()
)
HISTOGRAMS = {
    "ragtrace.groundedness",
    "ragtrace.recall",
    "ragtrace.answer_relevancy",
    "ragtrace.answer_correctness",
    "ragtrace.hit_rate",
    "ragtrace.reciprocal_rank",
    "ragtrace.judge.latency",
    "ragtrace.scoring.delay",
    "gen_ai.client.token.usage",
    "gen_ai.client.operation.duration",
}


def _unreadable_span() -> SpanRecord:
    return SpanRecord("1" * 32, "2" * 16, None, "db.query", "some.scope", "shop", 0, 1, {"k": 1})


def test_scraped_names_are_the_charts() -> None:
    exposition = prometheus_exposition()
    provider = MeterProvider(metric_readers=[exposition.reader])
    m = ConsumerMetrics(provider, judge_prompt_sha256="ab" * 32)
    m.set_lag_source(lambda: (PartitionLag("otlp_spans", 0, 9, 2),))
    m.trace_seen("shop", "qa")
    m.trace_sampled("shop", "qa")
    m.trace_scored("shop", "qa", "fine")
    m.trace_skipped("shop", "qa", "not_sampled")
    m.groundedness(0.75, "shop", "qa", "probe-model")
    m.retrieval(0.5, 1.0, 0.5, "shop", "qa")
    m.answer_metric("answer_relevancy", 1.0, "shop", "qa", "probe-model")
    m.answer_metric("answer_correctness", 0.5, "shop", "qa", "probe-model")
    # The unrecognised-span counter shares the consumers' meter provider (pipeline.py).
    UnrecognisedSpans(provider).observe([_unreadable_span()])
    m.judge_call("probe-model", "ok")
    m.judge_error("probe-model", "timeout")
    m.judge_usage("probe-model", 100, 20, 5, 1, 0.001, 1.5)
    m.budget_exhausted("shop")
    m.parked("judge_unavailable")
    m.redacted("email", 2, "shop")
    m.dependency_error("redis")
    m.dead_lettered("decode_error")
    m.scoring_delay(2.0, "shop")
    body, _ = exposition.render()
    provider.shutdown()
    stored = {
        s.name
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
        if s.name.startswith(("ragtrace_", "gen_ai_")) and not s.name.endswith("_created")
    }
    expected = set()
    for otel, prom in NAMES.items():
        expected |= (
            {f"{prom}_bucket", f"{prom}_sum", f"{prom}_count"} if otel in HISTOGRAMS else {prom}
        )
    assert stored == expected
