"""What a judge call costs: USD per million tokens per model, with cache multipliers.

A model ID is priced by the longest table key that is a prefix of it, so the dated ID the API
returns (``claude-haiku-4-5-20251001``) finds ``claude-haiku-4-5``. Claude on Bedrock and Vertex
AI is priced as on the Anthropic API: when the ID itself has no entry, its Claude name
(:func:`claude_model_name`: ``global.anthropic.claude-haiku-4-5-20251001-v1:0`` and
``claude-haiku-4-5@20251001`` are both ``claude-haiku-4-5-20251001``) is looked up. A model the
table does not know (an OpenAI-compatible server's) costs 0.0 and :meth:`PriceTable.known` says
so; a warning names it once, with the variable that prices it. Cached tokens are billed at
``input × cache_write_multiplier`` (5-minute cache writes) and ``input × cache_read_multiplier``
(cache hits).

Overrides: an explicit table or JSON file > env ``RAGTRACE_JUDGE_PRICES`` (a path to a JSON file,
or inline JSON starting with ``{``) > the defaults below. The JSON maps model prefixes to
``{"input": USD, "output": USD, "cache_write_multiplier"?: x, "cache_read_multiplier"?: x}`` and
is merged over the defaults. A bad env value warns and falls back to the defaults.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..base import Usage

__all__ = [
    "DEFAULT_PRICES",
    "ENV_PRICES",
    "ModelPrice",
    "PriceTable",
    "claude_model_name",
    "load_prices",
]

ENV_PRICES = "RAGTRACE_JUDGE_PRICES"
_log = logging.getLogger(__name__)
# Bedrock: an optional inference-profile scope ("us.", "global." ...), "anthropic.", the model,
# a version suffix ("-v1:0"). Vertex AI: "claude-haiku-4-5@20251001".
_BEDROCK_ID = re.compile(r"^(?:[a-z]{2,8}\.)?anthropic\.(claude-[a-z0-9.-]+?)(?:-v\d+(?::\d+)?)?$")


def claude_model_name(model: str) -> str:
    """The Anthropic API's name of a Claude model as Bedrock or Vertex AI spells it (the ID
    unchanged when it is neither)."""
    bedrock = _BEDROCK_ID.match(model)
    if bedrock:
        return bedrock.group(1)
    return model.replace("@", "-") if model.startswith("claude-") else model


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cache_write_multiplier: float = 1.25
    cache_read_multiplier: float = 0.1

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_write_multiplier", "cache_read_multiplier"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(f"ModelPrice.{name} must be a finite number >= 0, got {value!r}")

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_creation_input_tokens * self.input * self.cache_write_multiplier
            + usage.cache_read_input_tokens * self.input * self.cache_read_multiplier
        ) / 1e6


# Anthropic's published list prices (USD / MTok); override them when they change.
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "claude-haiku-4-5": ModelPrice(1.0, 5.0),
    "claude-3-5-haiku": ModelPrice(0.8, 4.0),
    "claude-3-haiku": ModelPrice(0.25, 1.25),
    "claude-sonnet-4": ModelPrice(3.0, 15.0),
    "claude-3-7-sonnet": ModelPrice(3.0, 15.0),
    "claude-opus-4-0": ModelPrice(15.0, 75.0),
    "claude-opus-4-2025": ModelPrice(15.0, 75.0),
    "claude-opus-4-1": ModelPrice(15.0, 75.0),
    "claude-opus-4-5": ModelPrice(5.0, 25.0),
    "claude-opus-4-6": ModelPrice(5.0, 25.0),
    "claude-opus-4-7": ModelPrice(5.0, 25.0),
    "claude-opus-4-8": ModelPrice(5.0, 25.0),
}


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    _warned: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    """Models already warned about as unpriced (once per table, so once per judge)."""

    def lookup(self, model: str | None) -> ModelPrice | None:
        """The longest key prefixing ``model``, else prefixing its Claude name (module doc)."""
        if not model:
            return None
        for name in (model, claude_model_name(model)):
            keys = [k for k in self.prices if name.startswith(k)]
            if keys:
                return self.prices[max(keys, key=len)]
        return None

    def known(self, model: str | None) -> bool:
        """The table prices ``model`` (else its cost is reported as 0.0: unknown)."""
        return self.lookup(model) is not None

    def cost(self, model: str | None, usage: Usage) -> float:
        """Cost in USD; 0.0 for a model the table does not know (warned once per model and
        table)."""
        price = self.lookup(model)
        if price is None:
            if usage.total_tokens and str(model) not in self._warned:
                self._warned.add(str(model))
                _log.warning(
                    "no price for judge model %r: its cost is unknown and reported as 0 "
                    "(set %s to price it)",
                    model,
                    ENV_PRICES,
                )
            return 0.0
        return price.cost(usage)

    @classmethod
    def from_json(cls, data: object, source: str) -> PriceTable:
        """Defaults overlaid with ``data``; raises ValueError naming ``source`` and the model."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: expected a JSON object mapping model prefixes to prices")
        merged = dict(DEFAULT_PRICES)
        for model, entry in data.items():
            if not isinstance(entry, dict):
                raise ValueError(f"{source}: {model}: expected an object with input/output")
            unknown = set(entry) - {
                "input",
                "output",
                "cache_write_multiplier",
                "cache_read_multiplier",
            }
            if unknown:
                raise ValueError(f"{source}: {model}: unknown field(s) {sorted(unknown)}")
            try:
                merged[str(model)] = ModelPrice(**entry)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{source}: {model}: {exc}") from None
        return cls(merged)


def _parse(text: str, source: str) -> PriceTable:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    return PriceTable.from_json(data, source)


def load_prices(path: str | Path | None = None) -> PriceTable:
    """Explicit JSON file (errors raise) > env ``RAGTRACE_JUDGE_PRICES`` (errors warn) > defaults."""
    if path is not None:
        return _parse(Path(path).read_text(encoding="utf-8"), str(path))
    env = os.environ.get(ENV_PRICES, "").strip()
    if not env:
        return PriceTable()
    try:
        if env.startswith("{"):
            return _parse(env, ENV_PRICES)
        return _parse(Path(env).read_text(encoding="utf-8"), f"{ENV_PRICES}={env}")
    except (OSError, ValueError) as exc:
        _log.warning("ignoring %s: %s; using the default prices", ENV_PRICES, exc)
        return PriceTable()
