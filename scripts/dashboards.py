"""Generate the Grafana dashboards of the Helm chart (helm/ragtrace/dashboards/*.json).

    python scripts/dashboards.py           # rewrite the JSON files
    python scripts/dashboards.py --check   # exit 1 if a committed file differs from the generator

Each dashboard is one table (``QUALITY_BOARD``, ``OPERATIONS_BOARD``): its sections and panels,
each panel with its queries, unit and threshold; scripts/grafana_tables.py builds the JSON with
grafana-foundation-sdk (pinned in pyproject.toml) — there is no Grafana server here to catch a
malformed panel. Every Prometheus metric name comes from
helm/ragtrace/files/prometheus-metrics.yaml, which the chart's alert rules read too: a name is
fixed in one place.

The "Worst traces" tables query a Tempo datasource (TraceQL on the evaluation span attributes):
Prometheus holds no per-trace data and the collector's exporter carries no exemplars.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as a file: make `scripts` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.grafana_tables import Annotation, Board, Panel, Query, Row, Variable, render
from scripts.grafana_tables import promql as _promql
from scripts.grafana_tables import traceql as _traceql

__all__ = [
    "APP_METRICS",
    "CHART_DIR",
    "COLLECTOR_METRICS",
    "DASHBOARD_DIR",
    "JUDGE_CHANGE",
    "OPERATIONS",
    "OPERATIONS_BOARD",
    "QUALITY",
    "QUALITY_BOARD",
    "TRACEQL",
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


def _alert_values() -> dict[str, Any]:
    """values.yaml's ``prometheusRule`` section: the chart's default alerts."""
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text(encoding="utf-8"))
    return dict(values["prometheusRule"])


def alert_thresholds() -> dict[str, float]:
    """The chart's default alert thresholds (values.yaml prometheusRule.*.threshold) drawn as
    threshold lines on the panels the alerts watch, and ``objective``: the groundedness
    objective its burn rates are measured against."""
    rules = _alert_values()
    thresholds = {
        name: float(rules[name]["threshold"]) for name in ("recall", "judgeErrors", "consumerLag")
    }
    return {**thresholds, "objective": float(rules["groundedness"]["objective"])}


def _burn_rules_text() -> str:
    """The chart's default burn-rate rules (prometheusRule.groundedness.burnRates) in words, e.g.
    "pages above 14.4 (1h and 5m) and 6 (6h and 30m) and opens a ticket above 1.5 (1d and 2h)":
    critical rules page, the others open a ticket."""
    burn_rates = _alert_values()["groundedness"]["burnRates"]
    parts = []
    for severity, verb in (("critical", "pages above"), ("warning", "opens a ticket above")):
        rules = [r for r in burn_rates if r["severity"] == severity]
        if rules:
            parts.append(
                verb
                + " "
                + " and ".join(
                    f"{r['factor']:g} ({r['longWindow']} and {r['shortWindow']})" for r in rules
                )
            )
    return " and ".join(parts)


PROM_NAME = metric_names()
ALERT_THRESHOLD = alert_thresholds()

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

# --- PromQL ----------------------------------------------------------------------------------
# Label filters driven by the dashboard variables.
SERVICE_AND_PIPELINE = 'service=~"$service", pipeline=~"$pipeline"'
SERVICE = 'service=~"$service"'
JUDGE_MODEL = 'judge_model=~"$judge_model"'
GENAI_MODEL = 'gen_ai_request_model=~"$judge_model"'
KAFKA_EXPORTER = 'exporter=~"kafka.*"'
RATE_WINDOW = "$__rate_interval"
WHOLE_RANGE = "$__range"
PER_PIPELINE = "service, pipeline"
# Recall and hit rate at different cut-offs are different measures: never averaged together.
PER_CUTOFF = "service, pipeline, k"


def total(inner: str, by: str = "") -> str:
    """``sum by (by) (inner)``; ``sum(inner)`` without labels."""
    return f"sum by ({by}) ({inner})" if by else f"sum({inner})"


def _over_window(
    function: str, series: str, by: str, where: str, window: str = RATE_WINDOW, times: int = 1
) -> str:
    selector = f"{series}{{{where}}}" if where else series
    scaled = f" * {times}" if times != 1 else ""
    return total(f"{function}({selector}[{window}])", by) + scaled


def rate(series: str, by: str = "", where: str = "", times: int = 1) -> str:
    """The summed per-second rate of a counter series, times ``times`` (60: per minute)."""
    return _over_window("rate", series, by, where, times=times)


def increase(series: str, by: str = "", where: str = "", window: str = RATE_WINDOW) -> str:
    """The summed increase of a counter series over ``window``."""
    return _over_window("increase", series, by, where, window)


def mean(histogram: str, by: str = PER_PIPELINE) -> str:
    """Mean of a histogram instrument's observations: rate of its sum over rate of its count."""
    metric = PROM_NAME[histogram]
    return (
        f"{rate(f'{metric}_sum', by, SERVICE_AND_PIPELINE)}\n/\n"
        f"{rate(f'{metric}_count', by, SERVICE_AND_PIPELINE)}"
    )


