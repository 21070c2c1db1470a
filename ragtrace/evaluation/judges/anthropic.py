"""The model judge: one Messages API call per answer, verdicts through a forced tool call.

Configuration (explicit argument > environment > default, see
:mod:`~ragtrace.evaluation.judges.spec`): ``model`` > ``RAGTRACE_JUDGE_MODEL`` >
``claude-haiku-4-5``; ``api_key``/``base_url`` > ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``
(read by the official client).

Identity: :attr:`AnthropicJudge.info` names the configured model and never changes; the model the
API reports having served (an alias resolves to a dated ID) is recorded on each result only
(``served_model``).

Retries are owned by :class:`~ragtrace.evaluation.judges.retry.CallBudget` (the client is built
with ``max_retries=0``): a judgement takes at most ``budget_s`` seconds, all requests and waits
included, each request at most ``timeout`` seconds; when a retry no longer fits,
:class:`JudgeUnavailable` is raised carrying the API's ``retry-after`` and the caller parks the
work (the official client would sleep as long as asked).

Malformed output (no tool call, wrong shape, truncated, unparsable body) and invalid judgements
(a unit missing, judged twice or unknown: see :func:`~ragtrace.evaluation.judges.prompts.parse_units`)
are sent once more (within the same budget) and then returned as a result with ``error`` set —
never a score. An answer with no units (no words) scores 1.0 ``no_claims`` without a call. Other
4xx answers (bad request, authentication) are also error results: retrying cannot help.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .answer_metrics import (
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
from .base import (
    GroundednessResult,
    JudgeInfo,
    MetricResult,
    Usage,
)
from .caching import should_cache
from .injection import suspect_documents
from .pricing import PriceTable, load_prices
from .prompts import (
    GROUNDEDNESS_INSTRUCTIONS,
    GROUNDEDNESS_TOOL,
    MalformedOutput,
    groundedness_sha256,
    parse_units,
    render_answer_message,
    render_claims_message,
)
from .retry import CallBudget, parse_retry_after, retryable
from .scoring import score_units
from .segment import Unit, segment_answer
from .spec import (
    DEFAULT_BUDGET_S,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    ENV_MODEL,
    JudgeSpec,
    configured_model,
)

__all__ = ["DEFAULT_MODEL", "ENV_MODEL", "AnthropicJudge"]  # DEFAULT_MODEL, ENV_MODEL: from .spec

_log = logging.getLogger(__name__)


class _Call:
    """What one logical call (possibly two requests) produced."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.model: str | None = None


