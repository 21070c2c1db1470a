"""One groundedness judgement for the consumers: cache first, then budget, then one judge call;
a judge that cannot answer within its time budget asks the caller to park the trace.

The judge is built from the ``judge`` settings by :func:`judge_from_settings` (one
:class:`~ragtrace.evaluation.judges.JudgeSpec`). Retries belong to the judge alone
(:mod:`ragtrace.evaluation.judges.model.retry`: a total time budget per judgement): the scorer calls
it once and parks the trace on :class:`~ragtrace.evaluation.judges.JudgeUnavailable`, so a
judgement never takes longer than that budget (the lease is sized from it, see ``workers``).

The cache key is the SHA-256 of (answer, context texts, judge model, prompt hash): a repeated
answer over the same context costs nothing. The model in the key, and in every metric label, is
the judge's configured model (``judge.info``, fixed for the judge's life), never the model the
API reports having served (an alias resolves to a dated ID), which is kept on the result only.
Only real scores are cached, never errors. A cached entry remembers the trace that paid for it,
so replaying that same trace (after a crash) reports the original cost and yields an identical
evaluation span, while another trace reusing it reports a cost of 0.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ragtrace.errors import RagtraceError
from ragtrace.evaluation.judges import (
    TOO_LARGE,
    GroundednessResult,
    Judge,
    JudgeLimits,
    JudgeSpec,
    JudgeUnavailable,
    MetricResult,
    is_too_large,
    make_judge,
)
from ragtrace.evaluation.judges.error_types import judge_error_type
from ragtrace.evaluation.judges.spec import GEN_AI_PROVIDER_NAMES
from ragtrace_consumers.model import JudgeBudget, JudgeResultCache
from ragtrace_consumers.scoring.batch_judging import PARK_BATCH_PENDING, BatchJudging
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = [
    "GroundednessScorer",
    "JudgeJob",
    "JudgeOutcome",
    "JudgeSettingsLike",
    "Park",
    "ParkTrace",
    "cache_model",
    "is_paid",
    "judge_cache_key",
    "judge_from_settings",
    "judged_or_parked",
    "record_judge_result",
    "spec_from_settings",
]

_log = logging.getLogger(__name__)
# Tokens of the judge's fixed instructions and tool schema, added to the content estimate.
_PROMPT_OVERHEAD_TOKENS = 1200
_OUTPUT_ESTIMATE_TOKENS = 400


class JudgeSettingsLike(Protocol):
    """The judge keys :func:`spec_from_settings` reads (the config's ``judge`` section)."""

    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def budget_s(self) -> float: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def region(self) -> str | None: ...
    @property
    def project(self) -> str | None: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def output_mode(self) -> str: ...
    @property
    def max_units(self) -> int: ...
    @property
    def max_answer_chars(self) -> int: ...
    @property
    def max_context_chars(self) -> int: ...
    @property
    def max_prompt_tokens(self) -> int: ...


def spec_from_settings(settings: JudgeSettingsLike) -> JudgeSpec:
    """The :class:`JudgeSpec` of the ``judge`` settings (``name``, ``provider``, ``model``, the
    connection keys ``region``, ``project``, ``base_url``, ``output_mode``, and the limits
    ``timeout_s``, ``budget_s``, the bounds ``max_units``, ``max_answer_chars``,
    ``max_context_chars``, ``max_prompt_tokens``). Credentials are not settings: each provider's client reads its
    own variables."""
    return JudgeSpec(
        settings.name,
        model=settings.model,
        timeout_s=settings.timeout_s,
        budget_s=settings.budget_s,
        provider=settings.provider,
        region=settings.region,
        project=settings.project,
        base_url=settings.base_url,
        output_mode=settings.output_mode,
        limits=JudgeLimits(
            max_units=settings.max_units,
            max_answer_chars=settings.max_answer_chars,
            max_context_chars=settings.max_context_chars,
            max_prompt_tokens=settings.max_prompt_tokens,
        ),
    )


def judge_from_settings(settings: JudgeSettingsLike) -> Judge:
    """The judge the ``judge`` settings describe (ValueError: e.g. anthropic without a key)."""
    return make_judge(spec_from_settings(settings))


def provider_of(judge: object) -> str:
    """The ``gen_ai.provider.name`` of ``judge``'s calls (its info's provider; Anthropic when it
    names none, as the judge results do)."""
    provider = getattr(getattr(judge, "info", None), "provider", None)
    return GEN_AI_PROVIDER_NAMES.get(provider or "anthropic", str(provider))


def record_judge_result(
    metrics: ConsumerMetrics,
    model: str,
    result: GroundednessResult | MetricResult,
    *,
    usage: bool = True,
) -> bool:
    """Count one judge result under ``model``: its usage (tokens, cost, latency; unless
    ``usage`` is False) and the call's outcome. True when the result is usable (no error)."""
    if usage:
        metrics.judge_usage(
            model,
            result.usage.input_tokens,
            result.usage.output_tokens,
            result.usage.cache_read_input_tokens,
            result.usage.cache_creation_input_tokens,
            result.cost_usd,
            result.latency_s,
            provider=GEN_AI_PROVIDER_NAMES[result.judge.provider or "anthropic"],
            error_type=None if result.error is None else judge_error_type(result.error),
            response_model=result.served_model,
        )
    if result.error is not None:
        metrics.judge_call(model, "error")
        metrics.judge_error(model, TOO_LARGE if is_too_large(result.error) else "invalid_output")
        return False
    metrics.judge_call(model, "ok")
    return True


_R = TypeVar("_R")


def judged_or_parked(
    call: Callable[[], _R],
    metrics: ConsumerMetrics,
    judge: object,
    model: str,
    what: str = "judge",
    passthrough: tuple[type[Exception], ...] = (),
) -> _R:
    """One judge call's result, or :class:`ParkTrace` when it fails, counted under ``model`` and
    logged once naming ``what``. ``JudgeUnavailable`` parks for the ``retry-after`` the API
    asked (``judge_unavailable``); any other exception but ``passthrough`` parks as
    ``judge_failed``, so one bad trace never kills the loop. The judge retries within its own
    time budget (its one retry owner): there is no second loop here."""
    start = time.perf_counter()
    try:
        return call()
    except passthrough:
        raise
    except JudgeUnavailable as exc:
        metrics.judge_call_failed(
            model, time.perf_counter() - start, judge_error_type(str(exc)), provider_of(judge)
        )
        metrics.judge_call(model, "unavailable")
        metrics.judge_error(model, "unavailable")
        _log.warning("%s unavailable, parking the trace: %s", what, exc)
        raise ParkTrace("judge_unavailable", exc.retry_after) from None
    except Exception as exc:  # noqa: BLE001 - one bad trace never kills the loop
        metrics.judge_call(model, "error")
        metrics.judge_error(model, "exception")
        _log.warning("%s call failed, parking the trace: %r", what, exc)
        raise ParkTrace("judge_failed") from None


def judge_cache_key(answer: str, context: Sequence[str], model: str, prompt_sha256: str) -> str:
    """The cache key of one judgement (hex SHA-256 of a canonical JSON encoding)."""
    blob = json.dumps(
        [answer, list(context), model, prompt_sha256], ensure_ascii=False, separators=(",", ":")
    )
    return "groundedness:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Park:
    """A request to park the trace and retry it after ``retry_after`` seconds (None: the
    caller's own backoff). ``reason`` is a bounded metric label. A job keeps this value; only
    :meth:`GroundednessScorer.judge_trace` (one trace, no job kept) raises it as
    :class:`ParkTrace`."""

    reason: str
    retry_after: float | None = None


class ParkTrace(RagtraceError):
    """The judge could not answer now: ``park`` says why and when to retry."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.park = Park(reason, retry_after)
        self.reason = reason
        self.retry_after = retry_after


@dataclass(frozen=True)
class JudgeOutcome:
    """A judgement (``result``) or why there is none (``skipped``: a bounded reason)."""

    result: GroundednessResult | None
    skipped: str | None = None
    cached: bool = False
    cost_usd: float = 0.0

    def __post_init__(self) -> None:
        if (self.result is None) == (self.skipped is None):
            raise ValueError("JudgeOutcome has a result or a skip reason, not both or neither")


@dataclass(eq=False)
class JudgeJob:
    """One judgement on its way through :meth:`GroundednessScorer.plan`, ``run`` and ``store``:
    it ends with an ``outcome`` or a ``park`` request."""

    trace_id: str
    service: str
    answer: str
    context: tuple[str, ...]
    key: str = ""
    tokens: int = 0
    outcome: JudgeOutcome | None = None
    park: Park | None = None
    payload: bytes | None = field(default=None, repr=False)
    """The cache entry to write once the batch is stored (fresh real scores only)."""
    leader: JudgeJob | None = field(default=None, repr=False)
    """An earlier job of the same batch with the same key: its fresh score is reused."""
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    fresh: bool = False
    """A real score from this job's own call (reusable by followers, cached)."""

    @property
    def needs_call(self) -> bool:
        return self.outcome is None and self.park is None


def _model_of(judge: Judge) -> str:
    info = judge.info
    return info.model or info.name


def is_paid(judge: Judge) -> bool:
    """Whether calls to ``judge`` cost money, so the call budget applies: True unless the
    judge declares ``paid = False`` (the lexical judge: local, free, instant)."""
    return bool(getattr(judge, "paid", True))


def cache_model(judge: Judge) -> str:
    """The model name judgements of ``judge`` are cached and counted under: its configured
    model (``judge.info.model``), else its name for a model-free judge."""
    return _model_of(judge)


class GroundednessScorer:
    """Judges one (answer, context) with the cache, the shared call budget and one judge call
    (the judge owns its retries and time budget; see the module doc).

    Thread-safe as long as the judge and the stores are. The call budget limits paid judges
    only (:func:`is_paid`): a free judge is never skipped as ``budget_exhausted``.
    """

    def __init__(
        self,
        judge: Judge,
        cache: JudgeResultCache,
        budget: JudgeBudget,
        metrics: ConsumerMetrics,
        *,
        batch: BatchJudging | None = None,
    ) -> None:
        self._judge = judge
        self._cache = cache
        self._budget = budget
        self._metrics = metrics
        self._cache_model = cache_model(judge)
        self._paid = is_paid(judge)
        self._batch = batch  # judge.mode batch: misses wait in a Message Batch (batch_judging)
        metrics.ensure_judge(_model_of(judge))

    @property
    def judge(self) -> Judge:
        return self._judge

    def judge_trace(
        self, trace_id: str, service: str, answer: str, context: Sequence[str]
    ) -> JudgeOutcome:
        """A judgement, a skip (budget spent), or :class:`ParkTrace` raised."""
        job = self.job(trace_id, service, answer, context)
        self.plan([job])
        self.run(job)
        self.store([job])
        if job.park is not None:
            raise ParkTrace(job.park.reason, job.park.retry_after)
        assert job.outcome is not None
        return job.outcome

    def job(self, trace_id: str, service: str, answer: str, context: Sequence[str]) -> JudgeJob:
        """A job for one (answer, context), its cache key and token estimate filled in."""
        ctx = tuple(context)
        key = judge_cache_key(answer, ctx, self._cache_model, self._judge.info.prompt_sha256)
        tokens = (
            (len(answer) + sum(len(c) for c in ctx)) // 4
            + _PROMPT_OVERHEAD_TOKENS
            + _OUTPUT_ESTIMATE_TOKENS
        )
        job = JudgeJob(trace_id, service, answer, ctx, key, tokens)
        self._refuse_too_large(job)
        return job

    def _refuse_too_large(self, job: JudgeJob) -> None:
        """A trace beyond the judge's bounds gets its ``too_large`` result now, before the
        cache, the budget or a batch see it: no call, no queue, counted as a judge error with
        reason ``too_large`` (:mod:`ragtrace.evaluation.judges.bounds`)."""
        refusal = getattr(self._judge, "refusal", None)
        reason = refusal(job.answer, job.context) if callable(refusal) else None
        if reason is None:
            return
        _log.warning("trace %s too large to judge: %s", job.trace_id, reason)
        result = GroundednessResult.failed(reason, self._judge.info)
        record_judge_result(self._metrics, self._cache_model, result, usage=False)
        job.outcome = JudgeOutcome(result)
        job.done.set()

    def plan(self, jobs: Sequence[JudgeJob]) -> None:
        """Answer what the cache knows (one lookup for all) and reserve the budget for the
        rest (one reservation when it covers them all); a job left without an outcome needs
        :meth:`run`."""
        jobs = [j for j in jobs if j.needs_call]
        if not jobs:
            return
        model = self._cache_model
        for job, hit in zip(jobs, self._cached([j.key for j in jobs]), strict=True):
            if hit is not None:
                result, payer = hit
                self._metrics.judge_call(model, "cached")
                job.outcome = JudgeOutcome(
                    result, cached=True, cost_usd=result.cost_usd if payer == job.trace_id else 0.0
                )
                self._count_injection(job)
                job.done.set()
        # The same answer and context twice in one batch: one call; the later jobs follow the
        # first (and reserve budget only if they end up calling themselves).
        leaders: dict[str, JudgeJob] = {}
        misses = []
        for job in jobs:
            if job.needs_call and self._batch is not None and self._batch.is_pending(job.key):
                job.park = Park(PARK_BATCH_PENDING, self._batch.poll_every_s)
                job.done.set()  # already submitted: wait for it, no budget spent again
                continue
            if job.needs_call:
                job.leader = leaders.setdefault(job.key, job)
                if job.leader is job:
                    job.leader = None
                    misses.append(job)
        if (
            not self._paid
            or len(misses) > 1
            and self._budget.try_acquire(len(misses), sum(j.tokens for j in misses))
        ):
            return
        for job in misses:
            if not self._budget.try_acquire(1, job.tokens):
                self._metrics.budget_exhausted(job.service)
                job.outcome = JudgeOutcome(None, skipped="budget_exhausted")
                job.done.set()

    def run(self, job: JudgeJob) -> None:
        """Call the judge for a planned job (blocking, at most the judge's time budget); never
        raises for the judge's failures: they become ``job.park``."""
        try:
            self._run(job)
        finally:
            job.done.set()

    def _run(self, job: JudgeJob) -> None:
        if not job.needs_call:
            return
        model = self._cache_model
        leader = job.leader
        if leader is not None:
            leader.done.wait()  # started first: jobs are run in batch order
            if leader.fresh and leader.outcome is not None:
                self._metrics.judge_call(model, "cached")
                job.outcome = JudgeOutcome(leader.outcome.result, cached=True)
                self._count_injection(job)
                return
            if self._paid and not self._budget.try_acquire(1, job.tokens):  # no reusable score
                self._metrics.budget_exhausted(job.service)
                job.outcome = JudgeOutcome(None, skipped="budget_exhausted")
                return
        if self._batch is not None:
            self._batch.submit_later(job)
            job.park = Park(PARK_BATCH_PENDING, self._batch.poll_every_s)
            return
        try:
            result = self._call(model, job.answer, job.context)
        except ParkTrace as exc:
            job.park = exc.park
            return
        # Counted under the configured model: the served one is on the result only (module doc).
        # A free judge (the lexical one) calls no model: no tokens, cost or GenAI client metrics.
        if record_judge_result(self._metrics, model, result, usage=self._paid):
            job.payload = json.dumps(
                {"trace_id": job.trace_id, "result": result.to_dict()}, separators=(",", ":")
            ).encode("utf-8")
            job.fresh = True
        job.outcome = JudgeOutcome(result, cost_usd=result.cost_usd)
        self._count_injection(job)

    def _count_injection(self, job: JudgeJob) -> None:
        result = job.outcome.result if job.outcome is not None else None
        if result is not None and result.injection_suspected:
            self._metrics.injection_suspected(job.service)

    def store(self, jobs: Sequence[JudgeJob]) -> None:
        """Cache the fresh real scores of ``jobs`` (one write for all)."""
        items = [(j.key, j.payload) for j in jobs if j.payload is not None]
        try:
            if items:
                self._cache.put_many(items)
        except Exception:  # noqa: BLE001 - a cache outage costs money, not correctness
            _log.warning("judge cache write failed", exc_info=True)
        for job in jobs:
            job.payload = None

    def _cached(self, keys: Sequence[str]) -> list[tuple[GroundednessResult, str | None] | None]:
        try:
            raws = self._cache.get_many(keys) if keys else []
        except Exception:  # noqa: BLE001 - a cache outage costs money, not correctness
            _log.warning("judge cache read failed", exc_info=True)
            return [None] * len(keys)
        out: list[tuple[GroundednessResult, str | None] | None] = []
        for key, raw in zip(keys, raws, strict=True):
            try:
                if raw is None:
                    out.append(None)
                    continue
                payload = json.loads(raw)
                out.append(
                    (GroundednessResult.from_dict(payload["result"]), payload.get("trace_id"))
                )
            except Exception:  # noqa: BLE001 - an unreadable entry is a miss, not a failure
                _log.warning("ignoring unreadable judge cache entry %s", key, exc_info=True)
                out.append(None)
        return out

    def _call(self, model: str, answer: str, context: Sequence[str]) -> GroundednessResult:
        """One judge call; :class:`ParkTrace` when it fails (no second loop: module doc)."""
        return judged_or_parked(
            lambda: self._judge.groundedness(answer, list(context)),
            self._metrics,
            self._judge,
            model,
        )
