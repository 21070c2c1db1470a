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
* A trace's metrics are counted once per family, when its scores are recorded (by the sink:
  anything but :class:`~ragtrace_consumers.errors.NotRecorded`), whether or not the delivery
  succeeds: a delivery retried after a transient failure counts nothing again (a family written
  was counted; one whose delivery failed gets a ``counted:`` mark in the same store).

Claimed traces go through three stages, so that store round trips and write-back deliveries are
paid per batch, not per trace: :meth:`Pipeline.prepare` (batched: load, recognise, sample, check
the idempotency marks, score retrieval, judge-cache lookup and budget), :meth:`Pipeline.judge`
(one trace's judge call, on any thread) and :meth:`Pipeline.finish` (batched: cache the fresh
judgements, write back in one delivery, mark, release or park).
:class:`~ragtrace_consumers.scoring.workers.ScoringWorkers` drives them concurrently;
:meth:`Pipeline.process_trace` and :meth:`Pipeline.process_due` run them in the calling thread.

:meth:`Pipeline.rescore` is the same retrieval scoring and cell for traces scored before, after
their question's label changed: their groundedness is the judgement they were given (never judged
again), and nothing is written back (the backend keeps the evaluation it was sent).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import GroundednessResult, Judge
from ragtrace.evaluation.redaction import Redactor
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace.suppression import suppressed
from ragtrace_consumers.errors import NotRecorded, WriteBackError
from ragtrace_consumers.model import (
    FAMILY_ANSWER,
    FAMILY_GROUNDEDNESS,
    FAMILY_RECALL,
    IdempotencyStore,
    JudgeBudget,
    JudgeResultCache,
    LabelStore,
    Lease,
    RagTrace,
    RetrievalScores,
    ScoreSink,
    SessionEvidence,
    SessionTurn,
    SkipLog,
    SkippedTrace,
    SpanRecord,
    TraceSampler,
    TraceScores,
    TraceStore,
    recent_turns,
)
from ragtrace_consumers.readers import Role, SpanReaders, default_readers, to_rag_trace
from ragtrace_consumers.readers.unrecognised import UnrecognisedSpans
from ragtrace_consumers.scoring.answer_judging import AnswerJob, AnswerScorer
from ragtrace_consumers.scoring.assembly import completion_due, select_roles, unread_traces
from ragtrace_consumers.scoring.batch_judging import BatchJudging
from ragtrace_consumers.scoring.judging import GroundednessScorer, JudgeJob, JudgeOutcome
from ragtrace_consumers.scoring.label_match import LabelView, match_label
from ragtrace_consumers.scoring.redaction import TraceRedaction
from ragtrace_consumers.scoring.scores import combine, score_retrieval
from ragtrace_consumers.scoring.sessions import own_turn, with_earlier_turns
from ragtrace_consumers.scoring.skips import scopes_seen, skip_detail, unscored_reason
from ragtrace_consumers.telemetry.metrics import SKIP_REASONS, ConsumerMetrics

