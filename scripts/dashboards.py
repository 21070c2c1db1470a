"""Generate the Grafana dashboards of the Helm chart (helm/ragtrace/dashboards/*.json).

    python scripts/dashboards.py           # rewrite the JSON files
    python scripts/dashboards.py --check   # exit 1 if a committed file differs from the generator

Built with grafana-foundation-sdk (pinned in pyproject.toml) rather than hand-written JSON: its
typed builders produce the panel, target and variable shapes of the pinned Grafana schema, lay
out gridPos, and keep the JSON reproducible — there is no Grafana server here to catch a
malformed panel. Every PromQL expression lives in the two query tables below (QUALITY,
OPERATIONS), and every Prometheus metric name comes from helm/ragtrace/files/prometheus-metrics.yaml,
which the chart's alert rules read too: a name is fixed in one place.

The "Worst traces" tables query a Tempo datasource (TraceQL on the evaluation span attributes):
Prometheus holds no per-trace data and the collector's exporter carries no exemplars.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml
from grafana_foundation_sdk.builders import barchart, common, prometheus, table, tempo, timeseries
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as common_model
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models import prometheus as prom_model

__all__ = [
    "APP_METRICS",
    "CHART_DIR",
    "COLLECTOR_METRICS",
    "DASHBOARD_DIR",
    "JUDGE_CHANGE",
    "OPERATIONS",
    "QUALITY",
    "build_all",
    "main",
    "metric_names",
]

CHART_DIR = Path(__file__).resolve().parents[1] / "helm" / "ragtrace"
DASHBOARD_DIR = CHART_DIR / "dashboards"
METRIC_NAMES_FILE = CHART_DIR / "files" / "prometheus-metrics.yaml"


def metric_names() -> dict[str, str]:
    """OTel instrument name -> Prometheus name (histograms: the base of _bucket/_sum/_count)."""
    data = yaml.safe_load(METRIC_NAMES_FILE.read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in data.items()}


_M = metric_names()


def alert_thresholds() -> dict[str, float]:
    """The chart's default alert thresholds (values.yaml prometheusRule.*.threshold) drawn as
    threshold lines on the panels the alerts watch."""
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text(encoding="utf-8"))
    rules = values["prometheusRule"]
    return {
        name: float(rules[name]["threshold"])
        for name in ("groundedness", "recall", "judgeErrors", "consumerLag")
    }


_T = alert_thresholds()

# Metrics the applications' ragtrace SDK and the embedded receiver (`ragtrace serve`) emit, not
# the consumers: Prometheus names after the collector's translation (checked end to end in
# tests/e2e/test_dashboards_promql.py). They exist only once something failed.
APP_METRICS: dict[str, str] = {
    "ragtrace.sdk.errors": "ragtrace_sdk_errors_total",
    "ragtrace.sdk.dropped": "ragtrace_sdk_dropped_total",
    "ragtrace.sdk.oversized": "ragtrace_sdk_oversized_total",
    "ragtrace.receiver.rejected": "ragtrace_receiver_rejected_total",
}
# The collector's own telemetry (job otelcol / the ServiceMonitor's self-metrics endpoint).
COLLECTOR_METRICS: dict[str, str] = {
    "refused_spans": "otelcol_receiver_refused_spans",
    "send_failed_spans": "otelcol_exporter_send_failed_spans",
}
# Label filters driven by the dashboard variables.
_SP = 'service=~"$service", pipeline=~"$pipeline"'
_S = 'service=~"$service"'
_J = 'judge_model=~"$judge_model"'
_RI = "$__rate_interval"


def _mean(metric: str, by: str = "service, pipeline", flt: str = _SP) -> str:
    m = _M[metric]
    return (
        f"sum by ({by}) (rate({m}_sum{{{flt}}}[{_RI}]))\n/\n"
        f"sum by ({by}) (rate({m}_count{{{flt}}}[{_RI}]))"
    )


def _quantile(q: float, metric: str, by: str, flt: str) -> str:
    return f"histogram_quantile({q}, sum by (le, {by}) (rate({_M[metric]}_bucket{{{flt}}}[{_RI}])))"


# --- every PromQL expression of the "RAG quality" dashboard ----------------------------------
QUALITY: dict[str, str] = {
    "groundedness_mean": _mean("ragtrace.groundedness"),
    "groundedness_p10": _quantile(0.1, "ragtrace.groundedness", "service, pipeline", _SP),
    "groundedness_p25": _quantile(0.25, "ragtrace.groundedness", "service, pipeline", _SP),
    "judged_rate": f"sum by (service, pipeline) (rate({_M['ragtrace.groundedness']}_count{{{_SP}}}[{_RI}]))",
    # How many judgements / labelled traces each plotted mean rests on (same window).
    "groundedness_n": f"sum by (service, pipeline) (increase({_M['ragtrace.groundedness']}_count{{{_SP}}}[{_RI}]))",
    "recall_n": f"sum by (service, pipeline) (increase({_M['ragtrace.recall']}_count{{{_SP}}}[{_RI}]))",
    "recall_mean": _mean("ragtrace.recall"),
    "hit_rate_mean": _mean("ragtrace.hit_rate"),
    "mrr": _mean("ragtrace.reciprocal_rank"),
    "labelled_rate": f"sum by (service, pipeline) (rate({_M['ragtrace.recall']}_count{{{_SP}}}[{_RI}]))",
    # Slices by the app's generator model and the retriever's data source (bounded labels).
    "groundedness_by_model": _mean("ragtrace.groundedness", by="model"),
    "groundedness_by_model_n": (
        f"sum by (model) (increase({_M['ragtrace.groundedness']}_count{{{_SP}}}[{_RI}]))"
    ),
    "recall_by_data_source": _mean("ragtrace.recall", by="data_source"),
    "recall_by_data_source_n": (
        f"sum by (data_source) (increase({_M['ragtrace.recall']}_count{{{_SP}}}[{_RI}]))"
    ),
    # Answer metrics: judged traces whose labelled question has a reference answer.
    "answer_relevancy_mean": _mean("ragtrace.answer_relevancy"),
    "answer_correctness_mean": _mean("ragtrace.answer_correctness"),
    "answer_correctness_n": (
        f"sum by (service, pipeline) "
        f"(increase({_M['ragtrace.answer_correctness']}_count{{{_SP}}}[{_RI}]))"
    ),
    "cells_range": (
        f"sum by (cell) (increase({_M['ragtrace.attribution']}"
        f'{{{_SP}, cell=~"fine|retrieval_failed|generation_failed|both_failed"}}[$__range]))'
    ),
    "cells_share": (
        f"sum by (cell) (rate({_M['ragtrace.attribution']}{{{_SP}}}[{_RI}]))\n"
        f"/ ignoring (cell) group_left\n"
        f"sum(rate({_M['ragtrace.attribution']}{{{_SP}}}[{_RI}]))"
    ),
    # A judge model or judge prompt (judge_prompt: 12 hex characters of the prompt's SHA-256)
    # scoring that was not scoring 30 minutes earlier (annotation).
    "judge_changed": (
        f"count by (judge_model, judge_prompt) "
        f"({_M['ragtrace.groundedness']}_count)\nunless\n"
        f"count by (judge_model, judge_prompt) "
        f"({_M['ragtrace.groundedness']}_count offset 30m)"
    ),
}

# --- every PromQL expression of the "ragtrace operations" dashboard ---------------------------
OPERATIONS: dict[str, str] = {
    "seen": f"sum(rate({_M['ragtrace.traces.seen']}{{{_SP}}}[{_RI}]))",
    "sampled": f"sum(rate({_M['ragtrace.traces.sampled']}{{{_SP}}}[{_RI}]))",
    "scored": f"sum(rate({_M['ragtrace.traces.scored']}{{{_SP}}}[{_RI}]))",
    "skipped_by_reason": f"sum by (reason) (rate({_M['ragtrace.traces.skipped']}{{{_SP}}}[{_RI}]))",
    "parked_by_reason": f"sum by (reason) (rate({_M['ragtrace.traces.parked']}[{_RI}]))",
    "judge_calls": f"sum by (judge_model, outcome) (rate({_M['ragtrace.judge.calls']}{{{_J}}}[{_RI}]))",
    "judge_errors": f"sum by (judge_model, reason) (rate({_M['ragtrace.judge.errors']}{{{_J}}}[{_RI}]))",
    "judge_latency_p50": _quantile(0.5, "ragtrace.judge.latency", "judge_model", _J),
    "judge_latency_p95": _quantile(0.95, "ragtrace.judge.latency", "judge_model", _J),
    "tokens_per_hour": (
        f"sum by (judge_model, token_type) "
        f"(rate({_M['ragtrace.judge.tokens']}{{{_J}}}[{_RI}])) * 3600"
    ),
    "cost_per_hour": f"sum by (judge_model) (rate({_M['ragtrace.judge.cost']}{{{_J}}}[{_RI}])) * 3600",
    # The judge's calls in the OTel GenAI client conventions (gen_ai.* attributes as labels).
    "genai_tokens_p95": (
        f"histogram_quantile(0.95, sum by (le, gen_ai_request_model, "
        f"gen_ai_token_type) (rate({_M['gen_ai.client.token.usage']}_bucket"
        f'{{gen_ai_request_model=~"$judge_model"}}[{_RI}])))'
    ),
    "genai_duration_p95": (
        f"histogram_quantile(0.95, sum by (le, gen_ai_request_model) "
        f"(rate({_M['gen_ai.client.operation.duration']}_bucket"
        f'{{gen_ai_request_model=~"$judge_model"}}[{_RI}])))'
    ),
    "calls_per_minute": (
        f'sum(rate({_M["ragtrace.judge.calls"]}{{{_J}, outcome=~"ok|error"}}[{_RI}])) * 60'
    ),
    "tokens_per_minute": f"sum(rate({_M['ragtrace.judge.tokens']}{{{_J}}}[{_RI}])) * 60",
    "budget_exhausted": f"sum by (service) (rate({_M['ragtrace.judge.budget.exhausted']}{{{_S}}}[{_RI}]))",
    "injection_suspected": (
        f"sum by (service) (increase({_M['ragtrace.judge.injection_suspected']}{{{_S}}}[$__range]))"
    ),
    "dlq_by_reason": f"sum by (reason) (rate({_M['ragtrace.dlq.messages']}[{_RI}])) * 60",
    # One series per partition, from the replica holding it (committed vs end offset).
    "consumer_lag": f"sum by (topic, partition) ({_M['ragtrace.consumer.lag']})",
    "consumer_lag_total": f"sum({_M['ragtrace.consumer.lag']})",
    "partitions_by_replica": f"sum by (instance) ({_M['ragtrace.consumer.partitions']})",
    "collector_refused": (f"sum by (receiver) (rate({COLLECTOR_METRICS['refused_spans']}[{_RI}]))"),
    "collector_send_failed": (
        f"sum by (exporter) (rate({COLLECTOR_METRICS['send_failed_spans']}[{_RI}]))"
    ),
    "sdk_errors": f"sum by (job, reason) (rate({APP_METRICS['ragtrace.sdk.errors']}[{_RI}]))",
    "sdk_dropped": f"sum by (job, reason) (rate({APP_METRICS['ragtrace.sdk.dropped']}[{_RI}]))",
    "sdk_oversized": f"sum by (job) (rate({APP_METRICS['ragtrace.sdk.oversized']}[{_RI}]))",
    "receiver_rejected": (
        f"sum by (reason) (rate({APP_METRICS['ragtrace.receiver.rejected']}[{_RI}]))"
    ),
    # Spans no reader recognised, by instrumentation scope (an instrumentor ragtrace cannot read).
    "spans_unrecognised": (f"sum by (scope) (rate({_M['ragtrace.spans.unrecognised']}[{_RI}]))"),
    "dependency_errors": (
        f"sum by (dependency) (rate({_M['ragtrace.consumer.dependency.errors']}[{_RI}])) * 60"
    ),
    # The collector's own counter exists only after a first failure: "or ... * 0" keeps a 0 line.
    "collector_dropped": (
        "sum by (exporter) (rate(otelcol_exporter_send_failed_spans"
        f'{{exporter=~"kafka.*"}}[{_RI}])) * 60 or sum by (exporter) '
        f'(rate(otelcol_exporter_sent_spans{{exporter=~"kafka.*"}}[{_RI}])) * 0'
    ),
    "scoring_delay_p50": _quantile(0.5, "ragtrace.scoring.delay", "service", _S),
    "scoring_delay_p95": _quantile(0.95, "ragtrace.scoring.delay", "service", _S),
}

# --- every TraceQL expression (Tempo panels; not run by the PromQL end-to-end test) ------------
TRACEQL: dict[str, str] = {
    "worst_groundedness": "{ span.ragtrace.eval.groundedness < $groundedness_below }",
    "worst_recall": "{ span.ragtrace.eval.recall < $recall_below }",
}

JUDGE_CHANGE = "Judge model or prompt change"
# Options of Grafana's Prometheus annotations that the SDK's AnnotationQuery builder does not
# expose, by annotation name: what the marker says and which labels become its tags.
_ANNOTATION_OPTIONS: dict[str, dict[str, str]] = {
    JUDGE_CHANGE: {
        "titleFormat": "Judge {{judge_model}}, prompt {{judge_prompt}}",
        "tagKeys": "judge_model,judge_prompt",
    },
}

_PROM = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
_TEMPO = model.DataSourceRef(type_val="tempo", uid="${tempo}")


def _q(expr: str, legend: str, ref: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref)


class _Ids:
    """Sequential panel IDs: unique within a dashboard and stable across regenerations."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


