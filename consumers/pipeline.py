"""The one scoring path: assemble → sample → score → write back → release or park.

``ragtrace consume`` (spans from Kafka) and ``ragtrace serve`` (spans from an OTLP/HTTP receiver)
both run this class; they differ only in the implementations behind its seams (Redis or
in-process stores, the OTLP sink or another :class:`ScoreSink`).

Contracts:

* :meth:`Pipeline.ingest` returns once the spans are durable in the :class:`TraceStore`; the
  caller may then acknowledge them (commit Kafka offsets).
* :meth:`Pipeline.process_trace` never raises for a bad trace or a failing judge: it scores and
  releases, skips and releases, or parks the trace for a later retry. A store outage does raise;
  the trace's lease then runs out and any replica retries it.
* Release and park carry the claim's lease token: a replica whose lease ran out while it was
  scoring (and whose trace another replica has claimed since) changes nothing in the store.
* A (trace, metric family) is written back at most once: the :class:`IdempotencyStore` is
  checked before scoring and marked only after the sink delivered the span. A crash between the
  two re-sends the identical span (deterministic ID), never a second different score.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from ragtrace.consumers.assemble import completion_due, select_spans
from ragtrace.consumers.judging import GroundednessScorer, JudgeOutcome, ParkTrace
from ragtrace.consumers.labels import match_label
from ragtrace.consumers.metrics import SKIP_REASONS, ConsumerMetrics
from ragtrace.consumers.model import (
    IdempotencyStore,
    JudgeBudget,
    JudgeResultCache,
    LabelStore,
    Lease,
    RagTrace,
    SpanRecord,
    TraceStore,
)
from ragtrace.consumers.recognise import to_rag_trace
from ragtrace.consumers.score import (
    FAMILY_GROUNDEDNESS,
    FAMILY_RECALL,
    RetrievalScores,
    TraceScores,
    combine,
    score_retrieval,
)
from ragtrace.consumers.writeback import ScoreSink, WriteBackError, suppressed

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import GroundednessResult, Judge
from ragtrace.evaluation.retrieval import RecallDefinition

if TYPE_CHECKING:
    from ragtrace.consumers.config import ConsumerConfig

__all__ = ["Outcome", "Pipeline", "PipelineSettings", "Sampler"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineSettings:
    """Scoring settings (the ``assembly``, ``scoring`` and ``judge`` config sections)."""

    quiet_s: float = 5.0
    lease_s: float = 300.0
    claim_batch: int = 64
    k: int = 5
    recall_definition: RecallDefinition = RecallDefinition.MEAN_RECALL
    thresholds: Thresholds = field(default_factory=Thresholds)
    judge_attempts: int = 2
    judge_backoff_s: float = 1.0
    park_backoff_s: float = 30.0
    park_backoff_max_s: float = 600.0
    give_up_after_s: float = 86400.0

    def __post_init__(self) -> None:
        if self.quiet_s < 0 or self.lease_s <= 0 or self.claim_batch < 1 or self.k < 1:
            raise ValueError(f"invalid assembly/scoring settings: {self}")
        if self.judge_attempts < 1 or self.judge_backoff_s < 0:
            raise ValueError(f"invalid judge retry settings: {self}")
        if not 0 < self.park_backoff_s <= self.park_backoff_max_s or self.give_up_after_s <= 0:
            raise ValueError(f"invalid park settings: {self}")

    @classmethod
    def from_config(cls, cfg: ConsumerConfig) -> PipelineSettings:
        """From a :class:`~ragtrace.consumers.config.ConsumerConfig`."""
        a, s, j = cfg.assembly, cfg.scoring, cfg.judge
        return cls(quiet_s=a.quiet_s, lease_s=a.lease_s, claim_batch=a.claim_batch, k=s.k,
                   recall_definition=RecallDefinition(s.recall_definition),
                   thresholds=Thresholds(recall=s.recall_threshold,
                                         groundedness=s.groundedness_threshold),
                   judge_attempts=j.attempts, judge_backoff_s=j.retry_backoff_s,
                   park_backoff_s=j.park_backoff_s, park_backoff_max_s=j.park_backoff_max_s,
                   give_up_after_s=j.give_up_after_s)


class Outcome(str, Enum):
    SCORED = "scored"
    SKIPPED = "skipped"
    PARKED = "parked"
    GONE = "gone"
    """Nothing stored under that ID any more (another replica finished it)."""


class Sampler(Protocol):
    """The sampling seam (``ragtrace.consumers.sample.Sampler``): ``decide(trace)`` returns a
    decision with boolean ``recall`` and ``judge``."""

    def decide(self, trace: RagTrace) -> Any: ...


class Pipeline:
    """Scores assembled traces through the seams it is given. Thread-safe: ``process_trace``
    may run on many worker threads at once (each trace is claimed by exactly one)."""

    def __init__(self, *, traces: TraceStore, labels: LabelStore, cache: JudgeResultCache,
                 idempotency: IdempotencyStore, budget: JudgeBudget, judge: Judge | None,
                 sink: ScoreSink, metrics: ConsumerMetrics, sampler: Sampler,
                 settings: PipelineSettings = PipelineSettings(),
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.traces = traces
        self.labels = labels
        self.idempotency = idempotency
        self.sink = sink
        self.metrics = metrics
        self.sampler = sampler
        self.settings = settings
        self._clock = clock
        self._scorer = None if judge is None else GroundednessScorer(
            judge, cache, budget, metrics, attempts=settings.judge_attempts,
            backoff_s=settings.judge_backoff_s, sleep=sleep)

    # --- intake ----------------------------------------------------------------------------
    def ingest(self, spans: Sequence[SpanRecord], now: float | None = None) -> int:
        """Store ``spans`` and (re)schedule their traces' completion; durable on return.
        Only spans worth assembling are kept (``assemble.select_spans``: never our own
        evaluation spans). Returns how many spans were handed to the store."""
        kept = select_spans(spans)
        if kept:
            now = self._clock() if now is None else now
            self.traces.append(kept, completion_due(kept, now, self.settings.quiet_s))
        return len(kept)

    def claim_due(self, now: float | None = None, limit: int | None = None) -> list[Lease]:
        """Claim due traces (at most ``limit``, default ``claim_batch``) for ``lease_s``."""
        now = self._clock() if now is None else now
        return list(self.traces.claim(now, limit or self.settings.claim_batch,
                                      self.settings.lease_s))

    def process_due(self, now: float | None = None, limit: int | None = None) -> int:
        """Claim due traces and process each in this thread; returns how many were claimed."""
        leases = self.claim_due(now, limit)
        for lease in leases:
            self.process_trace(lease)
        return len(leases)

    # --- one trace -------------------------------------------------------------------------
    def process_trace(self, lease: Lease | str) -> Outcome:
        """Score one claimed trace (see the module contract). A bare trace ID (no token)
        releases or parks it whoever holds its lease."""
        trace_id, token = (lease.trace_id, lease.token) if isinstance(lease, Lease) \
            else (lease, None)
        with suppressed():
            return self._process(trace_id, token)

    def _release(self, trace_id: str, token: str | None) -> None:
        if not self.traces.release(trace_id, token):
            _log.warning("lease on trace %s ran out before it was released (another replica "
                         "has claimed it since; consider a longer assembly.lease_s)", trace_id)

    def _skip(self, trace: RagTrace, reason: str) -> None:
        assert reason in SKIP_REASONS, reason
        self.metrics.trace_skipped(trace.service, trace.pipeline, reason)

    def _process(self, trace_id: str, token: str | None) -> Outcome:
        spans = self.traces.load(trace_id)
        if not spans:
            self._release(trace_id, token)
            return Outcome.GONE
        trace = to_rag_trace(spans)
        if trace is None:
            service = spans[0].service
            self.metrics.trace_seen(service, None)
            self.metrics.trace_skipped(service, None, "not_rag")
            self._release(trace_id, token)
            return Outcome.SKIPPED
        self.metrics.trace_seen(trace.service, trace.pipeline)
        decision = self.sampler.decide(trace)
        if not (decision.recall or decision.judge):
            self._skip(trace, decision.reason or "sampled_out")
            self._release(trace_id, token)
            return Outcome.SKIPPED
        self.metrics.trace_sampled(trace.service, trace.pipeline)
        recall_done = decision.recall and self.idempotency.written(trace_id, FAMILY_RECALL)
        judge_done = decision.judge and self.idempotency.written(trace_id, FAMILY_GROUNDEDNESS)

        retrieval = self._retrieval(trace) if decision.recall else None
        judged: JudgeOutcome | None = None
        judge_skip: str | None = None
        if decision.judge and not judge_done:
            try:
                judged, judge_skip = self._judge(trace)
            except ParkTrace as park:
                if self._park(trace, token, park.reason, park.retry_after):
                    return Outcome.PARKED
                judge_skip = "judge_gave_up"
        groundedness: GroundednessResult | None = judged.result if judged else None
        scores = combine(trace, retrieval, groundedness, self.settings.thresholds,
                         write_retrieval=retrieval is not None and not recall_done,
                         write_groundedness=groundedness is not None,
                         groundedness_cost_usd=judged.cost_usd if judged else 0.0)
        if scores is None:
            done = recall_done or judge_done
            self._skip(trace, "already_scored" if done else judge_skip or "unlabelled")
            self._release(trace_id, token)
            return Outcome.SKIPPED
        try:
            self.sink.write(scores)
        except WriteBackError as exc:
            _log.warning("%s", exc)
            self._park(trace, token, "writeback_failed", None, give_up=False)
            return Outcome.PARKED
        for family in scores.families:
            self.idempotency.mark_written(trace_id, family)
        self._record(scores)
        self._release(trace_id, token)
        return Outcome.SCORED

    def _retrieval(self, trace: RagTrace) -> RetrievalScores | None:
        if not trace.has_retrieval:
            return None
        question, matched_by = match_label(trace, self.labels)
        if question is None or matched_by is None:
            return None
        return score_retrieval(trace, question, matched_by, self.labels.version(),
                               self.settings.k, self.settings.recall_definition)

    def _judge(self, trace: RagTrace) -> tuple[JudgeOutcome | None, str | None]:
        """A judgement, or why there is none (a skip reason); ParkTrace propagates."""
        if self._scorer is None:
            return None, None
        texts = [c.text for c in trace.context]
        if not trace.answer or any(t is None for t in texts):
            return None, "context_text_missing"  # the sampler already excludes these
        outcome = self._scorer.judge_trace(trace.trace_id, trace.service, trace.answer,
                                           [t for t in texts if t is not None])
        if outcome.skipped is not None:
            return None, outcome.skipped
        return outcome, None

    def _park(self, trace: RagTrace, token: str | None, reason: str, retry_after: float | None,
              *, give_up: bool = True) -> bool:
        """Park for a retry; False (not parked) once the trace is older than give-up age. A
        lease lost meanwhile leaves the trace to its new claimant (True: nothing more to do)."""
        s = self.settings
        now = self._clock()
        age = max(0.0, now - trace.ended_ns / 1e9)
        if give_up and age >= s.give_up_after_s:
            return False
        delay = min(max(s.park_backoff_s, retry_after or 0.0, age / 2), s.park_backoff_max_s)
        if self.traces.park(trace.trace_id, now + delay, reason, token):
            self.metrics.parked(reason)
        else:
            _log.warning("lease on trace %s ran out before it was parked (another replica has "
                         "claimed it since)", trace.trace_id)
        return True

    def _record(self, scores: TraceScores) -> None:
        trace = scores.trace
        m = self.metrics
        m.trace_scored(trace.service, trace.pipeline, scores.cell.value)
        r = scores.retrieval
        if r is not None and r.answerable:
            m.retrieval(r.scores.recall, r.scores.hit_rate, r.scores.reciprocal_rank,
                        trace.service, trace.pipeline)
        g = scores.groundedness
        if g is not None and g.score is not None:
            m.groundedness(g.score, trace.service, trace.pipeline, g.judge.model or g.judge.name)
        if trace.ended_ns:
            m.scoring_delay(self._clock() - trace.ended_ns / 1e9, trace.service)