__all__ = ["Outcome", "Pipeline", "PipelineSettings", "Planned", "TraceWork"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineSettings:
    """Scoring settings (the ``assembly``, ``scoring`` and ``judge`` config sections)."""

    quiet_s: float = 5.0
    lease_s: float = 300.0
    claim_batch: int = 64
    k: int = 5
    k_from_trace: bool = True
    recall_definition: RecallDefinition = RecallDefinition.MEAN_RECALL
    thresholds: Thresholds = field(default_factory=Thresholds)
    park_backoff_s: float = 30.0
    park_backoff_max_s: float = 600.0
    give_up_after_s: float = 86400.0
    session_turns: int = 3
    session_max_age_s: float = 1800.0

    def __post_init__(self) -> None:
        if self.quiet_s < 0 or self.lease_s <= 0 or self.claim_batch < 1 or self.k < 1:
            raise ValueError(f"invalid assembly/scoring settings: {self}")
        if self.session_turns < 0 or not self.session_max_age_s > 0:
            raise ValueError(f"invalid session settings: {self}")
        if not 0 < self.park_backoff_s <= self.park_backoff_max_s or self.give_up_after_s <= 0:
            raise ValueError(f"invalid park settings: {self}")


class Outcome(str, Enum):
    SCORED = "scored"
    SKIPPED = "skipped"
    PARKED = "parked"
    GONE = "gone"
    """Nothing stored under that ID any more (another replica finished it)."""


_RELEASED = (Outcome.SCORED, Outcome.SKIPPED, Outcome.GONE)
_COUNTED = "counted:"
"""Idempotency-name prefix of a family whose metrics were counted (``counted:recall``)."""


@dataclass(frozen=True)
class Planned:
    """What :meth:`Pipeline.prepare` decided for one sampled trace.

    ``recall``/``judge`` are the sampling decision; ``written`` the metric families already
    written back (idempotency: not written again); ``counted`` those whose metrics were already
    counted (a delivery that failed before: not counted again); ``retrieval`` the retrieval scores;
    ``job``/``answers`` the judgements still to make (stage 2 fills them in: a judged outcome,
    fresh scores or a :class:`~ragtrace_consumers.scoring.judging.Park` request), or
    ``judge_skip`` why groundedness is not judged.
    """

    trace: RagTrace
    recall: bool
    judge: bool
    written: frozenset[str] = frozenset()
    counted: frozenset[str] = frozenset()
    retrieval: RetrievalScores | None = None
    job: JudgeJob | None = None
    judge_skip: str | None = None
    answers: AnswerJob | None = None
    """Answer relevancy/correctness to score (:mod:`~ragtrace_consumers.scoring.answer_judging`)."""


@dataclass(eq=False)
class TraceWork:
    """One claimed trace between the stages of :class:`Pipeline` (read-only for callers):
    ``planned`` once sampled and prepared (stage 1), judged through its jobs (stage 2), then an
    ``outcome`` (stage 3, or earlier when it is skipped or gone). ``error`` is set when this
    trace's own processing failed: it is left to its lease."""

    trace_id: str
    token: str | None
    planned: Planned | None = None
    outcome: Outcome | None = None
    error: Exception | None = None
    turn: tuple[str, SessionTurn] | None = None
    """What this trace leaves its session's later turns (recognised traces in a session)."""

    @property
    def trace(self) -> RagTrace | None:
        return self.planned.trace if self.planned is not None else None

    @property
    def job(self) -> JudgeJob | None:
        """The groundedness judgement planned for this trace, if any."""
        return self.planned.job if self.planned is not None else None

    @property
    def needs_judge_call(self) -> bool:
        p = self.planned
        return (
            self.error is None
            and p is not None
            and ((p.job is not None and p.job.needs_call) or p.answers is not None)
        )


class Pipeline:
    """Scores assembled traces through the seams it is given. ``judge`` may run on many worker
    threads at once (each trace is claimed by exactly one); ``prepare`` and ``finish`` run one
    batch at a time per thread, and may run on different threads."""

    def __init__(
        self,
        *,
        traces: TraceStore,
        labels: LabelStore,
        cache: JudgeResultCache,
        idempotency: IdempotencyStore,
        budget: JudgeBudget,
        judge: Judge | None,
        sink: ScoreSink,
        metrics: ConsumerMetrics,
        sampler: TraceSampler,
        settings: PipelineSettings = PipelineSettings(),
        clock: Callable[[], float] = time.time,
        judge_batch: BatchJudging | None = None,
        readers: SpanReaders | None = None,
        redactor: Redactor | None = None,
        skips: SkipLog | None = None,
        sessions: SessionEvidence | None = None,
    ) -> None:
        self.traces = traces
        self._skips = skips
        self._sessions = sessions if settings.session_turns > 0 else None
        self.labels = labels
        self._labels = LabelView(labels)
        self.idempotency = idempotency
        self.sink = sink
        self.metrics = metrics
        self.sampler = sampler
        self.settings = settings
        self.judge_batch = judge_batch
        self._clock = clock
        self.readers = readers or default_readers()
        self._unrecognised = UnrecognisedSpans(
            getattr(metrics, "meter_provider", None), readers=self.readers
        )
        self._scorer = (
            None
            if judge is None
            else GroundednessScorer(judge, cache, budget, metrics, batch=judge_batch)
        )
        self._answers = None if judge is None else AnswerScorer(judge, cache, budget, metrics)
        self._redaction = (
            TraceRedaction(redactor, metrics) if redactor is not None and redactor.enabled else None
        )

    # --- intake ----------------------------------------------------------------------------
    def ingest(self, spans: Sequence[SpanRecord], now: float | None = None) -> int:
        """Store ``spans`` and (re)schedule their traces' completion; durable on return.
        Only spans worth assembling are kept (``assembly.select_spans``: never our own
        evaluation spans). Each span is read once here: its reading counts it as unrecognised,
        selects it, schedules its trace and says whether it may start a trace in the store: a
        RAG span does, and so does the root of a trace with none here
        (``assembly.unread_traces``), which is then recorded as skipped, not dropped unseen.
        Returns how many spans were handed to the store."""
        readings = [self.readers.read(s) for s in spans]
        self._unrecognised.count(spans, readings)
        read_roles = [r.role if r is not None else None for r in readings]
        given = [r is not None and bool(r.instructions or r.tool_results) for r in readings]
        selected = select_roles(spans, read_roles, given)
        witnesses, unread = unread_traces(spans, read_roles)
        selected += [(span, None) for span in witnesses]
        if selected:
            kept = [span for span, _ in selected]
            # An agent's tool-call turn is a generation that does not start the quiet period:
            # the tool calls and model calls after it may take longer than the period.
            going_on = {
                s.span_id
                for s, r in zip(spans, readings, strict=True)
                if r is not None and r.continues
            }
            roles = [
                None if role is Role.GENERATION and span.span_id in going_on else role
                for span, role in selected
            ]
            now = self._clock() if now is None else now
            due = completion_due(kept, now, self.settings.quiet_s, roles=roles)
            creates = {span.trace_id for span, role in selected if role is not None} | unread
            self.traces.append(kept, due, creates)
        return len(selected)

    def claim_due(self, now: float | None = None, limit: int | None = None) -> list[Lease]:
        """Claim due traces (at most ``claim_batch``, and at most ``limit`` when given) for
        ``lease_s``."""
        now = self._clock() if now is None else now
        batch = (
            self.settings.claim_batch if limit is None else min(limit, self.settings.claim_batch)
        )
        return list(self.traces.claim(now, batch, self.settings.lease_s))

    def process_due(self, now: float | None = None, limit: int | None = None) -> int:
        """Claim due traces and process them in this thread (as one batch); returns how many
        were claimed."""
        leases = self.claim_due(now, limit)
        if leases:
            works = self.prepare(leases)
            for work in works:
                self.judge(work)
            self.finish(works)
        return len(leases)

    # --- the three stages ----------------------------------------------------------------------
    def process_trace(self, lease: Lease | str) -> Outcome | None:
        """Score one claimed trace (see the module contract): the three stages for a batch of
        one. A bare trace ID (no token) releases or parks it whoever holds its lease. None:
        the trace's own processing failed (logged); its lease runs out and it is retried."""
        (work,) = self.prepare([lease])
        self.judge(work)
        return self.finish([work])[0]

    def prepare(self, leases: Sequence[Lease | str]) -> list[TraceWork]:
        """Stage 1, batched: load the claimed traces, recognise, sample, check what was already
        written, score retrieval, look the judgements up in the cache and reserve the judge
        budget, with one store round trip per step for the whole batch. A failure of one
        trace's own steps marks that trace (it is left to its lease); a store outage raises."""
        works = [
            TraceWork(lease.trace_id, lease.token)
            if isinstance(lease, Lease)
            else TraceWork(lease, None)
            for lease in leases
        ]
        with suppressed(), self.metrics.batch():
            loaded = self.traces.load_many([w.trace_id for w in works])
            for work, spans in zip(works, loaded, strict=True):
                self._guarded(work, self._recognise, work, spans)
            if self._sessions is not None:
                self._join_sessions(self._sessions, works)
            sampled = [
                (w, w.planned)
                for w in works
                if w.planned is not None and w.outcome is None and w.error is None
            ]
            answers = self._answers is not None and self._answers.enabled
            keys = [
                (w.trace_id, prefix + family)
                for w, p in sampled
                for family, wanted in (
                    (FAMILY_RECALL, p.recall),
                    (FAMILY_GROUNDEDNESS, p.judge),
                    (FAMILY_ANSWER, p.judge and answers),
                )
                if wanted
                for prefix in ("", _COUNTED)
            ]
            written: dict[str, set[str]] = {}
            for (trace_id, name), flag in zip(
                keys, self.idempotency.written_many(keys), strict=True
            ):
                if flag:
                    written.setdefault(trace_id, set()).add(name)
            if any(p.recall or p.judge and answers for _, p in sampled):
                self._labels.refresh()
            for work, planned in sampled:
                names = written.get(work.trace_id, set())
                done = frozenset(n for n in names if not n.startswith(_COUNTED))
                counted = frozenset(n.removeprefix(_COUNTED) for n in names) - done
                planned = replace(planned, written=done, counted=counted | done)
                self._guarded(work, self._plan, work, planned)
            if self._scorer is not None:
                jobs = [w.planned.job for w, _ in sampled if w.planned is not None]
                self._scorer.plan([j for j in jobs if j is not None])
        return works

    def judge(self, work: TraceWork) -> None:
        """Stage 2: the judge call a prepared trace still needs (blocking, with retries; any
        thread). The judge's failures become a park request, never an exception."""
        planned = work.planned
        if planned is None:
            return
        job = planned.job
        if self._scorer is not None and job is not None and job.needs_call:
            try:
                with suppressed(), self.metrics.batch():
                    self._guarded(work, self._scorer.run, job)
            finally:
                job.done.set()  # never leave a follower of this job waiting
        if self._answers is not None and planned.answers is not None:
            with suppressed(), self.metrics.batch():
                self._guarded(work, self._answers.run, planned.answers)

    def finish(self, works: Sequence[TraceWork]) -> list[Outcome | None]:
        """Stage 3, batched: cache the fresh judgements, write every score back in one delivery,
        then mark them written and release the traces (one round trip each), or park. Returns
        each trace's outcome: None for a trace whose own processing failed (its lease runs
        out and it is retried). A store outage raises: the leases run out, nothing is lost."""
        with suppressed(), self.metrics.batch():
            if self._scorer is not None:
                jobs = [w.planned.job for w in works if w.planned is not None]
                self._scorer.store([j for j in jobs if j is not None])
            to_write: list[tuple[TraceWork, TraceScores]] = []
            for work in works:
                if work.error is None and work.outcome is None:
                    scores = self._guarded(work, self._combine, work)
                    if scores is not None:
                        to_write.append((work, scores))
            errors = self.sink.write_many([scores for _, scores in to_write])
            marks: list[tuple[str, str]] = []
            recorded: list[tuple[TraceScores, frozenset[str]]] = []
            for (work, scores), error in zip(to_write, errors, strict=True):
                assert work.planned is not None
                fresh = frozenset(scores.families) - work.planned.counted
                if error is None:
                    marks += [(work.trace_id, family) for family in scores.families]
                    recorded.append((scores, fresh))
                    work.outcome = Outcome.SCORED
                    continue
                if not isinstance(error, NotRecorded):
                    # Recorded, not delivered: counted now, marked so the retry does not count.
                    marks += [(work.trace_id, _COUNTED + family) for family in fresh]
                    recorded.append((scores, fresh))
                _log.warning("%s", error)
                work.outcome = self._park(work, "writeback_failed", None, give_up=False)
            # Marked only after delivery: a crash in between re-sends the identical span.
            self.idempotency.mark_written_many(marks)
            for scores, fresh in recorded:
                work = TraceWork(scores.trace.trace_id, None)
                self._guarded(work, self._record, scores, fresh)
            done = [w for w in works if w.outcome in _RELEASED]
            released = self.traces.release_many([(w.trace_id, w.token) for w in done])
            for work, ok in zip(done, released, strict=True):
                if not ok:
                    _log.warning(
                        "lease on trace %s ran out before it was released (another "
                        "replica has claimed it since; consider a longer "
                        "assembly.lease_s)",
                        work.trace_id,
                    )
        return [w.outcome if w.error is None else None for w in works]

    def rescore(
        self,
        items: Sequence[tuple[RagTrace, GroundednessResult | None, float]],
        record: Callable[[TraceScores], None],
    ) -> list[TraceScores | None]:
        """Score each (trace, its groundedness, that judgement's cost) again against the label
        set as it is now: retrieval through the same steps as :meth:`prepare`, the cell beside
        the groundedness given. Each result is handed to ``record`` (which keeps it, raising
        :class:`~ragtrace_consumers.errors.WriteBackError` when it cannot), then its retrieval
        scores are counted in the metrics (not another trace scored). None for a trace no
        labelled question matches now, or whose result was not kept."""
        with suppressed(), self.metrics.batch():
            labels = LabelView(self.labels)  # its own view: the workers' one is theirs
            labels.refresh()
            out: list[TraceScores | None] = []
            for trace, groundedness, cost in items:
                retrieval = self._retrieval(trace, labels)
                if retrieval is None:
                    out.append(None)
                    continue
                scores = combine(
                    trace,
                    retrieval,
                    groundedness,
                    self.settings.thresholds,
                    groundedness_cost_usd=cost,
                )
                try:
                    if scores is not None:
                        record(scores)
                except WriteBackError as exc:
                    _log.warning("re-scored trace %s not kept: %s", trace.trace_id, exc)
                    scores = None
                if scores is not None:
                    self._record_retrieval(trace, retrieval)
                out.append(scores)
        return out

    def _guarded(self, work: TraceWork, step: Callable[..., Any], *args: Any) -> Any:
        """Run one trace's own step. An unexpected failure there (a bug, not a store outage:
        those come from the batched calls and fail the batch) marks only that trace."""
        if work.error is not None:
            return None
        try:
            return step(*args)
        except Exception as exc:  # noqa: BLE001 - one bad trace never fails its batch
            _log.error(
                "scoring trace %s failed; it will be retried after its lease",
                work.trace_id,
                exc_info=True,
            )
            work.error = exc
            return None

    def _skip(self, trace: RagTrace, reason: str) -> None:
        assert reason in SKIP_REASONS, reason
        self.metrics.trace_skipped(trace.service, trace.pipeline, reason)
        self._log_skip(trace.trace_id, trace.service, reason, trace)

    def _log_skip(
        self,
        trace_id: str,
        service: str,
        reason: str,
        trace: RagTrace | None,
        scopes: Sequence[str] = (),
    ) -> None:
        if self._skips is None:
            return
        detail = skip_detail(trace, reason, scopes)
        entry = SkippedTrace(trace_id, service, reason, detail, self._clock())
        try:
            self._skips.skipped(entry)
        except Exception:  # noqa: BLE001 - the log is for people; scoring goes on without it
            _log.warning("could not record skipped trace %s", trace_id, exc_info=True)

    def _recognise(self, work: TraceWork, spans: list[SpanRecord]) -> None:
        if not spans:
            work.outcome = Outcome.GONE
            return
        trace = to_rag_trace(spans, self.readers)
        if trace is None:
            service = spans[0].service
            reason = unscored_reason(spans, self.readers)
            self.metrics.trace_seen(service, None)
            self.metrics.trace_skipped(service, None, reason)
            self._log_skip(spans[0].trace_id, service, reason, None, scopes_seen(spans))
            work.outcome = Outcome.SKIPPED
            return
        self.metrics.trace_seen(trace.service, trace.pipeline)
        work.turn = own_turn(trace)
        decision = self.sampler.decide(trace)
        if not (decision.recall or decision.judge):
            self._skip(trace, decision.reason or "sampled_out")
            work.outcome = Outcome.SKIPPED
            return
        self.metrics.trace_sampled(trace.service, trace.pipeline)
        work.planned = Planned(trace, bool(decision.recall), bool(decision.judge))

    def _join_sessions(self, sessions: SessionEvidence, works: Sequence[TraceWork]) -> None:
        """Give each trace to be judged its session's earlier turns, those stored and those in
        this batch, then record each recognised turn's own evidence
        (:mod:`~ragtrace_consumers.scoring.sessions`): two round trips for the batch. Looked up
        before recording, so a turn never pushes out the turns it is to be judged with."""
        s = self.settings
        judged = [
            (w, w.planned.trace)
            for w in works
            if w.planned is not None
            and w.planned.judge
            and w.error is None
            and w.planned.trace.session_id is not None
        ]
        found = sessions.recent_many(
            [(str(t.session_id), t.ended_ns) for _, t in judged],
            s.session_turns,
            s.session_max_age_s,
        )
        batch = [w.turn for w in works if w.turn is not None]
        for (work, trace), stored in zip(judged, found, strict=True):
            assert work.planned is not None
            here = [turn for sid, turn in batch if sid == trace.session_id]
            turns = recent_turns(
                list({t.trace_id: t for t in [*stored, *here]}.values()),
                trace.ended_ns,
                s.session_turns,
                s.session_max_age_s,
            )
            if turns:
                work.planned = replace(work.planned, trace=with_earlier_turns(trace, turns))
        sessions.record_many(batch)

    def _plan(self, work: TraceWork, planned: Planned) -> None:
        trace = planned.trace
        retrieval = self._retrieval(trace) if planned.recall else None
        answers = None
        if planned.judge and FAMILY_ANSWER not in planned.written and self._answers is not None:
            answers = self._answers.job(trace, self._labels)
        if self._redaction is not None:
            # The one redaction seam: from here on (judges, cache, sinks) only redacted text.
            trace, answers = self._redaction(trace, answers)
        work.planned = planned = replace(planned, trace=trace, retrieval=retrieval, answers=answers)
        if not planned.judge or FAMILY_GROUNDEDNESS in planned.written or self._scorer is None:
            return
        texts = [c.text for c in trace.context]
        if not trace.answer or any(t is None for t in texts):
            # the sampler already excludes these
            work.planned = replace(planned, judge_skip="context_text_missing")
            return
        job = self._scorer.job(
            trace.trace_id, trace.service, trace.answer, [t for t in texts if t is not None]
        )
        work.planned = replace(planned, job=job)

    def _combine(self, work: TraceWork) -> TraceScores | None:
        """The scores to write, or None after parking or skipping the trace."""
        planned = work.planned
        assert planned is not None
        trace = planned.trace
        judged: JudgeOutcome | None = None
        judge_skip = planned.judge_skip
        job = planned.job
        park = job.park if job is not None and job.park is not None else None
        if park is None and planned.answers is not None:
            park = planned.answers.park
        if park is not None:
            if self._park(work, park.reason, park.retry_after) is Outcome.PARKED:
                work.outcome = Outcome.PARKED
                return None
            if job is not None and job.park is not None:
                judge_skip = "judge_gave_up"
        elif job is not None and job.outcome is not None:
            if job.outcome.skipped is not None:
                judge_skip = job.outcome.skipped
            else:
                judged = job.outcome
        groundedness: GroundednessResult | None = judged.result if judged else None
        retrieval = planned.retrieval
        recall_done = FAMILY_RECALL in planned.written
        scores = combine(
            trace,
            retrieval,
            groundedness,
            self.settings.thresholds,
            write_retrieval=retrieval is not None and not recall_done,
            write_groundedness=groundedness is not None,
            groundedness_cost_usd=judged.cost_usd if judged else 0.0,
            answers=planned.answers.scores if planned.answers is not None else None,
        )
        if scores is None:
            done = recall_done or FAMILY_GROUNDEDNESS in planned.written
            self._skip(trace, "already_scored" if done else judge_skip or "unlabelled")
            work.outcome = Outcome.SKIPPED
        return scores

    def _retrieval(
        self, trace: RagTrace, labels: LabelView | None = None
    ) -> RetrievalScores | None:
        if not trace.has_retrieval or trace.recall_na_reason:
            return None  # content-hash chunk IDs: recall is n/a (the reason is written back)
        view = self._labels if labels is None else labels
        question, matched_by = match_label(trace, view)
        if question is None or matched_by is None:
            return None
        return score_retrieval(
            trace,
            question,
            matched_by,
            view.version(),
            self.settings.k,
            self.settings.recall_definition,
            k_from_trace=self.settings.k_from_trace,
        )

    def _park(
        self, work: TraceWork, reason: str, retry_after: float | None, *, give_up: bool = True
    ) -> Outcome | None:
        """Park for a retry: PARKED, or None (not parked) once the trace is older than the
        give-up age. A lease lost meanwhile leaves the trace to its new claimant (PARKED too:
        nothing more to do here)."""
        assert work.planned is not None
        trace = work.planned.trace
        s = self.settings
        now = self._clock()
        age = max(0.0, now - trace.ended_ns / 1e9)
        if give_up and age >= s.give_up_after_s:
            return None
        delay = min(max(s.park_backoff_s, retry_after or 0.0, age / 2), s.park_backoff_max_s)
        if self.traces.park(trace.trace_id, now + delay, reason, work.token):
            self.metrics.parked(reason)
        else:
            _log.warning(
                "lease on trace %s ran out before it was parked (another replica has "
                "claimed it since)",
                trace.trace_id,
            )
        return Outcome.PARKED

    def _record(self, scores: TraceScores, fresh: frozenset[str]) -> None:
        """Count the metrics of the ``fresh`` families of ``scores`` (not counted before)."""
        if not fresh:
            return
        trace = scores.trace
        m = self.metrics
        judged = scores.groundedness
        m.trace_scored(
            trace.service,
            trace.pipeline,
            scores.cell.value,
            generator_model=trace.model,
            k=scores.retrieval.scores.k if scores.retrieval is not None else None,
            judge_model=(judged.judge.model or judged.judge.name) if judged is not None else None,
        )
        r = scores.retrieval if FAMILY_RECALL in fresh else None
        if r is not None:
            self._record_retrieval(trace, r)
        g = scores.groundedness if FAMILY_GROUNDEDNESS in fresh else None
        if g is not None and g.score is not None:
            m.groundedness(
                g.score,
                trace.service,
                trace.pipeline,
                g.judge.model or g.judge.name,
                generator_model=trace.model,
                failed=g.score < self.settings.thresholds.groundedness,
            )
        if scores.answers is not None and FAMILY_ANSWER in fresh and self._answers is not None:
            self._answers.record(scores.answers, trace.service, trace.pipeline)
        if trace.ended_ns:
            m.scoring_delay(self._clock() - trace.ended_ns / 1e9, trace.service)

    def _record_retrieval(self, trace: RagTrace, r: RetrievalScores) -> None:
        if r.answerable:  # an unanswerable question's NaN stays out of the histograms
            self.metrics.retrieval(
                r.scores.recall,
                r.scores.hit_rate,
                r.scores.reciprocal_rank,
                trace.service,
                trace.pipeline,
                k=r.scores.k,
                data_source=trace.data_source,
            )