def quantile(q: float, histogram: str, by: str, where: str) -> str:
    """The ``q`` quantile of a histogram instrument, from its buckets."""
    buckets = f"{PROM_NAME[histogram]}_bucket"
    return f"histogram_quantile({q}, {rate(buckets, f'le, {by}', where)})"


def count_of(histogram: str) -> str:
    """The Prometheus count series of a histogram instrument."""
    return f"{PROM_NAME[histogram]}_count"


def legend(by: str, separator: str = " / ") -> str:
    """``{{a}} / {{b}}`` for the labels ``a, b``."""
    return separator.join("{{" + label + "}}" for label in by.split(", "))


# --- "RAG quality" ---------------------------------------------------------------------------
GROUNDEDNESS = "ragtrace.groundedness"
RECALL = "ragtrace.recall"
ATTRIBUTION = PROM_NAME["ragtrace.attribution"]
CELLS = 'cell=~"fine|retrieval_failed|generation_failed|both_failed"'
JUDGE_CHANGE = "Judge model or prompt change"
WORST_TRACES = (
    "TraceQL search of the evaluation spans ragtrace writes back; click a "
    "trace ID to open the trace view. Needs a Tempo datasource ($tempo)."
)


FAILED = PROM_NAME["ragtrace.groundedness.failed"]
CALIBRATION = PROM_NAME["ragtrace.judge.calibration"]
PER_JUDGE = "judge_model, judge_prompt"


def _judge_rate(human: str, verdict: str) -> str:
    """Sensitivity (``unsupported``) or specificity (``supported``) of each judge from its
    calibration counts (every replica exports the same stamp: ``max`` takes one copy)."""
    one_copy = f'max by ({PER_JUDGE}, human, verdict) ({CALIBRATION}{{human="{human}"}})'
    agreed = f'max by ({PER_JUDGE}, human, verdict) ({CALIBRATION}{{human="{human}", verdict="{verdict}"}})'
    return f"({total(agreed, PER_JUDGE)} / {total(one_copy, PER_JUDGE)})"


