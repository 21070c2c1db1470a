"""Bounds on one groundedness judgement: what a judge takes on before it does any work.

A valid trace can carry an answer of thousands of sentences or a context of megabytes; judging
it whole would hold a consumer for minutes (the offline judge's work grows with units × context
windows) and send a paid judge a prompt larger than its model's context. :class:`JudgeLimits`
bounds the answer's units (:mod:`ragtrace.evaluation.judges.segment`), the answer's characters,
the context's characters and, for a model judge, the estimated prompt tokens. Every judge checks
them through :func:`bounded_units` (and a model judge its rendered prompt through
:meth:`JudgeLimits.prompt_refusal`) before segmenting, aligning or calling anything.

Beyond a limit the judgement is **refused, not truncated**: the result is an error result
(``score`` None) whose ``error`` starts with :data:`TOO_LARGE` and names the limit, the size and
the setting (``too_large: answer has 25000 units, limit 200 (max_units)``), so a partial score is
never presented as the whole answer's. The defaults are sized so that ordinary answers are never
affected and one offline judgement at the limits takes about a second (docs/groundedness.md,
"Bounds on one judgement").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import lru_cache

from .segment import Unit, segment_answer

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_ANSWER_CHARS",
    "DEFAULT_MAX_CONTEXT_CHARS",
    "DEFAULT_MAX_PROMPT_TOKENS",
    "DEFAULT_MAX_UNITS",
    "TOO_LARGE",
    "JudgeLimits",
    "bounded_claims",
    "bounded_units",
    "is_too_large",
]

TOO_LARGE = "too_large"
"""The prefix of a refused judgement's ``error`` (and its metric reason)."""
DEFAULT_MAX_UNITS = 200
DEFAULT_MAX_ANSWER_CHARS = 20_000
DEFAULT_MAX_CONTEXT_CHARS = 100_000
DEFAULT_MAX_PROMPT_TOKENS = 60_000
CHARS_PER_TOKEN = 3.5
"""Characters per token when estimating a prompt's size (a cautious figure for English: real
tokenisers give about 4, so the estimate errs high)."""


@dataclass(frozen=True)
class JudgeLimits:
    """The most one groundedness judgement takes on (module docstring). Each limit is an int
    > 0; ``max_prompt_tokens`` applies to model judges only (estimated at
    :data:`CHARS_PER_TOKEN` over instructions, tool schema and message)."""

    max_units: int = DEFAULT_MAX_UNITS
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS
    max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS
    max_prompt_tokens: int = DEFAULT_MAX_PROMPT_TOKENS

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"JudgeLimits.{f.name} must be an int > 0, got {value!r}")

    def text_refusal(self, answer_chars: int, context: Sequence[str]) -> str | None:
        """Why an answer of ``answer_chars`` characters with ``context`` is too large, or None."""
        if answer_chars > self.max_answer_chars:
            return _refusal("answer", answer_chars, "characters", self.max_answer_chars)
        context_chars = sum(len(c) for c in context)
        if context_chars > self.max_context_chars:
            return _refusal("context", context_chars, "characters", self.max_context_chars)
        return None

    def units_refusal(self, units: int) -> str | None:
        """Why ``units`` answer units are too many, or None."""
        if units > self.max_units:
            return _refusal("answer", units, "units", self.max_units)
        return None

    def prompt_refusal(self, prompt_chars: int) -> str | None:
        """Why a model judge's prompt of ``prompt_chars`` characters is too large, or None."""
        tokens = int(prompt_chars / CHARS_PER_TOKEN)
        if tokens > self.max_prompt_tokens:
            return _refusal("prompt", tokens, "estimated tokens", self.max_prompt_tokens)
        return None


_SETTING = {
    ("answer", "characters"): "max_answer_chars",
    ("context", "characters"): "max_context_chars",
    ("answer", "units"): "max_units",
    ("prompt", "estimated tokens"): "max_prompt_tokens",
}


def _refusal(what: str, size: int, unit: str, limit: int) -> str:
    return (
        f"{TOO_LARGE}: {what} has {size} {unit}, limit {limit} "
        f"({_SETTING[what, unit]}; {size - limit} over)"
    )


def is_too_large(error: str | None) -> bool:
    """Whether a result's ``error`` is a refusal by :class:`JudgeLimits`."""
    return error is not None and error.startswith(f"{TOO_LARGE}:")


def bounded_units(
    answer: str, context: Sequence[str], limits: JudgeLimits
) -> tuple[Unit, ...] | str:
    """The answer's units, or the refusal (a :data:`TOO_LARGE` message) when the answer or the
    context exceeds ``limits``. Characters are checked before segmenting, so an answer of
    megabytes costs nothing to refuse."""
    refusal = limits.text_refusal(len(answer), context)
    if refusal is not None:
        return refusal
    units = _segmented(answer)
    return limits.units_refusal(len(units)) or units


@lru_cache(maxsize=512)
def _segmented(answer: str) -> tuple[Unit, ...]:
    # A caller asks twice for the same answer: the consumer's pre-check (``refusal``) and then
    # the judgement itself. The units are immutable, so the second ask reuses the first's (up to
    # 512 answers in flight, each within max_answer_chars, since characters are checked first).
    return segment_answer(answer)


def bounded_claims(
    claims: Sequence[str], context: Sequence[str], limits: JudgeLimits
) -> tuple[Unit, ...] | str:
    """Claims already split (calibration) as units, or the refusal, as :func:`bounded_units`."""
    refusal = limits.text_refusal(sum(len(c) for c in claims), context) or limits.units_refusal(
        len(claims)
    )
    return refusal or tuple(Unit(i, c) for i, c in enumerate(claims, start=1))
