"""The OTel metrics every consumer replica emits (contract section G), behind one small class.

Instrument names are the ``METRIC_*`` constants of :mod:`ragtrace.semconv`, the meter is
``semconv.EVALUATION_SCOPE`` and attribute keys are the ``ATTR_*`` constants, with bounded values
only (service, pipeline, judge model, judge prompt, reason, cell, outcome — never a trace ID or
free text).

The groundedness histogram and the judge call and error counters also carry ``judge_prompt``:
the first 12 hex characters of the judge prompt's SHA-256 (:func:`prompt_label`), so a prompt
change shows on the dashboards like a model change. A replica runs one judge, so its prompt is
given once (``ConsumerMetrics(..., judge_prompt_sha256=judge.info.prompt_sha256)``); a call may
pass its own. With neither, the attribute is left out.
Label sets are created eagerly (0-valued) where the values are known in advance, so dashboards
and alerts see every series from the first export, not only after the first failure.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from ragtrace import __version__, semconv
from ragtrace.evaluation.attribution import Cell
from ragtrace_consumers.errors import DECODE_REASONS as _DECODE_REASONS
from ragtrace_consumers.model import SKIP_REASONS as _SAMPLER_SKIP_REASONS
from ragtrace_consumers.telemetry.counter_batch import BatchedCounter, CounterBatch
from ragtrace_consumers.telemetry.dimensions import UNKNOWN, BoundedLabel
from ragtrace_consumers.telemetry.lag import PartitionLag

if TYPE_CHECKING:
    from ragtrace.evaluation.calibration import Confusion

__all__ = [
    "CELLS",
    "DLQ_REASONS",
    "GENAI_DURATION_BUCKETS",
    "GENAI_TOKEN_BUCKETS",
    "JUDGE_OUTCOMES",
    "PARK_REASONS",
    "SCORE_BUCKETS",
    "SECONDS_BUCKETS",
    "SKIP_REASONS",
    "TOKEN_TYPES",
    "ConsumerMetrics",
    "prompt_label",
]

SCORE_BUCKETS: tuple[float, ...] = tuple(round(i / 10, 1) for i in range(11))
SECONDS_BUCKETS: tuple[float, ...] = (
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
)
# A trace with nothing written back is skipped for exactly one of these: the sampler's reasons
# (sampled_out, no_retrieval, no_answer, ...) when neither score was sampled, else ours.
SKIP_REASONS: tuple[str, ...] = tuple(sorted(_SAMPLER_SKIP_REASONS)) + (
    "not_rag",
    "unrecognised",
    "unlabelled",
    "already_scored",
    "budget_exhausted",
    "judge_gave_up",
)
JUDGE_OUTCOMES: tuple[str, ...] = ("ok", "error", "cached", "unavailable")
CELLS: tuple[str, ...] = tuple(c.value for c in Cell)
"""The ``cell`` values of ``ragtrace.attribution``, each created 0-valued per service and
pipeline: an alert on ``unlabelled_not_grounded`` or ``unanswerable_answered`` sees its series
before the first such answer."""
TOKEN_TYPES: tuple[str, ...] = ("input", "output", "cache_read", "cache_write")
DLQ_REASONS: tuple[str, ...] = (*sorted(_DECODE_REASONS), "unexpected_error")
PARK_REASONS: tuple[str, ...] = (
    "judge_unavailable",
    "judge_failed",
    "writeback_failed",
    "judge_batch_pending",
)
# Bucket boundaries the GenAI semantic conventions advise for their client histograms.
GENAI_TOKEN_BUCKETS: tuple[float, ...] = tuple(float(4**i) for i in range(14))
GENAI_DURATION_BUCKETS: tuple[float, ...] = tuple(0.01 * 2**i for i in range(14))
DEFAULT_PIPELINE = "default"
PROMPT_LABEL_CHARS = 12
_HEX = frozenset("0123456789abcdef")


def prompt_label(prompt_sha256: str | None) -> str | None:
    """The bounded ``judge_prompt`` value: the first 12 hex characters of a prompt SHA-256,
    lower case; None for None. Anything but a hex digest of at least 12 characters raises
    ValueError (a metric attribute must never carry free text)."""
    if prompt_sha256 is None:
        return None
    label = prompt_sha256[:PROMPT_LABEL_CHARS].lower()
    if len(label) < PROMPT_LABEL_CHARS or not set(label) <= _HEX:
        raise ValueError(f"not a prompt SHA-256: {prompt_sha256!r}")
    return label


class ConsumerMetrics:
    """Counters, histograms and the lag gauge of one replica. Thread-safe (the SDK instruments
    are); cheap to call per trace."""

    def __init__(
        self, meter_provider: MeterProvider, *, judge_prompt_sha256: str | None = None
    ) -> None:
        self._judge_prompt = prompt_label(judge_prompt_sha256)
        # Values chosen by the applications: capped (dimensions.py) before they become labels.
        self.generator_models = BoundedLabel()
        self.data_sources = BoundedLabel()
        self.cutoffs = BoundedLabel()
        self.meter_provider = meter_provider
        m = meter_provider.get_meter(
            semconv.EVALUATION_SCOPE, __version__, schema_url=semconv.SCHEMA_URL
        )
        score = list(SCORE_BUCKETS)
        self._groundedness = m.create_histogram(
            semconv.METRIC_GROUNDEDNESS,
            "1",
            "Groundedness per judged trace",
            explicit_bucket_boundaries_advisory=score,
        )
        self._recall = m.create_histogram(
            semconv.METRIC_RECALL,
            "1",
            "Recall@k per labelled trace",
            explicit_bucket_boundaries_advisory=score,
        )
        self._answer = {
            "answer_relevancy": m.create_histogram(
                semconv.METRIC_ANSWER_RELEVANCY,
                "1",
                "Answer relevancy per judged trace with a reference answer",
                explicit_bucket_boundaries_advisory=score,
            ),
            "answer_correctness": m.create_histogram(
                semconv.METRIC_ANSWER_CORRECTNESS,
                "1",
                "Answer correctness against the labelled reference answer, per judged trace",
                explicit_bucket_boundaries_advisory=score,
            ),
        }
        self._hit_rate = m.create_histogram(
            semconv.METRIC_HIT_RATE,
            "1",
            "Hit rate@k per labelled trace",
            explicit_bucket_boundaries_advisory=score,
        )
        self._rr = m.create_histogram(
            semconv.METRIC_RECIPROCAL_RANK,
            "1",
            "Reciprocal rank per labelled trace",
            explicit_bucket_boundaries_advisory=score,
        )
        self._seen = m.create_counter(semconv.METRIC_TRACES_SEEN, "{trace}", "Traces assembled")
        self._sampled = m.create_counter(
            semconv.METRIC_TRACES_SAMPLED, "{trace}", "Traces selected for scoring"
        )
        self._scored = m.create_counter(
            semconv.METRIC_TRACES_SCORED, "{trace}", "Traces whose scores were recorded"
        )
        self._skipped = m.create_counter(
            semconv.METRIC_TRACES_SKIPPED,
            "{trace}",
            "Traces (or one of their scores) not scored, by reason",
        )
        self._cell = m.create_counter(
            semconv.METRIC_CELL, "{trace}", "Scored traces by attribution cell"
        )
        # Not batched: added with the groundedness histogram's record, so a scrape never sees
        # a judged trace whose failed count is still pending.
        self._failed = m.create_counter(
            semconv.METRIC_GROUNDEDNESS_FAILED,
            "{trace}",
            "Judged traces scored below the groundedness threshold",
        )
        self._calibration: tuple[dict[str, str], Confusion] | None = None
        m.create_observable_gauge(
            semconv.METRIC_JUDGE_CALIBRATION,
            [self._observe_calibration],
            "{claim}",
            "Claims of the judge's last calibration by human label and judge verdict",
        )
        m.create_observable_gauge(
            semconv.METRIC_JUDGE_CALIBRATION_KAPPA,
            [self._observe_calibration_kappa],
            "{kappa}",
            "Cohen's kappa of the judge's last calibration and its 95 % interval, by bound",
        )
        self._audit: tuple[dict[str, str], Callable[[], Confusion]] | None = None
        m.create_observable_gauge(
            semconv.METRIC_JUDGE_AUDIT,
            [self._observe_audit],
            "{unit}",
            "Audited unit verdicts of the judge in use by auditor verdict and judge verdict",
        )
        self._judge_calls = m.create_counter(
            semconv.METRIC_JUDGE_CALLS, "{call}", "Groundedness judge calls by outcome"
        )
        self._judge_errors = m.create_counter(
            semconv.METRIC_JUDGE_ERRORS, "{call}", "Failed judge calls by reason"
        )
        self._judge_tokens = m.create_counter(
            semconv.METRIC_JUDGE_TOKENS, "{token}", "Judge tokens billed"
        )
        # UCUM has no currency: the unit is an annotation ({USD}), so the Prometheus name has no
        # unit suffix (ragtrace_judge_cost_total).
        self._judge_cost = m.create_counter(
            semconv.METRIC_JUDGE_COST, "{USD}", "Judge cost in US dollars at list prices"
        )
        # The judge's own calls in the OTel GenAI client conventions, next to ours.
        self._genai_tokens = m.create_histogram(
            semconv.METRIC_GEN_AI_CLIENT_TOKEN_USAGE,
            "{token}",
            "Tokens used per judge call (input includes cached tokens)",
            explicit_bucket_boundaries_advisory=list(GENAI_TOKEN_BUCKETS),
        )
        self._genai_duration = m.create_histogram(
            semconv.METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
            "s",
            "Duration of a judge call",
            explicit_bucket_boundaries_advisory=list(GENAI_DURATION_BUCKETS),
        )
        self._judge_latency = m.create_histogram(
            semconv.METRIC_JUDGE_LATENCY,
            "s",
            "Judge call latency",
            explicit_bucket_boundaries_advisory=list(SECONDS_BUCKETS),
        )
        self._budget = m.create_counter(
            semconv.METRIC_JUDGE_BUDGET_EXHAUSTED,
            "{trace}",
            "Traces left unjudged because the judge budget was spent",
        )
        self._injection = m.create_counter(
            semconv.METRIC_INJECTION_SUSPECTED,
            "{trace}",
            "Judged traces whose context held a suspected prompt injection",
        )
        self._dlq = m.create_counter(
            semconv.METRIC_DLQ_MESSAGES, "{message}", "Messages sent to the dead-letter topic"
        )
        self._delay = m.create_histogram(
            semconv.METRIC_SCORING_DELAY,
            "s",
            "Time from a trace's last span end to its score",
            explicit_bucket_boundaries_advisory=list(SECONDS_BUCKETS),
        )
        self._parked = m.create_counter(
            semconv.METRIC_PARKED, "{trace}", "Traces parked for a later retry"
        )
        self._redactions = m.create_counter(
            semconv.METRIC_REDACTIONS,
            "{value}",
            "Values replaced by a placeholder before judging and write-back (redaction)",
        )
        self._dependency_errors = m.create_counter(
            semconv.METRIC_DEPENDENCY_ERRORS,
            "{error}",
            "Failed calls to a dependency (Redis, Kafka, write-back); each is retried",
        )
        self._lag_source: Callable[[], Sequence[PartitionLag] | None] = lambda: None
        m.create_observable_gauge(
            semconv.METRIC_CONSUMER_LAG,
            [self._observe_lag],
            "{message}",
            "Records of a partition not yet committed by the group (end offset - committed offset)",
        )
        m.create_observable_gauge(
            semconv.METRIC_CONSUMER_PARTITIONS,
            [self._observe_partitions],
            "{partition}",
            "Partitions assigned to this replica",
        )
        self._lock = threading.Lock()
        self._known_services: set[tuple[str, str]] = set()
        self._known_models: set[tuple[str, str | None]] = set()
        for reason in DLQ_REASONS:
            self._dlq.add(0, {semconv.ATTR_REASON: reason})
        for reason in PARK_REASONS:
            self._parked.add(0, {semconv.ATTR_REASON: reason})
        # Per-trace counters are summed per batch inside batch() (metric_batch module doc).
        self._batch = CounterBatch()
        for name in (
            "_seen",
            "_sampled",
            "_scored",
            "_skipped",
            "_cell",
            "_judge_calls",
            "_judge_tokens",
            "_judge_cost",
            "_budget",
            "_parked",
        ):
            counter = getattr(self, name, None)
            if counter is not None:
                setattr(self, name, BatchedCounter(counter, self._batch))

    def batch(self) -> AbstractContextManager[None]:
        """Within the block, this thread's counter increments are added once per label set
        when it exits (``add(n)``), not once per trace."""
        block: AbstractContextManager[None] = self._batch.batch()
        return block

    # --- lag -------------------------------------------------------------------------------
    def set_lag_source(self, source: Callable[[], Sequence[PartitionLag] | None]) -> None:
        """``source()`` returns the lag of each partition this replica holds (see
        :mod:`ragtrace_consumers.telemetry.lag`), or None before the first measurement."""
        self._lag_source = source

    def _lags(self) -> Sequence[PartitionLag] | None:
        try:
            return self._lag_source()
        except Exception:  # noqa: BLE001 - a failing callback must not break the export
            return None

    def _observe_lag(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(x.lag, {"topic": x.topic, "partition": str(x.partition)})
            for x in self._lags() or ()
        ]

    def _observe_partitions(self, _options: CallbackOptions) -> Iterable[Observation]:
        lags = self._lags()
        return [] if lags is None else [Observation(len(lags))]

    # --- eager label sets ------------------------------------------------------------------
    def _ensure_service(self, service: str, pipeline: str) -> dict[str, str]:
        attrs = {semconv.ATTR_SERVICE: service, semconv.ATTR_PIPELINE: pipeline}
        with self._lock:
            if (service, pipeline) in self._known_services:
                return attrs
            self._known_services.add((service, pipeline))
        for counter in (self._seen, self._sampled, self._scored):
            counter.add(0, attrs)
        for reason in SKIP_REASONS:
            self._skipped.add(0, {**attrs, semconv.ATTR_REASON: reason})
        for cell in CELLS:
            self._cell.add(0, {**attrs, semconv.ATTR_CELL: cell})
        self._budget.add(0, {semconv.ATTR_SERVICE: service})
        self._injection.add(0, {semconv.ATTR_SERVICE: service})
        return attrs

    def _prompt(self, prompt_sha256: str | None) -> dict[str, str]:
        label = self._judge_prompt if prompt_sha256 is None else prompt_label(prompt_sha256)
        return {} if label is None else {semconv.ATTR_JUDGE_PROMPT: label}

    def ensure_judge(self, model: str, prompt_sha256: str | None = None) -> None:
        """Create the judge series of ``model`` (0-valued) before its first call."""
        prompt = self._prompt(prompt_sha256)
        with self._lock:
            key = (model, prompt.get(semconv.ATTR_JUDGE_PROMPT))
            if key in self._known_models:
                return
            self._known_models.add(key)
        attrs = {semconv.ATTR_JUDGE_MODEL: model}
        for outcome in JUDGE_OUTCOMES:
            self._judge_calls.add(0, {**attrs, **prompt, semconv.ATTR_OUTCOME: outcome})
        for token_type in TOKEN_TYPES:
            self._judge_tokens.add(0, {**attrs, semconv.ATTR_TOKEN_TYPE: token_type})
        self._judge_cost.add(0, attrs)
        self._judge_errors.add(0, {**attrs, **prompt, semconv.ATTR_REASON: "unavailable"})

    # --- trace flow ------------------------------------------------------------------------
    def trace_seen(self, service: str, pipeline: str | None) -> None:
        self._seen.add(1, self._ensure_service(service, pipeline or DEFAULT_PIPELINE))

    def trace_sampled(self, service: str, pipeline: str | None) -> None:
        self._sampled.add(1, self._ensure_service(service, pipeline or DEFAULT_PIPELINE))

    def trace_scored(
        self,
        service: str,
        pipeline: str | None,
        cell: str,
        *,
        generator_model: str | None = None,
        k: int | None = None,
        judge_model: str | None = None,
    ) -> None:
        """The cell counter carries the app's ``model`` and the cut-off ``k`` (both capped)
        and the judge (``unknown`` when the trace was not judged or not labelled)."""
        attrs = self._ensure_service(service, pipeline or DEFAULT_PIPELINE)
        self._scored.add(1, attrs)
        self._cell.add(
            1,
            {
                **attrs,
                semconv.ATTR_CELL: cell,
                semconv.ATTR_MODEL: self.generator_models(generator_model),
                semconv.ATTR_K: self.cutoffs(None if k is None else str(k)),
                semconv.ATTR_JUDGE_MODEL: judge_model or UNKNOWN,
                **self._prompt(None),
            },
        )

    def trace_skipped(self, service: str, pipeline: str | None, reason: str) -> None:
        attrs = self._ensure_service(service, pipeline or DEFAULT_PIPELINE)
        self._skipped.add(1, {**attrs, semconv.ATTR_REASON: reason})

    def traces_sampled_out(self, service: str, n: int) -> None:
        """``n`` traces dropped at decode (never assembled: pipeline unknown), counted as seen
        and skipped ``sampled_out`` in one add each."""
        attrs = self._ensure_service(service, DEFAULT_PIPELINE)
        self._seen.add(n, attrs)
        self._skipped.add(n, {**attrs, semconv.ATTR_REASON: "sampled_out"})

    def budget_exhausted(self, service: str) -> None:
        self._budget.add(1, {semconv.ATTR_SERVICE: service})

    def injection_suspected(self, service: str) -> None:
        """A judged trace whose context held a suspected prompt injection."""
        self._injection.add(1, {semconv.ATTR_SERVICE: service})

    def parked(self, reason: str) -> None:
        self._parked.add(1, {semconv.ATTR_REASON: reason})

    def redacted(self, pattern: str, count: int, service: str) -> None:
        """``count`` values of ``pattern`` replaced in one trace of ``service``."""
        self._redactions.add(count, {"pattern": pattern, semconv.ATTR_SERVICE: service})

    def dependency_error(self, dependency: str) -> None:
        self._dependency_errors.add(1, {"dependency": dependency})

    def dependency_known(self, dependency: str) -> None:
        """Export the dependency's error series at 0 (so alerts and panels have a series)."""
        self._dependency_errors.add(0, {"dependency": dependency})

    def dead_lettered(self, reason: str) -> None:
        self._dlq.add(1, {semconv.ATTR_REASON: reason})

    def scoring_delay(self, seconds: float, service: str) -> None:
        self._delay.record(max(0.0, seconds), {semconv.ATTR_SERVICE: service})

    # --- scores ----------------------------------------------------------------------------
    def groundedness(
        self,
        value: float,
        service: str,
        pipeline: str | None,
        model: str,
        prompt_sha256: str | None = None,
        *,
        generator_model: str | None = None,
        failed: bool = False,
    ) -> None:
        """``model`` is the judge's; ``generator_model`` the app's (label ``model``, capped);
        ``failed``: below the groundedness threshold (counted with the same attributes, 0 or 1,
        so the failed series exists beside every judged one)."""
        attrs = {
            semconv.ATTR_SERVICE: service,
            semconv.ATTR_PIPELINE: pipeline or DEFAULT_PIPELINE,
            semconv.ATTR_JUDGE_MODEL: model,
            **self._prompt(prompt_sha256),
            semconv.ATTR_MODEL: self.generator_models(generator_model),
        }
        self._groundedness.record(value, attrs)
        self._failed.add(int(failed), attrs)

    def set_calibration(self, confusion: Confusion, judge_model: str) -> None:
        """Export the confusion counts of the judge's calibration (the stamp matching the
        replica's judge and prompt) as ``ragtrace.judge.calibration``."""
        self._calibration = (
            {semconv.ATTR_JUDGE_MODEL: judge_model, **self._prompt(None)},
            confusion,
        )

    def _observe_calibration(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._calibration is None:
            return []
        attrs, c = self._calibration
        return [Observation(n, {**attrs, "human": h, "verdict": v}) for h, v, n in _cells(c)]

    def _observe_calibration_kappa(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._calibration is None:
            return []
        from ragtrace.evaluation.agreement import agreement

        attrs, c = self._calibration
        a = agreement(c)
        if math.isnan(a.kappa):
            return []
        bounds = (("estimate", a.kappa), ("low", a.low), ("high", a.high))
        return [Observation(v, {**attrs, "bound": b}) for b, v in bounds]

    def set_audit(self, counts: Callable[[], Confusion], judge_model: str) -> None:
        """Export the audit's counts of the judge in use (``counts`` is read at each collection)
        as ``ragtrace.judge.audit``: with them Prometheus computes the running kappa."""
        self._audit = ({semconv.ATTR_JUDGE_MODEL: judge_model, **self._prompt(None)}, counts)

    def _observe_audit(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._audit is None:
            return []
        attrs, counts = self._audit
        return [Observation(n, {**attrs, "human": h, "verdict": v}) for h, v, n in _cells(counts())]

    def retrieval(
        self,
        recall: float,
        hit_rate: float,
        reciprocal_rank: float,
        service: str,
        pipeline: str | None,
        *,
        k: int,
        data_source: str | None = None,
    ) -> None:
        """``k``: the cut-off the scores were taken at (label, capped: a trace declares it);
        ``data_source``: the retriever's ``gen_ai.data_source.id`` (label, capped)."""
        attrs = {
            semconv.ATTR_SERVICE: service,
            semconv.ATTR_PIPELINE: pipeline or DEFAULT_PIPELINE,
            semconv.ATTR_K: self.cutoffs(str(k)),
            semconv.ATTR_DATA_SOURCE: self.data_sources(data_source),
        }
        self._recall.record(recall, attrs)
        self._hit_rate.record(hit_rate, attrs)
        self._rr.record(reciprocal_rank, attrs)

    def answer_metric(
        self, metric: str, value: float, service: str, pipeline: str | None, model: str
    ) -> None:
        """``metric``: ``answer_relevancy`` or ``answer_correctness``; ``model`` the judge's."""
        self._answer[metric].record(
            value,
            {
                semconv.ATTR_SERVICE: service,
                semconv.ATTR_PIPELINE: pipeline or DEFAULT_PIPELINE,
                semconv.ATTR_JUDGE_MODEL: model,
            },
        )

    # --- judge -----------------------------------------------------------------------------
    def judge_call(self, model: str, outcome: str, prompt_sha256: str | None = None) -> None:
        self.ensure_judge(model, prompt_sha256)
        self._judge_calls.add(
            1,
            {
                semconv.ATTR_JUDGE_MODEL: model,
                **self._prompt(prompt_sha256),
                semconv.ATTR_OUTCOME: outcome,
            },
        )

    def judge_error(self, model: str, reason: str, prompt_sha256: str | None = None) -> None:
        self.ensure_judge(model, prompt_sha256)
        self._judge_errors.add(
            1,
            {
                semconv.ATTR_JUDGE_MODEL: model,
                **self._prompt(prompt_sha256),
                semconv.ATTR_REASON: reason,
            },
        )

    def judge_usage(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read: int,
        cache_write: int,
        cost_usd: float,
        latency_s: float,
        provider: str = "anthropic",
        *,
        error_type: str | None = None,
        response_model: str | None = None,
    ) -> None:
        """One judge call's usage. ``error_type`` (the call failed) and ``response_model`` (the
        model the API served) go on ``gen_ai.client.operation.duration`` as the GenAI
        conventions name them (``error.type``, ``gen_ai.response.model``)."""
        self.ensure_judge(model)
        attrs = {semconv.ATTR_JUDGE_MODEL: model}
        for token_type, n in zip(
            TOKEN_TYPES, (input_tokens, output_tokens, cache_read, cache_write), strict=True
        ):
            if n:
                self._judge_tokens.add(n, {**attrs, semconv.ATTR_TOKEN_TYPE: token_type})
        if cost_usd > 0:
            self._judge_cost.add(cost_usd, attrs)
        self._judge_latency.record(max(0.0, latency_s), attrs)
        genai = {
            semconv.GEN_AI_OPERATION_NAME: "chat",
            semconv.GEN_AI_PROVIDER_NAME: provider,
            semconv.GEN_AI_REQUEST_MODEL: model,
        }
        self._genai_tokens.record(
            input_tokens + cache_read + cache_write, {**genai, semconv.GEN_AI_TOKEN_TYPE: "input"}
        )
        self._genai_tokens.record(output_tokens, {**genai, semconv.GEN_AI_TOKEN_TYPE: "output"})
        self._genai_duration.record(
            max(0.0, latency_s), _call_outcome(genai, error_type, response_model)
        )

    def judge_call_failed(
        self, model: str, latency_s: float, error_type: str, provider: str = "anthropic"
    ) -> None:
        """A judge call that raised (no result, no usage: the API never answered in time):
        its duration, with ``error.type``, on ``gen_ai.client.operation.duration``."""
        genai = {
            semconv.GEN_AI_OPERATION_NAME: "chat",
            semconv.GEN_AI_PROVIDER_NAME: provider,
            semconv.GEN_AI_REQUEST_MODEL: model,
            semconv.ERROR_TYPE: error_type,
        }
        self._genai_duration.record(max(0.0, latency_s), genai)


def _call_outcome(
    attrs: dict[str, str], error_type: str | None, response_model: str | None
) -> dict[str, str]:
    out = dict(attrs)
    if error_type is not None:
        out[semconv.ERROR_TYPE] = error_type
    if response_model:
        out[semconv.GEN_AI_RESPONSE_MODEL] = response_model
    return out


def _cells(c: Confusion) -> tuple[tuple[str, str, int], ...]:
    """(human, verdict, count) of each cell of ``c``."""
    return (
        ("supported", "supported", c.both_entailed),
        ("unsupported", "supported", c.judge_only),
        ("supported", "unsupported", c.human_only),
        ("unsupported", "unsupported", c.neither),
    )
