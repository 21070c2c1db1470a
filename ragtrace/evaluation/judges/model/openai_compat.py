"""The judge over any OpenAI-compatible Chat Completions endpoint — OpenAI, or a server inside your
own network (vLLM, Ollama, llama.cpp server, TGI) for data that may not leave it.

One ``POST {base_url}/chat/completions`` per answer through the official ``openai`` client, with
the Claude judge's prompt contract: the same instructions as the system message, the same
spotlighted user message, the same tool schema as a forced function call
(``tool_choice: {"type": "function", "function": {"name": "record_claims"}}``), ``temperature``
0; the function's JSON arguments are parsed and checked exactly as the Claude judge's tool input
(:class:`~ragtrace.evaluation.judges.model.judge.ModelJudge`: retries, malformed output, error
results). ``max_tokens`` is sent (what local servers read; OpenAI's reasoning models want
``max_completion_tokens`` and refuse it — use a chat model there).

``output_mode="json"`` is for servers without tool calling: no tools, ``response_format:
{"type": "json_object"}``, and the instructions gain :data:`JSON_MODE_INSTRUCTIONS` with the
tool's schema; the reply's content (a Markdown code fence around it is tolerated) is the
verdict. The recorded prompt hash folds the mode in, so the two are never mistaken for each
other.

Configuration: base URL explicit > ``OPENAI_BASE_URL`` > OpenAI's; API key explicit >
``OPENAI_API_KEY`` > a placeholder (local servers ask for none); the model has no default (see
:mod:`~ragtrace.evaluation.judges.spec`). Usage is the endpoint's ``prompt_tokens`` (less
``prompt_tokens_details.cached_tokens``, counted as cache reads) and ``completion_tokens``;
cost comes from the price table, which knows no such model until you price it
(``RAGTRACE_JUDGE_PRICES``): until then cost is reported as 0.0, unknown
(:meth:`~ragtrace.evaluation.judges.model.pricing.PriceTable.known`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..base import Usage
from ..bounds import JudgeLimits
from ..prompts import MalformedOutput
from ..spec import (
    DEFAULT_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    ENV_MODEL,
    ENV_OPENAI_API_KEY,
    OUTPUT_MODES,
    JudgeSpec,
    configured_model,
)
from .judge import ModelJudge
from .pricing import PriceTable

__all__ = ["JSON_MODE_INSTRUCTIONS", "NO_API_KEY", "OpenAICompatibleJudge"]

JSON_MODE_INSTRUCTIONS = """

This endpoint cannot call tools. Instead of calling {name}, reply with only the JSON object you \
would have passed to it — no other text — matching this JSON schema:
{schema}"""
NO_API_KEY = "no-key"
"""Sent as the API key when none is configured (the client requires one; local servers ignore it)."""
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class OpenAICompatibleJudge(ModelJudge):
    """Groundedness (and answer relevancy / correctness) judged by a model behind a Chat
    Completions endpoint (module doc)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        output_mode: str = "tools",
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
        import openai  # the `judge` extra

        if output_mode not in OUTPUT_MODES:
            raise ValueError(
                f"output_mode must be one of {', '.join(OUTPUT_MODES)}, got {output_mode!r}"
            )
        resolved = configured_model(model, provider="openai")
        if resolved is None or not resolved.strip():
            raise ValueError(f"the openai judge needs a model: give model= or set {ENV_MODEL}")
        self.output_mode = output_mode
        super().__init__(
            resolved,
            provider="openai",
            sdk=openai,
            timeout=timeout,
            budget_s=budget_s,
            prices=prices,
            max_tokens=max_tokens,
            instructions=instructions,
            limits=limits,
            sleep=sleep,
            clock=clock,
        )
        if client is None:
            client = openai.OpenAI(
                api_key=api_key or os.environ.get(ENV_OPENAI_API_KEY) or NO_API_KEY,
                base_url=base_url,
                timeout=timeout,
                max_retries=0,
            )
        self._client = client

    @classmethod
    def from_spec(cls, spec: JudgeSpec, **options: Any) -> OpenAICompatibleJudge:
        """The judge ``spec`` describes; ``options`` (``prices``, ``instructions``, ``sleep``,
        ``clock``, ``client``) go to the constructor and win over the spec."""
        kwargs: dict[str, Any] = {
            "api_key": spec.api_key,
            "base_url": spec.base_url,
            "output_mode": spec.output_mode,
            "timeout": spec.timeout_s,
            "budget_s": spec.budget_s,
            "max_tokens": spec.max_tokens,
            "limits": spec.limits,
            **options,
        }
        return cls(spec.model, **kwargs)

    def _prompt_sha256(self, template_sha256: str) -> str:
        if self.output_mode == "tools":
            return template_sha256
        folded = f"{template_sha256}\n{JSON_MODE_INSTRUCTIONS}"
        return hashlib.sha256(folded.encode("utf-8")).hexdigest()

    # --- Chat Completions -----------------------------------------------------------------
    def request_body(
        self, instructions: str, tool: Mapping[str, Any], message: str
    ) -> dict[str, Any]:
        """The Chat Completions request: a forced function call, or JSON mode (module doc)."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
        }
        if self.output_mode == "json":
            instructions += JSON_MODE_INSTRUCTIONS.format(
                name=tool["name"], schema=json.dumps(tool["input_schema"])
            )
            body["response_format"] = {"type": "json_object"}
        else:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool["name"],
                        "description": tool["description"],
                        "parameters": tool["input_schema"],
                    },
                }
            ]
            body["tool_choice"] = {"type": "function", "function": {"name": tool["name"]}}
        body["messages"] = [
            {"role": "system", "content": instructions},
            {"role": "user", "content": message},
        ]
        return body

    def _create(self, body: dict[str, Any], timeout: float) -> Any:
        return self._client.chat.completions.create(**body, timeout=timeout)

    def _well_formed(self, response: object) -> bool:
        return bool(getattr(response, "choices", None))

    def _tool_input(self, response: object, name: str) -> object:
        choice = getattr(response, "choices", [None])[0]
        if getattr(choice, "finish_reason", None) == "length":
            raise MalformedOutput("output truncated at max_tokens")
        message = getattr(choice, "message", None)
        if self.output_mode == "json":
            return _json(getattr(message, "content", None), "the reply")
        for call in getattr(message, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            if getattr(function, "name", None) == name:
                return _json(getattr(function, "arguments", None), f"the {name} arguments")
        raise MalformedOutput(f"no {name} tool call in the response")

    def _usage(self, response: object) -> Usage | None:
        usage = getattr(response, "usage", None)
        if usage is None:
            return None
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        return Usage(
            max(prompt - cached, 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            cache_read_input_tokens=min(cached, prompt),
        )


def _json(text: object, what: str) -> object:
    if not isinstance(text, str) or not text.strip():
        raise MalformedOutput(f"{what} is empty")
    fenced = _FENCE.match(text)
    try:
        return json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError as exc:
        raise MalformedOutput(f"{what} is not JSON ({exc.msg} at {exc.pos})") from None