class AnthropicJudge:
    """Groundedness (and answer relevancy / correctness) judged by a Claude model."""

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        budget_s: float = DEFAULT_BUDGET_S,
        prices: PriceTable | None = None,
        max_tokens: int = 4096,
        instructions: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import anthropic  # the `judge` extra; imported here so the core install never needs it

        if model is not None and not model.strip():
            raise ValueError("model must be a non-empty model ID")
        if not (timeout > 0 and budget_s > 0 and max_tokens > 0):
            raise ValueError("timeout, budget_s and max_tokens must be > 0")
        self.model = configured_model(model)
        self.timeout_s = float(timeout)
        self.budget_s = float(budget_s)
        """The most one judgement takes, every request and wait included (module doc)."""
        self.max_tokens = max_tokens
        self.prices = prices if prices is not None else load_prices()
        self.instructions = instructions if instructions is not None else GROUNDEDNESS_INSTRUCTIONS
        self._sleep = sleep
        self._clock = clock
        self._anthropic = anthropic
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self._info = JudgeInfo(self.name, self.model, groundedness_sha256(self.instructions))

    @classmethod
    def from_spec(cls, spec: JudgeSpec, **options: Any) -> AnthropicJudge:
        """The judge ``spec`` describes; ``options`` (``prices``, ``instructions``, ``sleep``,
        ``clock``; a constructor argument given here wins over the spec) go to the
        constructor."""
        kwargs: dict[str, Any] = {
            "api_key": spec.api_key,
            "base_url": spec.base_url,
            "timeout": spec.timeout_s,
            "budget_s": spec.budget_s,
            "max_tokens": spec.max_tokens,
            **options,
        }
        return cls(spec.model, **kwargs)

    @property
    def info(self) -> JudgeInfo:
        """Provenance: the configured model, fixed for the judge's life (the served model is on
        each result)."""
        return self._info

    # --- groundedness ---------------------------------------------------------------------
    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        units = segment_answer(answer)
        return self._groundedness(render_answer_message(units, context), context, units, None)

    def judge_claims(self, claims: Sequence[str], context: Sequence[str]) -> GroundednessResult:
        """Verdicts on claims already split (calibration), one per claim, in order."""
        claims = list(claims)
        units = tuple(Unit(i, c) for i, c in enumerate(claims, start=1))
        return self._groundedness(render_claims_message(claims, context), context, units, claims)

    def _groundedness(
        self, message: str, context: Sequence[str], units: tuple[Unit, ...], given: list[str] | None
    ) -> GroundednessResult:
        start = time.perf_counter()
        suspect = suspect_documents(context)
        if not units:  # nothing to judge: no call
            return score_units(
                (), {}, context, self.info, suspect=suspect, latency_s=time.perf_counter() - start
            )
        call = _Call()
        ids = [u.id for u in units]
        try:
            judged = self._structured(
                call,
                self.instructions,
                GROUNDEDNESS_TOOL,
                message,
                lambda data: parse_units(data, ids, given),
            )
        except (MalformedOutput, _Rejected) as exc:
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
        call = _Call()
        info = JudgeInfo(self.name, self.model, sha)
        try:
            score, details = self._structured(call, instructions, tool, message, parse)
        except (MalformedOutput, _Rejected) as exc:
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
    def _cost(self, call: _Call) -> float:
        return self.prices.cost(call.model or self.model, call.usage)

    def request_body(
        self, instructions: str, tool: Mapping[str, Any], message: str
    ) -> dict[str, Any]:
        """The Messages API request: cached instructions only when long enough to qualify."""
        system: dict[str, Any] = {"type": "text", "text": instructions}
        if should_cache(self.model, json.dumps(tool) + instructions):
            system["cache_control"] = {"type": "ephemeral"}
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [system],
            "tools": [dict(tool)],
            "tool_choice": {"type": "tool", "name": tool["name"]},
            "messages": [{"role": "user", "content": message}],
        }

    def _structured(
        self,
        call: _Call,
        instructions: str,
        tool: Mapping[str, Any],
        message: str,
        parse: Callable[[object], Any],
    ) -> Any:
        """Send, parse the forced tool call; sent once more on malformed output, all within
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
            usage = getattr(response, "usage", None)
            if usage is not None:
                call.usage = call.usage + Usage(
                    int(usage.input_tokens or 0),
                    int(usage.output_tokens or 0),
                    int(getattr(usage, "cache_read_input_tokens", 0) or 0),
                    int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
                )
            call.model = getattr(response, "model", None) or call.model
            try:
                return parse(self._tool_input(response, str(tool["name"])))
            except MalformedOutput as exc:
                problem = exc
                _log.warning("malformed judge output (%s)", exc)
        raise MalformedOutput(f"malformed judge output after one retry: {problem}")

    @staticmethod
    def _tool_input(response: object, name: str) -> object:
        if getattr(response, "stop_reason", None) == "max_tokens":
            raise MalformedOutput("output truncated at max_tokens")
        for block in getattr(response, "content", None) or ():
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == name:
                return block.input
        raise MalformedOutput(f"no {name} tool call in the response")

    def _send(self, body: dict[str, Any], budget: CallBudget) -> Any:
        """One request, retried as ``budget`` allows; raises JudgeUnavailable, _Rejected,
        MalformedOutput."""
        a = self._anthropic
        while True:
            retry_after: float | None = None
            try:
                response = self._client.messages.create(**body, timeout=budget.request_timeout())
            except a.APIStatusError as exc:
                status = exc.status_code
                if not retryable(status):
                    raise _Rejected(
                        f"judge request rejected: HTTP {status}: {exc.message}"
                    ) from None
                retry_after = parse_retry_after(exc.response.headers)
                reason = f"HTTP {status}: {exc.message}"
            except a.APIConnectionError as exc:  # includes timeouts
                reason = f"{type(exc).__name__}: {exc}"
            except (a.APIResponseValidationError, ValueError) as exc:
                raise MalformedOutput(f"unreadable response body: {exc}") from None
            else:
                if not hasattr(response, "content"):
                    raise MalformedOutput("response body is not a Messages API message")
                return response
            _log.info("judge call failed (%s); retrying within the time budget", reason)
            budget.wait_to_retry(reason, retry_after)

    # --- messages answered elsewhere (the Message Batches API) -----------------------------
    def groundedness_request(self, answer: str, context: Sequence[str]) -> dict[str, Any]:
        """The Messages API request :meth:`groundedness` sends for ``answer`` and ``context``."""
        units = segment_answer(answer)
        return self.request_body(
            self.instructions, GROUNDEDNESS_TOOL, render_answer_message(units, context)
        )

    def groundedness_from_message(
        self,
        message: object,
        answer: str,
        context: Sequence[str],
        *,
        price_factor: float = 1.0,
        latency_s: float = 0.0,
    ) -> GroundednessResult:
        """The result of :meth:`groundedness_request` for ``answer`` and ``context`` from the
        Messages API ``message`` that answered it, parsed and checked as :meth:`groundedness`
        does, its cost times ``price_factor`` (0.5 for the Message Batches API). Malformed
        output is an error result (no retry)."""
        units = segment_answer(answer)
        suspect = suspect_documents(context)
        call = _Call()
        usage = getattr(message, "usage", None)
        if usage is not None:
            call.usage = Usage(
                int(usage.input_tokens or 0),
                int(usage.output_tokens or 0),
                int(getattr(usage, "cache_read_input_tokens", 0) or 0),
                int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
            )
        call.model = getattr(message, "model", None)
        cost = self._cost(call) * price_factor
        try:
            judged = parse_units(
                self._tool_input(message, str(GROUNDEDNESS_TOOL["name"])),
                [u.id for u in units],
                None,
            )
        except MalformedOutput as exc:
            return GroundednessResult.failed(
                f"malformed judge output: {exc}",
                self.info,
                usage=call.usage,
                cost_usd=cost,
                latency_s=latency_s,
                injection_suspected=suspect,
                served_model=call.model,
            )
        return score_units(
            units,
            judged,
            context,
            self.info,
            suspect=suspect,
            answer_mode=True,
            usage=call.usage,
            cost_usd=cost,
            latency_s=latency_s,
            served_model=call.model,
        )


class _Rejected(Exception):
    """A non-retryable 4xx from the API: reported as an error result."""
