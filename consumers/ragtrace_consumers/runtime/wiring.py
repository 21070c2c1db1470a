"""The one wiring root of the scoring side, shared by ``ragtrace consume``
(:mod:`.kafka_service`) and ``ragtrace serve``/``demo`` (:mod:`.embedded`).

Both intakes hand :func:`build_scoring` what differs between them — the stores (Redis behind
retries, or in-process and SQLite), a sink factory, the judge, the span readers and the meter
provider — and get back the same :class:`Scoring`: the metrics, the sink, the
:class:`~ragtrace_consumers.scoring.pipeline.Pipeline`, its
:class:`~ragtrace_consumers.scoring.workers.ScoringWorkers` and the sampling at decode. Every
setting of the ``assembly``, ``scoring``, ``sampling`` and ``judge`` sections is read here once; the pass/fail thresholds go both to the pipeline (the
attribution cell) and to the sink (the labels written back) from the same value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from opentelemetry.sdk.metrics import MeterProvider

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import Judge
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.config import ConfigError, ConsumerConfig
from ragtrace_consumers.intake.admission import EarlySampler, LabelDigests
from ragtrace_consumers.model import (
    BatchStore,
    IdempotencyStore,
    JudgeBudget,
    JudgeResultCache,
    LabelStore,
    ScoreSink,
    SessionEvidence,
    SkipLog,
    TraceStore,
)
from ragtrace_consumers.readers import SpanReaders
from ragtrace_consumers.scoring.batch_judging import BatchJudging
from ragtrace_consumers.scoring.pipeline import Pipeline, PipelineSettings
from ragtrace_consumers.scoring.sampling import Sampler
from ragtrace_consumers.scoring.workers import ScoringWorkers, judgement_bound_s
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["Scoring", "SinkFactory", "Stores", "build_scoring", "require_realtime_judging"]

S = TypeVar("S", bound=ScoreSink)

SinkFactory = Callable[[Thresholds], S]
"""Builds the score sink for the configured thresholds (its pass/fail labels)."""


@dataclass(frozen=True)
class Stores:
    """The seams the pipeline keeps its state behind (see :mod:`ragtrace_consumers.model`)."""

    traces: TraceStore
    labels: LabelStore
    cache: JudgeResultCache
    idempotency: IdempotencyStore
    budget: JudgeBudget
    skips: SkipLog | None = None
    sessions: SessionEvidence | None = None


@dataclass(frozen=True)
class Scoring(Generic[S]):
    """The scoring side, wired: feed spans to ``pipeline.ingest`` (after ``admission``), drive
    ``workers``; on shutdown stop ``judge_batch`` (when there is one), then the sink."""

    metrics: ConsumerMetrics
    sink: S
    pipeline: Pipeline
    workers: ScoringWorkers
    admission: EarlySampler
    """Sampling at decode: traces sampled out are never stored."""
    judge_batch: BatchJudging | None = None


def require_realtime_judging(settings: ConsumerConfig) -> None:
    """Refuse ``judge.mode: batch`` for an intake with no place to keep batches (ConfigError);
    the embedded evaluator checks it before it opens any state."""
    if settings.judge.mode != "realtime":
        raise ConfigError(
            "judge.mode: batch is for ragtrace consume (its batches are kept "
            "in Redis); the embedded evaluator judges in realtime"
        )


def _pipeline_settings(cfg: ConsumerConfig) -> PipelineSettings:
    """The pipeline's settings from the ``assembly``, ``scoring`` and ``judge`` sections."""
    a, s, j = cfg.assembly, cfg.scoring, cfg.judge
    return PipelineSettings(
        quiet_s=a.quiet_s,
        lease_s=a.lease_s,
        claim_batch=a.claim_batch,
        k=s.k,
        k_from_trace=s.k_from_trace,
        recall_definition=RecallDefinition(s.recall_definition),
        thresholds=Thresholds(recall=s.recall_threshold, groundedness=s.groundedness_threshold),
        park_backoff_s=j.park_backoff_s,
        park_backoff_max_s=j.park_backoff_max_s,
        give_up_after_s=j.give_up_after_s,
        session_turns=s.session_turns,
        session_max_age_s=s.session_max_age_s,
    )


def _export_calibration(metrics: ConsumerMetrics, judge: Judge) -> None:
    """The last calibration stamp (``RAGTRACE_CALIBRATION_FILE``), exported when it is of this
    judge and prompt and holds its confusion counts (docs/statistics.md)."""
    from ragtrace.evaluation.calibration import load_stamp

    stamp = load_stamp()
    if stamp is not None and stamp.confusion is not None and stamp.matches(judge.info):
        metrics.set_calibration(stamp.confusion, judge.info.model or judge.info.name)


def build_scoring(
    settings: ConsumerConfig,
    stores: Stores,
    sink: SinkFactory[S],
    judge: Judge,
    readers: SpanReaders,
    *,
    meter_provider: MeterProvider,
    workers: int | None = None,
    batch_store: BatchStore | None = None,
) -> Scoring[S]:
    """Wire the scoring side from ``settings``. ``readers`` read every span the pipeline
    ingests and scores; ``workers`` overrides ``judge.concurrency``; ``batch_store`` keeps the
    batches of ``judge.mode: batch`` (an intake without one refuses that mode with a
    ConfigError)."""
    if batch_store is None:
        require_realtime_judging(settings)
    pipeline_settings = _pipeline_settings(settings)
    metrics = ConsumerMetrics(meter_provider, judge_prompt_sha256=judge.info.prompt_sha256)
    _export_calibration(metrics, judge)
    score_sink = sink(pipeline_settings.thresholds)
    judge_batch = None
    if settings.judge.mode == "batch" and batch_store is not None:
        from ragtrace_consumers.scoring.batch_judging import build_batch_judging

        judge_batch = build_batch_judging(judge, batch_store, stores.cache, metrics).start()
    pipeline = Pipeline(
        traces=stores.traces,
        labels=stores.labels,
        cache=stores.cache,
        idempotency=stores.idempotency,
        budget=stores.budget,
        judge=judge,
        sink=score_sink,
        metrics=metrics,
        sampler=Sampler(settings.sampling.sampler_config()),
        settings=pipeline_settings,
        judge_batch=judge_batch,
        readers=readers,
        redactor=settings.redaction.redactor(),
        skips=stores.skips,
        sessions=stores.sessions,
    )
    return Scoring(
        metrics=metrics,
        sink=score_sink,
        pipeline=pipeline,
        workers=ScoringWorkers(
            pipeline,
            workers or settings.judge.concurrency,
            budgeted=judgement_bound_s(judge) is not None,
        ),
        admission=EarlySampler(
            settings.sampling.sampler_config(),
            LabelDigests(stores.labels),
            report=metrics.traces_sampled_out,
        ),
        judge_batch=judge_batch,
    )