def _ts(
    ids: _Ids,
    title: str,
    desc: str,
    targets: list[prometheus.Dataquery],
    unit: str,
    w: int = 12,
    unit_range: bool = False,
    stacked: bool = False,
) -> timeseries.Panel:
    p = (
        timeseries.Panel()
        .id(ids())
        .title(title)
        .description(desc)
        .datasource(_PROM)
        .unit(unit)
        .height(8)
        .span(w)
    )
    for t in targets:
        p = p.with_target(t)
    if unit_range:
        p = p.min(0).max(1)
    if stacked:
        p = p.stacking(common.StackingConfig().mode(common_model.StackingMode.NORMAL)).fill_opacity(
            60
        )
    return p


def _threshold_line(p: timeseries.Panel, value: float, color: str = "red") -> timeseries.Panel:
    """A dashed line at ``value`` (the alert's threshold)."""
    steps = [model.Threshold(value=None, color="green"), model.Threshold(value=value, color=color)]
    return p.thresholds(
        dash.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(steps)
    ).thresholds_style(
        common.GraphThresholdsStyleConfig().mode(common_model.GraphThresholdsStyleMode.DASHED)
    )


def _sample_count_axis(p: timeseries.Panel, ref: str) -> timeseries.Panel:
    """Query ``ref`` (a sample count) as bars on a right-hand axis in plain numbers."""
    return p.override_by_query(
        ref,
        [
            model.DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
            model.DynamicConfigValue(id_val="custom.drawStyle", value="bars"),
            model.DynamicConfigValue(id_val="custom.fillOpacity", value=30),
            model.DynamicConfigValue(id_val="unit", value="short"),
            model.DynamicConfigValue(id_val="min", value=0),
            model.DynamicConfigValue(id_val="max", value=None),
        ],
    )


