"""Every consumer instrument (the metrics contract, section G) recorded once, and the Prometheus
names the charts expect of them: the dashboards' name checks scrape the first and compare it with
the second, in the unit tests (the Prometheus reader) and end to end (collector to Prometheus)."""

from __future__ import annotations

from pathlib import Path

import yaml
from opentelemetry.sdk.metrics import MeterProvider

from ragtrace.evaluation.calibration import Confusion
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers.unrecognised import UnrecognisedSpans
from ragtrace_consumers.telemetry.lag import PartitionLag
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["HISTOGRAMS", "NAMES", "expected_prometheus_names", "record_every_metric"]

_CHART = Path(__file__).resolve().parents[1] / "helm" / "ragtrace"
NAMES: dict[str, str] = yaml.safe_load((_CHART / "files" / "prometheus-metrics.yaml").read_text())
"""OpenTelemetry instrument name: the Prometheus name the chart's dashboards and alerts use."""
HISTOGRAMS = frozenset(
    {
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
)
"""The instruments that are histograms (three series each in Prometheus)."""


def expected_prometheus_names() -> set[str]:
    """Every series name Prometheus stores for :data:`NAMES` (histograms as bucket, sum, count)."""
    expected: set[str] = set()
    for otel, prom in NAMES.items():
        histogram = {f"{prom}_bucket", f"{prom}_sum", f"{prom}_count"}
        expected |= histogram if otel in HISTOGRAMS else {prom}
    return expected


def record_every_metric(provider: MeterProvider) -> None:
    """One replica's worth of every instrument, on ``provider``."""
    m = ConsumerMetrics(provider, judge_prompt_sha256="ab" * 32)
    m.set_lag_source(lambda: (PartitionLag("otlp_spans", 0, 9, 2),))
    m.trace_seen("shop", "qa")
    m.trace_sampled("shop", "qa")
    m.trace_scored("shop", "qa", "fine")
    m.trace_skipped("shop", "qa", "not_sampled")
    m.groundedness(0.75, "shop", "qa", "probe-model", failed=True)
    m.set_calibration(Confusion(9, 1, 2, 8), "probe-model")
    m.set_audit(lambda: Confusion(5, 1, 1, 3), "probe-model")
    m.retrieval(0.5, 1.0, 0.5, "shop", "qa", k=5)
    m.answer_metric("answer_relevancy", 1.0, "shop", "qa", "probe-model")
    m.answer_metric("answer_correctness", 0.5, "shop", "qa", "probe-model")
    # The unrecognised-span counter shares the consumers' meter provider (pipeline.py).
    unreadable = SpanRecord("1" * 32, "2" * 16, None, "db.query", "some.scope", "shop", 0, 1, {})
    UnrecognisedSpans(provider).observe([unreadable])
    m.judge_call("probe-model", "ok")
    m.judge_error("probe-model", "timeout")
    m.judge_usage("probe-model", 100, 20, 5, 1, 0.001, 1.5)
    m.budget_exhausted("shop")
    m.parked("judge_unavailable")
    m.redacted("email", 2, "shop")
    m.dependency_error("redis")
    m.dead_lettered("decode_error")
    m.scoring_delay(2.0, "shop")
