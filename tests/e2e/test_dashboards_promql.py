"""The dashboards' and alerts' PromQL against the real Prometheus of the online end-to-end run.

* Every Prometheus panel query, annotation and variable query of helm/ragtrace/dashboards/*.json,
  with the template variables substituted as Grafana would ("All" = .*), succeeds and returns
  series once the online run's data has flowed, and the metrics it reads come from the real
  consumer (job "ragtrace-consumer"), not only from the probe below.
* Every alert rule's expression (the chart's rendered PrometheusRule) is valid PromQL over real
  metric names: it runs without error (returning series is not required).
* The Prometheus names in helm/ragtrace/files/prometheus-metrics.yaml are the ones Prometheus
  stores after the collector's translation: every section-G metric is emitted once through the
  real collector by a probe replica and the stored names are compared exactly.

The Tempo (TraceQL) panels of the quality dashboard are not covered: no Tempo runs here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from ragtrace import semconv
from scripts import dashboards
from scripts.services import CollectorEndpoints, paths
from scripts.services.prometheus import query, wait_for_series
from tests.e2e.online import evaluation_spans
from tests.every_metric import NAMES, expected_prometheus_names, record_every_metric

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "ragtrace"
CONSUMER_JOB = "ragtrace-consumer"
PROBE_JOB = "ragtrace-names-probe"
_METRIC = re.compile(r"\b(ragtrace_[a-zA-Z0-9_]+)\b")
_LABEL_VALUES = re.compile(r"^label_values\((?P<sel>.+),\s*(?P<label>[A-Za-z_]+)\)$")


def substitute(expr: str) -> str:
    """Grafana's substitution: builtin intervals, then every variable as its "All" value."""
    out = expr.replace("$__rate_interval", "1m").replace("$__range", "10m")
    out = out.replace("$__interval", "15s")
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", ".*", out)


