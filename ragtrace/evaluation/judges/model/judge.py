"""What every model judge shares, whatever API it calls: the flow of one judgement.

:class:`ModelJudge` segments the answer, renders the prompt
(:mod:`~ragtrace.evaluation.judges.prompts`), sends it through its API, parses the structured
verdict and scores it with the evidence checks (:func:`~ragtrace.evaluation.judges.scoring.score_units`);
the same for answer relevancy and correctness. A subclass says only how its API is spoken:
the request body, the call, where the structured output sits in the response, the usage it
reports (:class:`~ragtrace.evaluation.judges.model.anthropic.AnthropicJudge` for the Messages API on
Anthropic, Bedrock and Vertex AI;
:class:`~ragtrace.evaluation.judges.model.openai_compat.OpenAICompatibleJudge` for Chat Completions).

Retries are owned by :class:`~ragtrace.evaluation.judges.model.retry.CallBudget` (clients are built
with ``max_retries=0``): a judgement takes at most ``budget_s`` seconds, all requests and waits
included, each request at most ``timeout`` seconds; when a retry no longer fits,
:class:`JudgeUnavailable` is raised carrying the API's ``retry-after`` and the caller parks the
work. Both official SDKs (``anthropic``, ``openai``) raise the same error family
(``APIStatusError``, ``APIConnectionError``, ``APIResponseValidationError``), so one loop
serves both.

Malformed output (no structured verdict, wrong shape, truncated, unparsable body) and invalid
judgements (a unit missing, judged twice or unknown: see
:func:`~ragtrace.evaluation.judges.prompts.parse_units`) are sent once more (within the same
budget) and then returned as a result with ``error`` set — never a score. An answer with no
units (no words) scores 1.0 ``no_claims`` without a call. Other 4xx answers (bad request,
authentication) are also error results: retrying cannot help.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from ragtrace.errors import RagtraceError

from ..answer_metrics import (
    CORRECTNESS_INSTRUCTIONS,
    CORRECTNESS_SHA256,
    CORRECTNESS_TOOL,
    RELEVANCY_INSTRUCTIONS,
    RELEVANCY_SHA256,
    RELEVANCY_TOOL,
    render_correctness_message,
    render_relevancy_message,
    score_correctness,
    score_relevancy,
)
from ..base import GroundednessResult, JudgeInfo, MetricResult, Usage
from ..bounds import JudgeLimits, bounded_claims, bounded_units
from ..injection import suspect_documents
from ..prompts import (
    GROUNDEDNESS_INSTRUCTIONS,
    GROUNDEDNESS_TOOL,
    MalformedOutput,
    groundedness_sha256,
    parse_units,
    render_answer_message,
    render_claims_message,
)
from ..scoring import score_units
from ..segment import Unit
from ..spec import DEFAULT_BUDGET_S, DEFAULT_TIMEOUT_S
from .pricing import PriceTable, load_prices
from .retry import CallBudget, parse_retry_after, retryable

__all__ = ["CallRecord", "ModelJudge", "Rejected"]

_log = logging.getLogger(__name__)


class Rejected(RagtraceError):
    """A non-retryable 4xx from the API: reported as an error result."""


class CallRecord:
    """What one logical call (possibly two requests) produced."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.model: str | None = None