def _not_grounded_panel() -> Panel:
    """Judged answers below the groundedness threshold, raw and corrected (Rogan-Gladen) by the
    judge's calibration; bars: the judged answers behind each point."""
    judged = increase(count_of(GROUNDEDNESS), PER_JUDGE, SERVICE_AND_PIPELINE)
    raw = f"{increase(FAILED, PER_JUDGE, SERVICE_AND_PIPELINE)}\n/\n{judged}"
    se, sp = _judge_rate("unsupported", "unsupported"), _judge_rate("supported", "supported")
    corrected = f"clamp(\n(({raw}) + {sp} - 1)\n/\n({se} + {sp} - 1), 0, 1)"
    return Panel(
        "Not grounded: raw and corrected for the judge's error",
        "Share of judged answers scored below the groundedness threshold, per judge and prompt: "
        "raw (the judge's verdicts) and corrected for the judge's sensitivity and specificity "
        "measured by `ragtrace calibrate` (Rogan-Gladen; shown only when the replicas export a "
        "calibration of that judge and prompt). Bars: judged answers behind each point; the "
        "interval of a share is in docs/statistics.md.",
        (
            Query(raw, f"raw {legend(PER_JUDGE)}", "A"),
            Query(corrected, f"corrected {legend(PER_JUDGE)}", "C"),
            Query(judged, f"n {legend(PER_JUDGE)}", "B"),
        ),
        unit="percentunit",
        width=24,
        fraction=True,
        counts="B",
    )


def _burn_panel() -> Panel:
    """How fast each service/pipeline spends its groundedness error budget: the not-grounded
    share over 1h and 6h divided by the budget (1 - objective), as RagtraceGroundednessBudgetBurn
    computes it; 1 is spending it exactly at the objective's pace."""
    objective = ALERT_THRESHOLD["objective"]

    def burn(window: str) -> str:
        failed = increase(FAILED, PER_PIPELINE, SERVICE_AND_PIPELINE, window)
        judged = increase(count_of(GROUNDEDNESS), PER_PIPELINE, SERVICE_AND_PIPELINE, window)
        return f"({failed}\n/\n{judged})\n/ (1 - {objective:g})"

    return Panel(
        "Groundedness error budget burn rate",
        f"Not-grounded share of judged answers divided by the error budget (objective {objective:g} "
        "grounded): 1 spends the budget exactly at the objective's pace, 2 twice as fast. "
        f"RagtraceGroundednessBudgetBurn {_burn_rules_text()}; docs/alerting.md. Dashed: 1.",
        (
            Query(burn("1h"), f"1h {legend(PER_PIPELINE)}"),
            Query(burn("6h"), f"6h {legend(PER_PIPELINE)}"),
        ),
        threshold=1.0,
    )


AUDIT = PROM_NAME["ragtrace.judge.audit"]
CALIBRATION_KAPPA = PROM_NAME["ragtrace.judge.calibration.kappa"]


def audit_kappa() -> str:
    """Cohen's kappa of each judge against its audit labels, from the exported counts
    (docs/statistics.md): (p_o - p_e) / (1 - p_e)."""

    def units(where: str = "") -> str:
        selector = f"{AUDIT}{{{where}}}" if where else AUDIT
        return total(f"max by ({PER_JUDGE}, human, verdict) ({selector})", PER_JUDGE)

    n = units()
    both = units('human="supported", verdict="supported"')
    neither = units('human="unsupported", verdict="unsupported"')
    agreed = f"({both} + {neither})"
    judge_supported = units('verdict="supported"')
    human_supported = units('human="supported"')
    judge_yes = f"({judge_supported} / {n})"
    human_yes = f"({human_supported} / {n})"
    chance = f"({judge_yes} * {human_yes} + (1 - {judge_yes}) * (1 - {human_yes}))"
    return f"(({agreed} / {n}) - {chance})\n/\n(1 - {chance})"


def _audit_panel() -> Panel:
    """The audit's running kappa per judge beside its calibration's interval; bars: the audited
    units behind it."""
    return Panel(
        "Judge audit: kappa against the calibration's",
        "Cohen's kappa between each judge (and prompt) and the audit labels people gave in the "
        "web view (ragtrace serve), from the exported counts, beside the 95 % interval of the "
        "kappa its last calibration measured. Bars: audited units behind the running kappa. "
        "The alert RagtraceJudgeAgreementLow fires when it falls below the calibration's lower "
        "bound with enough units (docs/statistics.md).",
        (
            Query(audit_kappa(), f"audit {legend(PER_JUDGE)}", "A"),
            Query(
                f"max by ({PER_JUDGE}, bound) ({CALIBRATION_KAPPA})",
                f"calibration {{{{bound}}}} {legend(PER_JUDGE)}",
                "B",
            ),
            Query(
                total(f"max by ({PER_JUDGE}, human, verdict) ({AUDIT})", PER_JUDGE),
                f"n {legend(PER_JUDGE)}",
                "C",
            ),
        ),
        width=24,
        counts="C",
    )