def _dashboard_queries() -> list[tuple[str, str]]:
    """(test id, PromQL) of every Prometheus query of every dashboard."""
    out = []
    for path in sorted((CHART / "dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        panels = [p for row in board["panels"] for p in [row, *row.get("panels", [])]]
        for p in panels:
            if p.get("datasource", {}).get("type") != "prometheus":
                continue
            for t in p["targets"]:
                out.append((f"{path.stem}:{p['title']}:{t['refId']}", t["expr"]))
        for a in board.get("annotations", {}).get("list", []):
            if "expr" in a:
                out.append((f"{path.stem}:annotation:{a['name']}", a["expr"]))
        for v in board["templating"]["list"]:
            if v["type"] == "query":
                m = _LABEL_VALUES.match(v["query"])
                assert m, f"unsupported variable query {v['query']!r}"
                # label_values(sel, label) is the set of `label` values of the series of sel.
                out.append(
                    (f"{path.stem}:variable:{v['name']}", f"count by ({m['label']}) ({m['sel']})")
                )
    return out


DASHBOARD_QUERIES = _dashboard_queries()


def _alert_exprs() -> list[tuple[str, str]]:
    helm = paths.helm()
    proc = subprocess.run(
        [
            str(helm),
            "template",
            "rt",
            str(CHART),
            "--kube-version",
            "1.31.0",
            "--set",
            "prometheusRule.enabled=true",
            "--show-only",
            "templates/prometheusrule.yaml",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (rule,) = [d for d in yaml.safe_load_all(proc.stdout) if d]
    return [(r["alert"], r["expr"]) for g in rule["spec"]["groups"] for r in g["rules"]]


def test_every_dashboard_query_is_collected() -> None:
    # Every expression of the generator's query tables, plus the 5 variable queries.
    exprs = [e for k, e in DASHBOARD_QUERIES if ":variable:" not in k]
    assert sorted(exprs) == sorted([*dashboards.QUALITY.values(), *dashboards.OPERATIONS.values()])
    assert len(DASHBOARD_QUERIES) == len(dashboards.QUALITY) + len(dashboards.OPERATIONS) + 5
    assert len({k for k, _ in DASHBOARD_QUERIES}) == len(DASHBOARD_QUERIES)


@pytest.mark.parametrize(("key", "expr"), DASHBOARD_QUERIES, ids=[k for k, _ in DASHBOARD_QUERIES])
def test_dashboard_promql_returns_series(online_run: Any, key: str, expr: str) -> None:
    promql = substitute(expr)
    # SDK failures, receiver rejections and collector export failures have no series until
    # something fails (the online run has no failure). Those queries must run; the SDK's names
    # are checked by test_app_metric_names below.
    # Unrecognised spans likewise: the online app's spans are all read.
    may_be_empty = {
        *dashboards.APP_METRICS.values(),
        dashboards.COLLECTOR_METRICS["send_failed_spans"],
        NAMES[semconv.METRIC_SPANS_UNRECOGNISED],
    }
    read = set(re.findall(r"\b((?:ragtrace|otelcol)_[a-zA-Z0-9_]+)\b", promql))
    # The corrected not-grounded share needs the judge's calibration, which the online run's
    # consumer has none of (no stamp): the query must run; the gauge's name is checked by the
    # probe below and its values by tests/unit/consumers/runtime/test_wiring.py.
    # The audit panel likewise: audits are given in serve's web view, not in this run.
    uncalibrated = bool(
        read
        & {
            NAMES[semconv.METRIC_JUDGE_CALIBRATION],
            NAMES[semconv.METRIC_JUDGE_AUDIT],
            NAMES[semconv.METRIC_JUDGE_CALIBRATION_KAPPA],
        }
    )
    if (read and read <= may_be_empty) or uncalibrated:
        query(online_run.prometheus_url, promql)
        return
    # A rate needs two scrapes of a series inside its window: right after the online run a
    # series may have only one yet, so give Prometheus a few scrape intervals.
    try:
        wait_for_series(online_run.prometheus_url, promql, timeout=15)
    except TimeoutError:
        pytest.fail(f"{key}: no series for {promql!r}")
    for metric in set(_METRIC.findall(promql)):
        real = query(online_run.prometheus_url, f'count({metric}{{job="{CONSUMER_JOB}"}})')
        assert real, f"{key}: {metric} has no series from the consumer ({CONSUMER_JOB})"


@pytest.mark.parametrize(("alert", "expr"), _alert_exprs())
def test_alert_expression_runs(online_run: Any, alert: str, expr: str) -> None:
    query(online_run.prometheus_url, expr)  # raises PromQLError on a bad expression
    # The audit lives in serve's web view and the calibration in a stamp the online run's
    # consumer has none of: their names are checked by the probe (test_prometheus_names_...).
    not_in_online_run = {
        NAMES[semconv.METRIC_JUDGE_AUDIT],
        NAMES[semconv.METRIC_JUDGE_CALIBRATION_KAPPA],
    }
    for metric in set(_METRIC.findall(expr)) - not_in_online_run:
        assert query(online_run.prometheus_url, f'count({{__name__=~"{metric}(_count)?"}})'), (
            f"{alert}: {metric} is not a metric Prometheus has"
        )


def test_consumer_metrics_carry_the_prompt_hash_of_the_evaluation_spans(online_run: Any) -> None:
    """The judge_prompt label the annotation reads is the one the consumer really judged with:
    the first 12 hex characters of the prompt SHA-256 its evaluation spans carry."""
    spans = evaluation_spans(online_run.trace_backend, online_run.trace_ids())
    prompts = {
        str(s.attributes[semconv.EVAL_JUDGE_PROMPT_SHA256])
        for s in spans
        if semconv.EVAL_JUDGE_PROMPT_SHA256 in s.attributes
    }
    assert len(prompts) == 1, prompts
    expected = prompts.pop()[:12]
    # Scoped to the online run's replica: other e2e tests export probe series under the same job.
    job = f'job="{CONSUMER_JOB}",instance="{online_run.instance}"'
    for metric in (
        "ragtrace_groundedness_count",
        "ragtrace_judge_calls_total",
        "ragtrace_judge_errors_total",
    ):
        labels = query(online_run.prometheus_url, f"count by (judge_prompt) ({metric}{{{job}}})")
        assert [r["metric"].get("judge_prompt") for r in labels] == [expected], metric


def _emit_every_metric(endpoint: str) -> None:
    """One replica's worth of every section-G instrument, exported once through the collector."""
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=endpoint), export_interval_millis=3_600_000
    )
    provider = MeterProvider(
        resource=Resource.create({"service.name": PROBE_JOB}), metric_readers=[reader]
    )
    try:
        record_every_metric(provider)
        assert provider.force_flush(10_000)
    finally:
        provider.shutdown()


def test_prometheus_names_are_the_charts(
    collector: CollectorEndpoints, prometheus_url: str
) -> None:
    expected = expected_prometheus_names()
    _emit_every_metric(collector.eval_metrics_url)
    selector = f'{{job="{PROBE_JOB}", __name__=~"(ragtrace|gen_ai_client)_.+"}}'
    result = wait_for_series(
        prometheus_url, f"count by (__name__) ({selector})", timeout=30, min_series=len(expected)
    )
    stored = {r["metric"]["__name__"] for r in result}
    assert stored == expected
    # Histograms keep the score buckets 0, 0.1, ..., 1 (the alert and panel quantiles use them).
    les = {
        r["metric"]["le"]
        for r in query(prometheus_url, f'ragtrace_groundedness_bucket{{job="{PROBE_JOB}"}}')
    }
    assert les == {"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1", "+Inf"}


_APP_PROBE = """
import sys
from opentelemetry import metrics
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=sys.argv[1]),
                                       export_interval_millis=3_600_000)
provider = MeterProvider(resource=Resource.create({"service.name": sys.argv[2]}),
                         metric_readers=[reader])
metrics.set_meter_provider(provider)
from ragtrace import _health
_health.report("probe")
_health.dropped("probe", 2)
_health.oversized()
assert provider.force_flush(10_000)
provider.shutdown()
"""


def test_app_metric_names(collector: CollectorEndpoints, prometheus_url: str) -> None:
    """The SDK's own failure counters, emitted by the real SDK code (ragtrace._health) in an
    app process through the collector, are stored under the names the dashboard reads."""
    job = "ragtrace-app-probe"
    subprocess.run(
        [sys.executable, "-c", _APP_PROBE, collector.eval_metrics_url, job],
        check=True,
        timeout=60,
        cwd=ROOT,
    )
    for otel, selector in (
        ("ragtrace.sdk.errors", ', reason="probe"'),
        ("ragtrace.sdk.dropped", ', reason="probe"'),
        ("ragtrace.sdk.oversized", ""),
    ):
        name = dashboards.APP_METRICS[otel]
        wait_for_series(prometheus_url, f'{name}{{job="{job}"{selector}}}', timeout=30)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
