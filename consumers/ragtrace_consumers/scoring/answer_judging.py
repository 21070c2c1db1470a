"""Answer relevancy and answer correctness of live traces that carry a reference answer.

A trace is scored for the answer metrics when it is sampled for judging (like groundedness),
has an answer, and carries a reference answer: its own ``ragtrace.reference_answer`` (set by
the app on any span), else the ``reference_answer`` of the labelled question it matches. The
extra judge calls are paid only for traffic someone wrote a reference for. Then:

* **answer relevancy** (question vs answer) when the trace has its query text and the judge can
  compute it (a model judge; the lexical judge cannot, and relevancy is left out);
* **answer correctness** (answer vs the reference answer; the lexical judge reports token F1).

Definitions: :mod:`ragtrace.evaluation.judges.answer_metrics`. Each call goes through the judge
result cache (keyed by metric, question, answer, reference, judge model and prompt hash; a
replay of the same trace re-uses the verdict and reports the cost it paid, so the evaluation
span is identical), the shared judge budget (a paid judge only; a spent budget
leaves the metrics out for that trace) and bounded retries; a judge that stays unreachable
asks the pipeline to park the trace (:class:`~ragtrace_consumers.scoring.judging.ParkTrace`). Judge mode
``batch`` applies to groundedness only: these calls are synchronous.

The written family is :data:`~ragtrace_consumers.model.FAMILY_ANSWER` (one idempotency
mark for both metrics); the value written is :class:`~ragtrace_consumers.model.AnswerScores`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace.evaluation.judges import (
    Judge,
    JudgeCapabilityError,
    MetricResult,
)
from ragtrace.evaluation.judges.answer_metrics import CORRECTNESS_SHA256, RELEVANCY_SHA256
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import (
    METRIC_CORRECTNESS,
    METRIC_RELEVANCY,
    REFERENCE_FROM_LABEL,
    REFERENCE_FROM_SPAN,
    AnswerScores,
    JudgeBudget,
    JudgeResultCache,
    LabelLookup,
    RagTrace,
)
from ragtrace_consumers.scoring.judging import (
    Park,
    ParkTrace,
    cache_model,
    is_paid,
    judged_or_parked,
    record_judge_result,
)
from ragtrace_consumers.scoring.label_match import match_label
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["AnswerJob", "AnswerScorer"]

_log = logging.getLogger(__name__)
_TOKENS_OVERHEAD = 900  # the instructions and tool schema of one answer-metric call
# A changed prompt template is a different judgement: its hash is part of the cache key.
_PROMPTS = {METRIC_RELEVANCY: RELEVANCY_SHA256, METRIC_CORRECTNESS: CORRECTNESS_SHA256}


@dataclass(eq=False)
class AnswerJob:
    """One trace's answer metrics on their way through :meth:`AnswerScorer.run`: it ends with
    ``scores``, ``park`` or neither (nothing could be scored: budget spent)."""

    trace_id: str
    service: str
    question_id: str | None
    question: str | None
    answer: str
    reference: str
    reference_source: str
    scores: AnswerScores | None = None
    park: Park | None = None


def _cache_key(metric: str, parts: Sequence[str]) -> str:
    blob = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    return f"{metric}:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


class AnswerScorer:
    """Scores the answer metrics with ``judge`` (needs ``answer_relevancy`` and
    ``answer_correctness``, the :class:`~ragtrace.evaluation.judges.AnswerJudge` seam; a judge
    without them scores nothing). Thread-safe as long as the judge and the stores are."""

    def __init__(
        self,
        judge: Judge,
        cache: JudgeResultCache,
        budget: JudgeBudget,
        metrics: ConsumerMetrics,
    ) -> None:
        self._judge = judge
        self._cache = cache
        self._budget = budget
        self._metrics = metrics
        self._model = cache_model(judge)
        self._paid = is_paid(judge)
        self.enabled = callable(getattr(judge, "answer_relevancy", None)) and callable(
            getattr(judge, "answer_correctness", None)
        )
        self._relevancy_possible = True

    def job(self, trace: RagTrace, labels: LabelLookup) -> AnswerJob | None:
        """The job for a trace sampled for judging, or None when it has nothing to score: no
        answer, or no reference answer (neither its own nor its labelled question's)."""
        if not self.enabled or not trace.answer:
            return None
        question, _ = match_label(trace, labels)
        qid = question.qid if isinstance(question, LabelledQuestion) else None
        if trace.reference_answer:
            reference, source = trace.reference_answer, REFERENCE_FROM_SPAN
        elif isinstance(question, LabelledQuestion) and question.reference_answer is not None:
            reference, source = question.reference_answer, REFERENCE_FROM_LABEL
        else:
            return None
        return AnswerJob(
            trace.trace_id, trace.service, qid, trace.query, trace.answer, reference, source
        )

    def run(self, job: AnswerJob) -> None:
        """Score the job's metrics (blocking: cache, budget, one judge call each). Never raises
        for the judge's failures: they become ``job.park``."""
        try:
            relevancy, r_cost = (
                self._metric(job, METRIC_RELEVANCY, (job.question, job.answer))
                if job.question and self._relevancy_possible
                else (None, 0.0)
            )
            correctness, c_cost = self._metric(
                job, METRIC_CORRECTNESS, (job.question or "", job.answer, job.reference)
            )
        except ParkTrace as exc:
            job.park = exc.park
            return
        if relevancy is not None or correctness is not None:
            job.scores = AnswerScores(
                job.question_id, relevancy, correctness, r_cost + c_cost, job.reference_source
            )

    def record(self, scores: AnswerScores, service: str, pipeline: str | None) -> None:
        """The score metrics of a written trace."""
        for m in scores.results:
            if m.score is not None:
                self._metrics.answer_metric(
                    m.metric, m.score, service, pipeline, m.judge.model or m.judge.name
                )

    def _metric(
        self, job: AnswerJob, metric: str, args: tuple[str, ...]
    ) -> tuple[MetricResult | None, float]:
        """(result, what this trace paid), from the cache or one judge call; (None, 0) when
        the judge cannot compute it or the budget is spent. Raises ParkTrace."""
        key = _cache_key(metric, (*args, self._model, _PROMPTS[metric]))
        hit = self._cached(key)
        if hit is not None:
            result, payer = hit
            self._metrics.judge_call(self._reported_model(), "cached")
            return result, result.cost_usd if payer == job.trace_id else 0.0
        tokens = sum(len(a) for a in args) // 4 + _TOKENS_OVERHEAD
        if self._paid and not self._budget.try_acquire(1, tokens):
            self._metrics.budget_exhausted(job.service)
            return None, 0.0
        try:
            result = self._call(metric, args)
        except JudgeCapabilityError:
            self._relevancy_possible = metric != METRIC_RELEVANCY
            return None, 0.0
        served = result.judge.model or result.judge.name
        if record_judge_result(self._metrics, served, result, usage=self._paid):
            payload = {"trace_id": job.trace_id, "result": result.to_dict()}
            try:
                self._cache.put_many([(key, json.dumps(payload).encode("utf-8"))])
            except Exception:  # noqa: BLE001 - a cache outage costs money, not correctness
                _log.warning("judge cache write failed", exc_info=True)
        return result, result.cost_usd

    def _reported_model(self) -> str:
        """The judge model label of calls without a result of their own: the judge's identity
        (its configured model), as the groundedness scorer reports them."""
        info = getattr(self._judge, "info", None)
        return str(getattr(info, "model", None) or getattr(info, "name", None) or self._model)

    def _call(self, metric: str, args: tuple[str, ...]) -> MetricResult:
        """One judge call; :class:`ParkTrace` when it fails (:func:`judged_or_parked`); a judge
        that cannot judge ``metric`` at all says so by raising."""
        method = getattr(self._judge, metric)
        result: MetricResult = judged_or_parked(
            lambda: method(*args),
            self._metrics,
            self._judge,
            self._reported_model(),
            f"{metric} judge",
            (JudgeCapabilityError,),
        )
        return result

    def _cached(self, key: str) -> tuple[MetricResult, str | None] | None:
        try:
            (raw,) = self._cache.get_many([key])
            if raw is None:
                return None
            payload = json.loads(raw)
            return MetricResult.from_dict(payload["result"]), payload.get("trace_id")
        except Exception:  # noqa: BLE001 - an unreadable entry or a cache outage is a miss
            _log.warning("ignoring unreadable judge cache entry %s", key, exc_info=True)
            return None