def _mean_panel(
    title: str,
    description: str,
    histogram: str,
    *,
    by: str = PER_PIPELINE,
    width: int = 12,
    threshold: float | None = None,
    observations: bool = True,
) -> Panel:
    """A histogram's mean per ``by`` on a 0..1 axis; with ``observations``, the observations
    behind each point as bars (query B)."""
    queries = [Query(mean(histogram, by), legend(by))]
    if observations:
        counted = increase(count_of(histogram), by, SERVICE_AND_PIPELINE)
        queries.append(Query(counted, f"n {legend(by)}"))
    counts = "B" if observations else None
    return Panel(
        title,
        description,
        tuple(queries),
        unit="percentunit",
        width=width,
        fraction=True,
        threshold=threshold,
        counts=counts,
    )


def _percentiles(histogram: str, by: str, where: str, *percents: int) -> tuple[Query, ...]:
    """One quantile query per percent, legend ``p<percent> <labels>``."""
    return tuple(
        Query(quantile(pct / 100, histogram, by, where), f"p{pct} {legend(by)}") for pct in percents
    )


def _per_second(
    title: str,
    description: str,
    series: str,
    by: str,
    where: str = "",
    *,
    width: int = 8,
    separator: str = " ",
) -> Panel:
    """One counter per second by ``by``; its legend: the labels joined by ``separator``."""
    query = Query(rate(series, by, where), legend(by, separator))
    return Panel(title, description, (query,), unit="reqps", width=width)