class ModelJudge:
    """Groundedness (and answer relevancy / correctness) judged by a model behind an API (module
    doc). ``provider`` names the API (:data:`~ragtrace.evaluation.judges.spec.PROVIDERS`) and is
    the judge's name; ``sdk`` is the official client package whose errors the calls raise."""

    def __init__(
        self,
        model: str,
        *,
        provider: str,
        sdk: ModuleType,
        timeout: float = DEFAULT_TIMEOUT_S,
        budget_s: float = DEFAULT_BUDGET_S,
        prices: PriceTable | None = None,
        max_tokens: int = 4096,
        instructions: str | None = None,
        limits: JudgeLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not model.strip():
            raise ValueError("model must be a non-empty model ID")
        if not (timeout > 0 and budget_s > 0 and max_tokens > 0):
            raise ValueError("timeout, budget_s and max_tokens must be > 0")
        self.name = provider
        self.provider = provider
        self.model = model
        self.timeout_s = float(timeout)
        self.budget_s = float(budget_s)
        """The most one judgement takes, every request and wait included (module doc)."""
        self.max_tokens = max_tokens
        self.prices = prices if prices is not None else load_prices()
        self.instructions = instructions if instructions is not None else GROUNDEDNESS_INSTRUCTIONS
        self.limits = limits if limits is not None else JudgeLimits()
        """What one judgement takes on, the prompt's estimated tokens included
        (:mod:`~ragtrace.evaluation.judges.bounds`)."""
        self._sleep = sleep
        self._clock = clock
        self._sdk = sdk
        self._info = self._judge_info(groundedness_sha256(self.instructions))

    # --- what a subclass says about its API -----------------------------------------------
    def request_body(
        self, instructions: str, tool: Mapping[str, Any], message: str
    ) -> dict[str, Any]:
        """The request for one structured call: ``instructions``, the ``tool`` whose input is
        the verdict (name, description, ``input_schema``), the user ``message``."""
        raise NotImplementedError

    def _create(self, body: dict[str, Any], timeout: float) -> Any:
        """Send ``body``; the SDK's errors propagate."""
        raise NotImplementedError

    def _well_formed(self, response: object) -> bool:
        """``response`` is the API's response object (not an error page parsed as one)."""
        raise NotImplementedError

    def _tool_input(self, response: object, name: str) -> object:
        """The structured verdict (the ``name`` tool's input) in ``response``; MalformedOutput
        when it is missing or truncated."""
        raise NotImplementedError

    def _usage(self, response: object) -> Usage | None:
        """The tokens ``response`` reports (``input_tokens`` excluding cached ones)."""
        raise NotImplementedError

    def _prompt_sha256(self, template_sha256: str) -> str:
        """The hash recorded for a prompt template (a subclass that changes how the template is
        sent folds that in)."""
        return template_sha256

    # --- identity -------------------------------------------------------------------------
    def _judge_info(self, template_sha256: str) -> JudgeInfo:
        return JudgeInfo(self.name, self.model, self._prompt_sha256(template_sha256), self.provider)

    @property
    def info(self) -> JudgeInfo:
        """Provenance: provider, the configured model (fixed for the judge's life; the served
        model is on each result), the prompt's hash."""
        return self._info

    # --- groundedness ---------------------------------------------------------------------
    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        start = time.perf_counter()
        units = bounded_units(answer, context, self.limits)
        if isinstance(units, str):
            return self._refused(units, start)
        message = render_answer_message(units, context)
        return self._groundedness(message, context, units, None, start)

    def judge_claims(self, claims: Sequence[str], context: Sequence[str]) -> GroundednessResult:
        """Verdicts on claims already split (calibration), one per claim, in order."""
        start = time.perf_counter()
        claims = list(claims)
        units = bounded_claims(claims, context, self.limits)
        if isinstance(units, str):
            return self._refused(units, start)
        message = render_claims_message(claims, context)
        return self._groundedness(message, context, units, claims, start)

    def refusal(self, answer: str, context: Sequence[str]) -> str | None:
        """Why :meth:`groundedness` would refuse ``answer`` and ``context`` as too large (its
        limits, the prompt's estimated tokens included), or None: a check a caller can make
        before it reserves budget or queues the request elsewhere."""
        units = bounded_units(answer, context, self.limits)
        if isinstance(units, str):
            return units
        return self._prompt_refusal(render_answer_message(units, context))

    def _prompt_refusal(self, message: str) -> str | None:
        return self.limits.prompt_refusal(
            len(self.instructions) + len(json.dumps(GROUNDEDNESS_TOOL)) + len(message)
        )

    def _refused(self, refusal: str, start: float) -> GroundednessResult:
        """A judgement too large to take on (:mod:`~ragtrace.evaluation.judges.bounds`): an
        error result, no call made."""
        return GroundednessResult.failed(refusal, self.info, latency_s=time.perf_counter() - start)

    def _groundedness(
        self,
        message: str,
        context: Sequence[str],
        units: tuple[Unit, ...],
        given: list[str] | None,
        start: float,
    ) -> GroundednessResult:
        refusal = self._prompt_refusal(message)
        if refusal is not None:
            return self._refused(refusal, start)
        suspect = suspect_documents(context)
        if not units:  # nothing to judge: no call
            return score_units(
                (), {}, context, self.info, suspect=suspect, latency_s=time.perf_counter() - start
            )
        call = CallRecord()
        ids = [u.id for u in units]
        try:
            judged = self._structured(
                call,
                self.instructions,
                GROUNDEDNESS_TOOL,
                message,
                lambda data: parse_units(data, ids, given),
            )
        except (MalformedOutput, Rejected) as exc:
            return GroundednessResult.failed(
                str(exc),
                self.info,
                usage=call.usage,
                cost_usd=self._cost(call),
                latency_s=time.perf_counter() - start,
                injection_suspected=suspect,
                served_model=call.model,
            )
        return score_units(
            units,
            judged,
            context,
            self.info,
            suspect=suspect,
            answer_mode=given is None,
            usage=call.usage,
            cost_usd=self._cost(call),
            latency_s=time.perf_counter() - start,
            served_model=call.model,
        )

    # --- adjacent metrics -----------------------------------------------------------------
    def answer_relevancy(self, question: str, answer: str) -> MetricResult:
        return self._metric(
            "answer_relevancy",
            RELEVANCY_INSTRUCTIONS,
            RELEVANCY_TOOL,
            RELEVANCY_SHA256,
            render_relevancy_message(question, answer),
            score_relevancy,
        )

    def answer_correctness(self, question: str, answer: str, reference: str) -> MetricResult:
        return self._metric(
            "answer_correctness",
            CORRECTNESS_INSTRUCTIONS,
            CORRECTNESS_TOOL,
            CORRECTNESS_SHA256,
            render_correctness_message(question, answer, reference),
            score_correctness,
        )

    def _metric(
        self,
        metric: str,
        instructions: str,
        tool: Mapping[str, Any],
        sha: str,
        message: str,
        parse: Callable[[object], tuple[float, tuple[Mapping[str, object], ...]]],
    ) -> MetricResult:
        start = time.perf_counter()
        call = CallRecord()
        info = self._judge_info(sha)
        try:
            score, details = self._structured(call, instructions, tool, message, parse)
        except (MalformedOutput, Rejected) as exc:
            return MetricResult(
                metric,
                None,
                info,
                usage=call.usage,
                cost_usd=self._cost(call),
                error=str(exc),
                latency_s=time.perf_counter() - start,
                served_model=call.model,
            )
        return MetricResult(
            metric,
            score,
            info,
            details,
            call.usage,
            self._cost(call),
            latency_s=time.perf_counter() - start,
            served_model=call.model,
        )

    # --- the call -------------------------------------------------------------------------
    def _cost(self, call: CallRecord) -> float:
        return self.prices.cost(call.model or self.model, call.usage)

    def _structured(
        self,
        call: CallRecord,
        instructions: str,
        tool: Mapping[str, Any],
        message: str,
        parse: Callable[[object], Any],
    ) -> Any:
        """Send, parse the structured verdict; sent once more on malformed output, all within
        one :class:`CallBudget`."""
        body = self.request_body(instructions, tool, message)
        budget = CallBudget(self.budget_s, self.timeout_s, clock=self._clock, sleep=self._sleep)
        problem = MalformedOutput("no attempt made")
        for _ in range(2):
            try:
                response = self._send(body, budget)
            except MalformedOutput as exc:
                problem = exc
                continue
            usage = self._usage(response)
            if usage is not None:
                call.usage = call.usage + usage
            call.model = getattr(response, "model", None) or call.model
            try:
                return parse(self._tool_input(response, str(tool["name"])))
            except MalformedOutput as exc:
                problem = exc
                _log.warning("malformed judge output (%s)", exc)
        raise MalformedOutput(f"malformed judge output after one retry: {problem}")

    def _send(self, body: dict[str, Any], budget: CallBudget) -> Any:
        """One request, retried as ``budget`` allows; raises JudgeUnavailable, Rejected,
        MalformedOutput."""
        sdk = self._sdk
        while True:
            retry_after: float | None = None
            try:
                response = self._create(body, budget.request_timeout())
            except sdk.APIStatusError as exc:
                status = exc.status_code
                if not retryable(status):
                    raise Rejected(
                        f"judge request rejected: HTTP {status}: {exc.message}"
                    ) from None
                retry_after = parse_retry_after(exc.response.headers)
                reason = f"HTTP {status}: {exc.message}"
            except sdk.APIConnectionError as exc:  # includes timeouts
                reason = f"{type(exc).__name__}: {exc}"
            except (sdk.APIResponseValidationError, ValueError) as exc:
                raise MalformedOutput(f"unreadable response body: {exc}") from None
            else:
                if not self._well_formed(response):
                    raise MalformedOutput(
                        f"response body is not the {self.provider} API's response shape: "
                        f"{response!r:.200}"
                    )
                return response
            _log.info("judge call failed (%s); retrying within the time budget", reason)
            budget.wait_to_retry(reason, retry_after)
