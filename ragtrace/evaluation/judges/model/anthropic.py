"""The Claude judge: one Messages API call per answer, verdicts through a forced tool call —
on the Anthropic API, Amazon Bedrock or Google Vertex AI (``provider``; the client for each is
:func:`~ragtrace.evaluation.judges.model.claude_clients.claude_client`, or any Messages API client
passed as ``client``). The request, the tool schema, the parsing and the evidence checks are
the same on all three; the flow, retries and error results are
:class:`~ragtrace.evaluation.judges.model.judge.ModelJudge`'s.

Configuration (explicit argument > environment > default, see
:mod:`~ragtrace.evaluation.judges.spec`): ``model`` > ``RAGTRACE_JUDGE_MODEL`` > the provider's
default (``claude-haiku-4-5`` on the Anthropic API); connection settings per provider.

Identity: :attr:`AnthropicJudge.info` names the provider and the configured model and never
changes; the model the API reports having served (an alias resolves to a dated ID) is recorded
on each result only (``served_model``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..base import GroundednessResult, Usage
from ..bounds import JudgeLimits
from ..injection import suspect_documents
from ..prompts import (
    GROUNDEDNESS_TOOL,
    MalformedOutput,
    parse_units,
    render_answer_message,
)
from ..scoring import score_units
from ..segment import segment_answer
from ..spec import (
    DEFAULT_BUDGET_S,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    ENV_MODEL,
    JudgeSpec,
    configured_model,
)
from .caching import should_cache
from .claude_clients import CLAUDE_PROVIDERS, claude_client
from .judge import CallRecord, ModelJudge
from .pricing import PriceTable

__all__ = ["DEFAULT_MODEL", "ENV_MODEL", "AnthropicJudge"]  # DEFAULT_MODEL, ENV_MODEL: from .spec


class AnthropicJudge(ModelJudge):
    """Groundedness (and answer relevancy / correctness) judged by a Claude model (module doc)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: str = "anthropic",
        api_key: str | None = None,
        base_url: str | None = None,
        region: str | None = None,
        project: str | None = None,
        client: Any = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        budget_s: float = DEFAULT_BUDGET_S,
        prices: PriceTable | None = None,
        max_tokens: int = 4096,
        instructions: str | None = None,
        limits: JudgeLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import anthropic  # the `judge` extra; imported here so the core install never needs it

        if provider not in CLAUDE_PROVIDERS:
            raise ValueError(
                f"the Claude judge runs on {', '.join(CLAUDE_PROVIDERS)}, not {provider!r}"
            )
        if model is not None and not model.strip():
            raise ValueError("model must be a non-empty model ID")
        super().__init__(
            str(configured_model(model, provider=provider)),
            provider=provider,
            sdk=anthropic,
            timeout=timeout,
            budget_s=budget_s,
            prices=prices,
            max_tokens=max_tokens,
            instructions=instructions,
            limits=limits,
            sleep=sleep,
            clock=clock,
        )
        self._anthropic = anthropic
        self._client = client
        if client is None:
            self._client = claude_client(
                provider,
                api_key=api_key,
                base_url=base_url,
                region=region,
                project=project,
                timeout=timeout,
            )

    @classmethod
    def from_spec(cls, spec: JudgeSpec, **options: Any) -> AnthropicJudge:
        """The judge ``spec`` describes; ``options`` (``prices``, ``instructions``, ``sleep``,
        ``clock``, ``client``; a constructor argument given here wins over the spec) go to the
        constructor."""
        kwargs: dict[str, Any] = {
            "provider": spec.provider or "anthropic",
            "api_key": spec.api_key,
            "base_url": spec.base_url,
            "region": spec.region,
            "project": spec.project,
            "timeout": spec.timeout_s,
            "budget_s": spec.budget_s,
            "max_tokens": spec.max_tokens,
            "limits": spec.limits,
            **options,
        }
        return cls(spec.model, **kwargs)

    # --- the Messages API -----------------------------------------------------------------
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

    def _create(self, body: dict[str, Any], timeout: float) -> Any:
        return self._client.messages.create(**body, timeout=timeout)

    def _well_formed(self, response: object) -> bool:
        return hasattr(response, "content")

    def _tool_input(self, response: object, name: str) -> object:
        if getattr(response, "stop_reason", None) == "max_tokens":
            raise MalformedOutput("output truncated at max_tokens")
        for block in getattr(response, "content", None) or ():
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == name:
                return block.input
        raise MalformedOutput(f"no {name} tool call in the response")

    def _usage(self, response: object) -> Usage | None:
        usage = getattr(response, "usage", None)
        if usage is None:
            return None
        return Usage(
            int(usage.input_tokens or 0),
            int(usage.output_tokens or 0),
            int(getattr(usage, "cache_read_input_tokens", 0) or 0),
            int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
        )

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
        call = CallRecord()
        call.usage = self._usage(message) or Usage()
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