QUALITY_BOARD = Board(
    title="RAG quality",
    uid="ragtrace-rag-quality",
    description="Groundedness and retrieval quality of live RAG traffic, scored by ragtrace.",
    tags=("ragtrace", "rag"),
    variables=(
        Variable("datasource", "Prometheus", "datasource", "prometheus"),
        Variable(
            "service",
            "Service",
            "query",
            f"label_values({PROM_NAME['ragtrace.traces.seen']}, service)",
        ),
        Variable(
            "pipeline",
            "Pipeline",
            "query",
            f"label_values({PROM_NAME['ragtrace.traces.seen']}{{{SERVICE}}}, pipeline)",
        ),
        Variable("tempo", "Traces", "datasource", "tempo"),
        Variable("groundedness_below", "Worst traces: groundedness below", "text", "0.5"),
        Variable("recall_below", "Worst traces: recall below", "text", "0.5"),
    ),
    annotations=(
        # A judge model or judge prompt (judge_prompt: 12 hex characters of the prompt's
        # SHA-256) scoring that was not scoring 30 minutes earlier.
        Annotation(
            JUDGE_CHANGE,
            f"count by (judge_model, judge_prompt) ({count_of(GROUNDEDNESS)})\nunless\n"
            f"count by (judge_model, judge_prompt) ({count_of(GROUNDEDNESS)} offset 30m)",
            color="purple",
            title="Judge {{judge_model}}, prompt {{judge_prompt}}",
            tags="judge_model,judge_prompt",
        ),
    ),
    sections=(
        Row("Groundedness (judged traffic)"),
        _mean_panel(
            "Mean groundedness",
            "Mean groundedness of judged traces: share of an answer's claims entailed by its context "
            "with verified evidence. Bars (right axis): judgements each point rests on.",
            GROUNDEDNESS,
        ),
        _burn_panel(),
        Panel(
            "Low groundedness percentiles",
            "10th and 25th percentiles (from 0.1-wide buckets): how bad the worst "
            "answers are, which the mean hides.",
            _percentiles(GROUNDEDNESS, PER_PIPELINE, SERVICE_AND_PIPELINE, 10, 25),
            unit="percentunit",
            fraction=True,
        ),
        _per_second(
            "Judged traces",
            "Traces scored for groundedness per second.",
            count_of(GROUNDEDNESS),
            PER_PIPELINE,
            SERVICE_AND_PIPELINE,
            width=12,
            separator=" / ",
        ),
        Row("Retrieval (labelled traffic)"),
        _mean_panel(
            "Mean recall@k",
            "Mean recall@k over traces matching a labelled question: share of the gold chunks found "
            "in the top k, one series per k (the trace's declared top-k, else scoring.k). Bars "
            "(right axis): labelled traces each point rests on. Dashed: the alert threshold.",
            RECALL,
            by=PER_CUTOFF,
            width=8,
            threshold=ALERT_THRESHOLD["recall"],
        ),
        _mean_panel(
            "Hit rate@k",
            "Share of labelled traces with at least one gold chunk in the top k "
            "(Success@k; always >= mean recall), one series per k.",
            "ragtrace.hit_rate",
            by=PER_CUTOFF,
            width=8,
            observations=False,
        ),
        _mean_panel(
            "Mean reciprocal rank",
            "Mean of 1 / rank of the first gold chunk (0 when none is retrieved).",
            "ragtrace.reciprocal_rank",
            width=8,
            observations=False,
        ),
        _per_second(
            "Labelled traces",
            "Traces matching a labelled question, per second.",
            count_of(RECALL),
            PER_PIPELINE,
            SERVICE_AND_PIPELINE,
            width=24,
            separator=" / ",
        ),
        # Slices by the app's generator model and the retriever's data source (bounded labels).
        Row("By generator model and retriever"),
        _mean_panel(
            "Groundedness by generator model",
            "Mean groundedness per application model (the generation span's model; at most 20 "
            "models per consumer replica, the rest as 'other'). Bars: judgements behind each point.",
            GROUNDEDNESS,
            by="model",
        ),
        _mean_panel(
            "Recall by retriever",
            "Mean recall@k per data source (the retrieval span's gen_ai.data_source.id; at most 20 "
            "per replica, the rest as 'other') and k. Bars: labelled traces behind each point.",
            RECALL,
            by="data_source, k",
            threshold=ALERT_THRESHOLD["recall"],
        ),
        # Answer metrics: judged traces whose labelled question has a reference answer.
        Row("Answer relevancy and correctness (reference answers)"),
        Panel(
            "Answer relevancy and correctness",
            "Mean answer relevancy (does the answer address the question?) and correctness "
            "(against the labelled reference answer) of judged traces whose labelled "
            "question has a reference_answer. Bars: traces behind each point.",
            (
                Query(
                    mean("ragtrace.answer_relevancy"), "relevancy {{service}} / {{pipeline}}", "A"
                ),
                Query(
                    mean("ragtrace.answer_correctness"),
                    "correctness {{service}} / {{pipeline}}",
                    "C",
                ),
                Query(
                    increase(
                        count_of("ragtrace.answer_correctness"), PER_PIPELINE, SERVICE_AND_PIPELINE
                    ),
                    "n {{service}} / {{pipeline}}",
                    "B",
                ),
            ),
            unit="percentunit",
            width=24,
            fraction=True,
            counts="B",
        ),
        Row("Attribution: retrieval or generation?"),
        Panel(
            "Four cells over the time range",
            "Labelled and judged traces by cell: fine, retrieval_failed (recall below "
            "threshold), generation_failed (groundedness below threshold), both_failed.",
            (
                Query(
                    increase(ATTRIBUTION, "cell", f"{SERVICE_AND_PIPELINE}, {CELLS}", WHOLE_RANGE),
                    "{{cell}}",
                ),
            ),
            width=8,
            kind="cells",
        ),
        Panel(
            "Cell shares",
            "Share of scored traces in each attribution cell (unlabelled and unjudged included).",
            (
                Query(
                    f"{rate(ATTRIBUTION, 'cell', SERVICE_AND_PIPELINE)}\n/ ignoring (cell) group_left\n"
                    f"{rate(ATTRIBUTION, where=SERVICE_AND_PIPELINE)}",
                    "{{cell}}",
                ),
            ),
            unit="percentunit",
            width=16,
            fraction=True,
            stacked=True,
        ),
        _not_grounded_panel(),
        _audit_panel(),
        Row("Worst traces (trace backend)"),
        Panel(
            "Least grounded answers",
            WORST_TRACES,
            (Query("{ span.ragtrace.eval.groundedness < $groundedness_below }"),),
            kind="traces",
        ),
        Panel(
            "Lowest recall on labelled questions",
            WORST_TRACES,
            (Query("{ span.ragtrace.eval.recall < $recall_below }"),),
            kind="traces",
        ),
    ),
)