def _common_vars(d: dash.Dashboard, *, pipelines: bool = True) -> dash.Dashboard:
    seen = _M["ragtrace.traces.seen"]
    d = d.with_variable(
        dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
    )
    d = d.with_variable(
        dash.QueryVariable("service")
        .label("Service")
        .datasource(_PROM)
        .query(f"label_values({seen}, service)")
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
    )
    if pipelines:
        d = d.with_variable(
            dash.QueryVariable("pipeline")
            .label("Pipeline")
            .datasource(_PROM)
            .query(f'label_values({seen}{{service=~"$service"}}, pipeline)')
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        )
    return d


def quality() -> dash.Dashboard:
    ids = _Ids()
    q = QUALITY
    d = (
        dash.Dashboard("RAG quality")
        .uid("ragtrace-rag-quality")
        .description("Groundedness and retrieval quality of live RAG traffic, scored by ragtrace.")
        .tags(["ragtrace", "rag"])
        .time("now-6h", "now")
        .refresh("1m")
    )
    d = _common_vars(d)
    d = d.with_variable(dash.DatasourceVariable("tempo").label("Traces").type("tempo"))
    d = d.with_variable(
        dash.TextBoxVariable("groundedness_below")
        .label("Worst traces: groundedness below")
        .default_value("0.5")
    )
    d = d.with_variable(
        dash.TextBoxVariable("recall_below")
        .label("Worst traces: recall below")
        .default_value("0.5")
    )
    d = d.annotation(
        dash.AnnotationQuery()
        .name(JUDGE_CHANGE)
        .datasource(_PROM)
        .enable(True)
        .icon_color("purple")
        .expr(q["judge_changed"])
    )
    d = d.with_row(dash.Row("Groundedness (judged traffic)").id(ids()))
    d = d.with_panel(
        _sample_count_axis(
            _threshold_line(
                _ts(
                    ids,
                    "Mean groundedness",
                    "Mean groundedness of judged traces: share of an answer's claims entailed by its context "
                    "with verified evidence. Bars (right axis): judgements each point rests on. Dashed: "
                    "the alert threshold.",
                    [
                        _q(q["groundedness_mean"], "{{service}} / {{pipeline}}", "A"),
                        _q(q["groundedness_n"], "n {{service}} / {{pipeline}}", "B"),
                    ],
                    "percentunit",
                    unit_range=True,
                ),
                _T["groundedness"],
            ),
            "B",
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Low groundedness percentiles",
            "10th and 25th percentiles (from 0.1-wide buckets): how bad the worst "
            "answers are, which the mean hides.",
            [
                _q(q["groundedness_p10"], "p10 {{service}} / {{pipeline}}", "A"),
                _q(q["groundedness_p25"], "p25 {{service}} / {{pipeline}}", "B"),
            ],
            "percentunit",
            unit_range=True,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Judged traces",
            "Traces scored for groundedness per second.",
            [_q(q["judged_rate"], "{{service}} / {{pipeline}}")],
            "reqps",
            w=24,
        )
    )
    d = d.with_row(dash.Row("Retrieval (labelled traffic)").id(ids()))
    d = d.with_panel(
        _sample_count_axis(
            _threshold_line(
                _ts(
                    ids,
                    "Mean recall@k",
                    "Mean recall@k over traces matching a labelled question: share of the gold chunks found "
                    "in the top k. Bars (right axis): labelled traces each point rests on. Dashed: the alert "
                    "threshold.",
                    [
                        _q(q["recall_mean"], "{{service}} / {{pipeline}}", "A"),
                        _q(q["recall_n"], "n {{service}} / {{pipeline}}", "B"),
                    ],
                    "percentunit",
                    w=8,
                    unit_range=True,
                ),
                _T["recall"],
            ),
            "B",
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Hit rate@k",
            "Share of labelled traces with at least one gold chunk in the top k "
            "(Success@k; always >= mean recall).",
            [_q(q["hit_rate_mean"], "{{service}} / {{pipeline}}")],
            "percentunit",
            w=8,
            unit_range=True,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Mean reciprocal rank",
            "Mean of 1 / rank of the first gold chunk (0 when none is retrieved).",
            [_q(q["mrr"], "{{service}} / {{pipeline}}")],
            "percentunit",
            w=8,
            unit_range=True,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Labelled traces",
            "Traces matching a labelled question, per second.",
            [_q(q["labelled_rate"], "{{service}} / {{pipeline}}")],
            "reqps",
            w=24,
        )
    )
    d = d.with_row(dash.Row("By generator model and retriever").id(ids()))
    d = d.with_panel(
        _sample_count_axis(
            _threshold_line(
                _ts(
                    ids,
                    "Groundedness by generator model",
                    "Mean groundedness per application model (the generation span's model; at most 20 "
                    "models per consumer replica, the rest as 'other'). Bars: judgements behind each point.",
                    [
                        _q(q["groundedness_by_model"], "{{model}}", "A"),
                        _q(q["groundedness_by_model_n"], "n {{model}}", "B"),
                    ],
                    "percentunit",
                    unit_range=True,
                ),
                _T["groundedness"],
            ),
            "B",
        )
    )
    d = d.with_panel(
        _sample_count_axis(
            _threshold_line(
                _ts(
                    ids,
                    "Recall by retriever",
                    "Mean recall@k per data source (the retrieval span's gen_ai.data_source.id; at most 20 "
                    "per replica, the rest as 'other'). Bars: labelled traces behind each point.",
                    [
                        _q(q["recall_by_data_source"], "{{data_source}}", "A"),
                        _q(q["recall_by_data_source_n"], "n {{data_source}}", "B"),
                    ],
                    "percentunit",
                    unit_range=True,
                ),
                _T["recall"],
            ),
            "B",
        )
    )
    d = d.with_row(dash.Row("Answer relevancy and correctness (reference answers)").id(ids()))
    d = d.with_panel(
        _sample_count_axis(
            _ts(
                ids,
                "Answer relevancy and correctness",
                "Mean answer relevancy (does the answer address the question?) and correctness "
                "(against the labelled reference answer) of judged traces whose labelled "
                "question has a reference_answer. Bars: traces behind each point.",
                [
                    _q(q["answer_relevancy_mean"], "relevancy {{service}} / {{pipeline}}", "A"),
                    _q(
                        q["answer_correctness_mean"],
                        "correctness {{service}} / {{pipeline}}",
                        "C",
                    ),
                    _q(q["answer_correctness_n"], "n {{service}} / {{pipeline}}", "B"),
                ],
                "percentunit",
                w=24,
                unit_range=True,
            ),
            "B",
        )
    )
    d = d.with_row(dash.Row("Attribution: retrieval or generation?").id(ids()))
    d = d.with_panel(
        barchart.Panel()
        .id(ids())
        .title("Four cells over the time range")
        .description(
            "Labelled and judged traces by cell: fine, retrieval_failed (recall below "
            "threshold), generation_failed (groundedness below threshold), both_failed."
        )
        .datasource(_PROM)
        .height(8)
        .span(8)
        .unit("short")
        .with_target(
            _q(q["cells_range"], "{{cell}}").instant().format(prom_model.PromQueryFormat.TABLE)
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Cell shares",
            "Share of scored traces in each attribution cell (unlabelled and unjudged included).",
            [_q(q["cells_share"], "{{cell}}")],
            "percentunit",
            w=16,
            unit_range=True,
            stacked=True,
        )
    )
    d = d.with_row(dash.Row("Worst traces (trace backend)").id(ids()))
    for key, title in (
        ("worst_groundedness", "Least grounded answers"),
        ("worst_recall", "Lowest recall on labelled questions"),
    ):
        d = d.with_panel(
            table.Panel()
            .id(ids())
            .title(title)
            .description(
                "TraceQL search of the evaluation spans ragtrace writes back; click a "
                "trace ID to open the trace view. Needs a Tempo datasource ($tempo)."
            )
            .datasource(_TEMPO)
            .height(10)
            .span(12)
            .with_target(
                tempo.TempoQuery().ref_id("A").query_type("traceql").query(TRACEQL[key]).limit(20)
            )
        )
    return d