# --- "ragtrace operations" -------------------------------------------------------------------
JUDGE_CALLS = PROM_NAME["ragtrace.judge.calls"]
JUDGE_TOKENS = PROM_NAME["ragtrace.judge.tokens"]
CONSUMER_LAG = PROM_NAME["ragtrace.consumer.lag"]


def _durations(title: str, description: str, histogram: str, by: str, where: str) -> Panel:
    """Median and 95th percentile of a duration histogram by ``by``, a third wide."""
    return Panel(title, description, _percentiles(histogram, by, where, 50, 95), unit="s", width=8)


def _flow(counter: str) -> Query:
    series = PROM_NAME[f"ragtrace.traces.{counter}"]
    return Query(rate(series, where=SERVICE_AND_PIPELINE), counter)


OPERATIONS_BOARD = Board(
    title="ragtrace operations",
    uid="ragtrace-operations",
    description=(
        "Health of the ragtrace consumers: trace flow, judge calls, cost, budget, "
        "dead letters, lag and scoring delay."
    ),
    tags=("ragtrace", "operations"),
    variables=(
        *QUALITY_BOARD.variables[:3],
        Variable(
            "judge_model", "Judge model", "query", f"label_values({JUDGE_CALLS}, judge_model)"
        ),
    ),
    sections=(
        Row("Trace flow"),
        Panel(
            "Traces seen, sampled, scored",
            "Assembled RAG traces, those selected for scoring, and those whose "
            "scores were written back, per second.",
            (_flow("seen"), _flow("sampled"), _flow("scored")),
            unit="reqps",
            width=8,
        ),
        _per_second(
            "Skipped by reason",
            "Traces (or one of their scores) not scored, per second, by reason.",
            PROM_NAME["ragtrace.traces.skipped"],
            "reason",
            SERVICE_AND_PIPELINE,
        ),
        _per_second(
            "Parked by reason",
            "Traces set aside for a later retry (judge unavailable or failing, "
            "write-back failed), per second.",
            PROM_NAME["ragtrace.traces.parked"],
            "reason",
        ),
        Row("Judge"),
        _per_second(
            "Judge calls by outcome",
            "ok, error, cached, unavailable; per second.",
            JUDGE_CALLS,
            "judge_model, outcome",
            JUDGE_MODEL,
        ),
        _per_second(
            "Judge errors by reason",
            "Failed judge calls per second.",
            PROM_NAME["ragtrace.judge.errors"],
            "judge_model, reason",
            JUDGE_MODEL,
        ),
        _durations(
            "Judge latency",
            "Median and 95th percentile of a judge call.",
            "ragtrace.judge.latency",
            "judge_model",
            JUDGE_MODEL,
        ),
        Panel(
            "Tokens per hour",
            "Judge tokens billed per hour, by type.",
            (
                Query(
                    rate(JUDGE_TOKENS, "judge_model, token_type", JUDGE_MODEL, 3600),
                    "{{judge_model}} {{token_type}}",
                ),
            ),
            width=8,
        ),
        Panel(
            "Cost per hour",
            "Judge cost in USD per hour (list prices).",
            (
                Query(
                    rate(PROM_NAME["ragtrace.judge.cost"], "judge_model", JUDGE_MODEL, 3600),
                    "{{judge_model}}",
                ),
            ),
            unit="currencyUSD",
            width=8,
        ),
        # The judge's calls in the OTel GenAI client conventions (gen_ai.* attributes as labels).
        Panel(
            "Judge calls (GenAI conventions)",
            "95th percentile of tokens per judge call by type, and of a call's "
            "duration, from gen_ai.client.token.usage and "
            "gen_ai.client.operation.duration.",
            (
                Query(
                    quantile(
                        0.95,
                        "gen_ai.client.token.usage",
                        "gen_ai_request_model, gen_ai_token_type",
                        GENAI_MODEL,
                    ),
                    "p95 tokens {{gen_ai_request_model}} {{gen_ai_token_type}}",
                ),
                Query(
                    quantile(
                        0.95,
                        "gen_ai.client.operation.duration",
                        "gen_ai_request_model",
                        GENAI_MODEL,
                    ),
                    "p95 s {{gen_ai_request_model}}",
                ),
            ),
            width=8,
        ),
        Panel(
            "Budget use",
            "Judge calls and tokens per minute (compare with judge.calls_per_minute "
            "and judge.tokens_per_minute), and traces left unjudged because the "
            "budget was spent (per second).",
            (
                Query(
                    rate(JUDGE_CALLS, where=f'{JUDGE_MODEL}, outcome=~"ok|error"', times=60),
                    "calls/min",
                ),
                Query(rate(JUDGE_TOKENS, where=JUDGE_MODEL, times=60), "tokens/min"),
                Query(
                    rate(PROM_NAME["ragtrace.judge.budget.exhausted"], "service", SERVICE),
                    "exhausted {{service}}",
                ),
            ),
            width=8,
        ),
        Panel(
            "Suspected prompt injections",
            "Judged traces whose retrieved context held a passage addressed to an "
            "evaluator or model (never used as evidence), over the time range; "
            "the traces carry ragtrace.eval.injection_suspected=true.",
            (
                Query(
                    increase(
                        PROM_NAME["ragtrace.judge.injection_suspected"],
                        "service",
                        SERVICE,
                        WHOLE_RANGE,
                    ),
                    "{{service}}",
                ),
            ),
            width=8,
        ),
        Panel(
            "Redacted values",
            "Values replaced by a placeholder before judging and write-back (the redaction "
            "setting), over the time range, by pattern.",
            (
                Query(
                    increase(PROM_NAME["ragtrace.redactions"], "pattern", SERVICE, WHOLE_RANGE),
                    "{{pattern}}",
                ),
            ),
            width=8,
        ),
        Row("Pipeline health"),
        Panel(
            "Dead-lettered messages",
            "Span messages sent to the dead-letter topic per minute, by reason.",
            (Query(rate(PROM_NAME["ragtrace.dlq.messages"], "reason", times=60), "{{reason}}"),),
            width=8,
        ),
        # One series per partition, from the replica holding it (committed vs end offset).
        Panel(
            "Consumer lag by partition",
            "Records of each partition the consumer group has not committed (end offset - committed "
            "offset), reported once by the replica holding the partition, and their total. Dashed: "
            "the alert threshold on the total.",
            (
                Query(total(CONSUMER_LAG, "topic, partition"), "{{topic}}[{{partition}}]"),
                Query(total(CONSUMER_LAG), "total"),
            ),
            width=8,
            threshold=ALERT_THRESHOLD["consumerLag"],
        ),
        Panel(
            "Partitions per replica",
            "Partitions each live consumer replica holds (0: idle, e.g. more "
            "replicas than partitions). No series at all: no consumer is alive.",
            (Query(total(PROM_NAME["ragtrace.consumer.partitions"], "instance"), "{{instance}}"),),
            width=8,
        ),
        Panel(
            "Dependency errors",
            "Failed calls to Redis or Kafka per minute (each retried with backoff; "
            "/readyz names the dependency down meanwhile).",
            (
                Query(
                    rate(PROM_NAME["ragtrace.consumer.dependency.errors"], "dependency", times=60),
                    "{{dependency}}",
                ),
            ),
            width=8,
        ),
        Panel(
            "Spans the collector failed to export",
            "Spans per minute the collector dropped on the way to Kafka (e.g. a "
            "trace over the exporter's max_message_bytes): never scored. Alert "
            "RagtraceCollectorDroppingSpans.",
            # The collector's own counter exists only after a first failure: "or … * 0" keeps
            # a 0 line.
            (
                Query(
                    f"{rate(COLLECTOR_METRICS['send_failed_spans'], 'exporter', KAFKA_EXPORTER, 60)} or "
                    f"{rate('otelcol_exporter_sent_spans', 'exporter', KAFKA_EXPORTER, 0)}",
                    "{{exporter}}",
                ),
            ),
            width=8,
        ),
        Row("Ingest health"),
        Panel(
            "Collector: refused spans and export failures",
            "Spans the collector's receivers refused (memory limiter) and spans its "
            "exporters failed to send (Kafka, the trace backend), per second.",
            (
                Query(rate(COLLECTOR_METRICS["refused_spans"], "receiver"), "refused {{receiver}}"),
                Query(
                    rate(COLLECTOR_METRICS["send_failed_spans"], "exporter"),
                    "send failed {{exporter}}",
                ),
            ),
            unit="reqps",
            width=8,
        ),
        Panel(
            "SDK errors and dropped spans",
            "Failures inside the applications' ragtrace SDK, spans it dropped "
            "before export, and traces too large for one collector Kafka message, "
            "per second, by application (job) and reason. Empty while nothing has "
            "failed.",
            (
                Query(
                    rate(APP_METRICS["ragtrace.sdk.errors"], "job, reason"),
                    "errors {{job}} {{reason}}",
                ),
                Query(
                    rate(APP_METRICS["ragtrace.sdk.dropped"], "job, reason"),
                    "dropped {{job}} {{reason}}",
                ),
                Query(
                    rate(APP_METRICS["ragtrace.sdk.oversized"], "job"), "oversized traces {{job}}"
                ),
            ),
            unit="reqps",
            width=8,
        ),
        # Spans no reader recognised, by instrumentation scope (an instrumentor ragtrace cannot
        # read).
        _per_second(
            "Unrecognised spans by instrumentation scope",
            "Spans no reader recognised as retrieval or generation, per second, by "
            "instrumentation scope: an instrumentor whose spans ragtrace cannot read (see "
            "docs/runbooks.md#unrecognised-spans). Empty while every span is read.",
            PROM_NAME["ragtrace.spans.unrecognised"],
            "scope",
        ),
        _per_second(
            "Receiver rejections (ragtrace serve)",
            "OTLP requests the embedded evaluator's receiver refused, per second, by "
            "reason. Empty while nothing was refused.",
            APP_METRICS["ragtrace.receiver.rejected"],
            "reason",
        ),
        _durations(
            "Scoring delay",
            "Time from a trace's last span to its score being written back.",
            "ragtrace.scoring.delay",
            "service",
            SERVICE,
        ),
    ),
)

# Every PromQL expression of each dashboard by "panel title:refId" (all run by the end-to-end
# test), and every TraceQL expression (Tempo panels; not run by it).
QUALITY: dict[str, str] = _promql(QUALITY_BOARD)
OPERATIONS: dict[str, str] = _promql(OPERATIONS_BOARD)
TRACEQL: dict[str, str] = _traceql(QUALITY_BOARD)


def build_all() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {
        "rag-quality.json": render(QUALITY_BOARD),
        "ragtrace-operations.json": render(OPERATIONS_BOARD),
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