def operations() -> dash.Dashboard:
    ids = _Ids()
    q = OPERATIONS
    d = (
        dash.Dashboard("ragtrace operations")
        .uid("ragtrace-operations")
        .description(
            "Health of the ragtrace consumers: trace flow, judge calls, cost, budget, "
            "dead letters, lag and scoring delay."
        )
        .tags(["ragtrace", "operations"])
        .time("now-6h", "now")
        .refresh("1m")
    )
    d = _common_vars(d)
    d = d.with_variable(
        dash.QueryVariable("judge_model")
        .label("Judge model")
        .datasource(_PROM)
        .query(f"label_values({_M['ragtrace.judge.calls']}, judge_model)")
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
    )
    d = d.with_row(dash.Row("Trace flow").id(ids()))
    d = d.with_panel(
        _ts(
            ids,
            "Traces seen, sampled, scored",
            "Assembled RAG traces, those selected for scoring, and those whose "
            "scores were written back, per second.",
            [
                _q(q["seen"], "seen", "A"),
                _q(q["sampled"], "sampled", "B"),
                _q(q["scored"], "scored", "C"),
            ],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Skipped by reason",
            "Traces (or one of their scores) not scored, per second, by reason.",
            [_q(q["skipped_by_reason"], "{{reason}}")],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Parked by reason",
            "Traces set aside for a later retry (judge unavailable or failing, "
            "write-back failed), per second.",
            [_q(q["parked_by_reason"], "{{reason}}")],
            "reqps",
            w=8,
        )
    )
    d = d.with_row(dash.Row("Judge").id(ids()))
    d = d.with_panel(
        _ts(
            ids,
            "Judge calls by outcome",
            "ok, error, cached, unavailable; per second.",
            [_q(q["judge_calls"], "{{judge_model}} {{outcome}}")],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Judge errors by reason",
            "Failed judge calls per second.",
            [_q(q["judge_errors"], "{{judge_model}} {{reason}}")],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Judge latency",
            "Median and 95th percentile of a judge call.",
            [
                _q(q["judge_latency_p50"], "p50 {{judge_model}}", "A"),
                _q(q["judge_latency_p95"], "p95 {{judge_model}}", "B"),
            ],
            "s",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Tokens per hour",
            "Judge tokens billed per hour, by type.",
            [_q(q["tokens_per_hour"], "{{judge_model}} {{token_type}}")],
            "short",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Cost per hour",
            "Judge cost in USD per hour (list prices).",
            [_q(q["cost_per_hour"], "{{judge_model}}")],
            "currencyUSD",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Judge calls (GenAI conventions)",
            "95th percentile of tokens per judge call by type, and of a call's "
            "duration, from gen_ai.client.token.usage and "
            "gen_ai.client.operation.duration.",
            [
                _q(
                    q["genai_tokens_p95"],
                    "p95 tokens {{gen_ai_request_model}} {{gen_ai_token_type}}",
                    "A",
                ),
                _q(q["genai_duration_p95"], "p95 s {{gen_ai_request_model}}", "B"),
            ],
            "short",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Budget use",
            "Judge calls and tokens per minute (compare with judge.calls_per_minute "
            "and judge.tokens_per_minute), and traces left unjudged because the "
            "budget was spent (per second).",
            [
                _q(q["calls_per_minute"], "calls/min", "A"),
                _q(q["tokens_per_minute"], "tokens/min", "B"),
                _q(q["budget_exhausted"], "exhausted {{service}}", "C"),
            ],
            "short",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Suspected prompt injections",
            "Judged traces whose retrieved context held a passage addressed to an "
            "evaluator or model (never used as evidence), over the time range; "
            "the traces carry ragtrace.eval.injection_suspected=true.",
            [_q(q["injection_suspected"], "{{service}}")],
            "short",
            w=8,
        )
    )
    d = d.with_row(dash.Row("Pipeline health").id(ids()))
    d = d.with_panel(
        _ts(
            ids,
            "Dead-lettered messages",
            "Span messages sent to the dead-letter topic per minute, by reason.",
            [_q(q["dlq_by_reason"], "{{reason}}")],
            "short",
            w=8,
        )
    )
    d = d.with_panel(
        _threshold_line(
            _ts(
                ids,
                "Consumer lag by partition",
                "Records of each partition the consumer group has not committed (end offset - committed "
                "offset), reported once by the replica holding the partition, and their total. Dashed: "
                "the alert threshold on the total.",
                [
                    _q(q["consumer_lag"], "{{topic}}[{{partition}}]", "A"),
                    _q(q["consumer_lag_total"], "total", "B"),
                ],
                "short",
                w=8,
            ),
            _T["consumerLag"],
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Partitions per replica",
            "Partitions each live consumer replica holds (0: idle, e.g. more "
            "replicas than partitions). No series at all: no consumer is alive.",
            [_q(q["partitions_by_replica"], "{{instance}}")],
            "short",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Dependency errors",
            "Failed calls to Redis or Kafka per minute (each retried with backoff; "
            "/readyz names the dependency down meanwhile).",
            [_q(q["dependency_errors"], "{{dependency}}")],
            "short",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Spans the collector failed to export",
            "Spans per minute the collector dropped on the way to Kafka (e.g. a "
            "trace over the exporter's max_message_bytes): never scored. Alert "
            "RagtraceCollectorDroppingSpans.",
            [_q(q["collector_dropped"], "{{exporter}}")],
            "short",
            w=8,
        )
    )
    d = d.with_row(dash.Row("Ingest health").id(ids()))
    d = d.with_panel(
        _ts(
            ids,
            "Collector: refused spans and export failures",
            "Spans the collector's receivers refused (memory limiter) and spans its "
            "exporters failed to send (Kafka, the trace backend), per second.",
            [
                _q(q["collector_refused"], "refused {{receiver}}", "A"),
                _q(q["collector_send_failed"], "send failed {{exporter}}", "B"),
            ],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "SDK errors and dropped spans",
            "Failures inside the applications' ragtrace SDK, spans it dropped "
            "before export, and traces too large for one collector Kafka message, "
            "per second, by application (job) and reason. Empty while nothing has "
            "failed.",
            [
                _q(q["sdk_errors"], "errors {{job}} {{reason}}", "A"),
                _q(q["sdk_dropped"], "dropped {{job}} {{reason}}", "B"),
                _q(q["sdk_oversized"], "oversized traces {{job}}", "C"),
            ],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Unrecognised spans by instrumentation scope",
            "Spans no reader recognised as retrieval or generation, per second, by "
            "instrumentation scope: an instrumentor whose spans ragtrace cannot read (see "
            "docs/runbooks.md#unrecognised-spans). Empty while every span is read.",
            [_q(q["spans_unrecognised"], "{{scope}}")],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Receiver rejections (ragtrace serve)",
            "OTLP requests the embedded evaluator's receiver refused, per second, by "
            "reason. Empty while nothing was refused.",
            [_q(q["receiver_rejected"], "{{reason}}")],
            "reqps",
            w=8,
        )
    )
    d = d.with_panel(
        _ts(
            ids,
            "Scoring delay",
            "Time from a trace's last span to its score being written back.",
            [
                _q(q["scoring_delay_p50"], "p50 {{service}}", "A"),
                _q(q["scoring_delay_p95"], "p95 {{service}}", "B"),
            ],
            "s",
            w=8,
        )
    )
    return d


def _render(d: dash.Dashboard) -> str:
    data = json.loads(json.dumps(d.build(), cls=JSONEncoder))
    for annotation in data.get("annotations", {}).get("list", []):
        annotation.update(_ANNOTATION_OPTIONS.get(annotation["name"], {}))
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def build_all() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {
        "rag-quality.json": _render(quality()),
        "ragtrace-operations.json": _render(operations()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="fail if a committed dashboard differs from the generator's output",
    )
    args = parser.parse_args(argv)
    stale = []
    for name, text in build_all().items():
        path = DASHBOARD_DIR / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print(
            "stale dashboards (run python scripts/dashboards.py): " + ", ".join(stale),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
