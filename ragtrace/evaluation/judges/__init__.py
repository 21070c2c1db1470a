"""Judges: groundedness (and the adjacent answer metrics) behind one small seam.

``make_judge("lexical" | "anthropic" | "auto")`` — ``auto`` is the Anthropic judge when an API key
is available (``api_key=`` or ``ANTHROPIC_API_KEY``), else the offline lexical judge.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .base import (
    AnswerJudge,
    ClaimVerdict,
    GroundednessResult,
    Judge,
    JudgeCapabilityError,
    JudgeInfo,
    JudgeUnavailable,
    MetricResult,
    UnitVerdict,
    Usage,
)
from .checks import CHECKS, UNIT_CHECKS, check_evidence
from .evidence import normalise_for_match, quote_found
from .injection import injection_hits, reads_as_instruction, suspect_documents
from .lexical import LexicalJudge
from .pricing import ModelPrice, PriceTable, load_prices
from .prompts import PROMPT_SHA256
from .segment import Unit, segment_answer

if TYPE_CHECKING:
    from .anthropic import AnthropicJudge

__all__ = [
    "CHECKS",
    "JUDGE_NAMES",
    "PROMPT_SHA256",
    "UNIT_CHECKS",
    "AnswerJudge",
    "AnthropicJudge",
    "ClaimVerdict",
    "GroundednessResult",
    "Judge",
    "JudgeCapabilityError",
    "JudgeInfo",
    "JudgeUnavailable",
    "LexicalJudge",
    "MetricResult",
    "ModelPrice",
    "PriceTable",
    "Unit",
    "UnitVerdict",
    "Usage",
    "check_evidence",
    "injection_hits",
    "load_prices",
    "make_judge",
    "normalise_for_match",
    "quote_found",
    "reads_as_instruction",
    "segment_answer",
    "suspect_documents",
]

JUDGE_NAMES = ("auto", "lexical", "anthropic")


def __getattr__(name: str) -> Any:
    # AnthropicJudge imports the `anthropic` package; keep it lazy for the core install.
    if name == "AnthropicJudge":
        from .anthropic import AnthropicJudge

        return AnthropicJudge
    raise AttributeError(name)


def make_judge(name: str = "auto", **options: Any) -> LexicalJudge | AnthropicJudge:
    """A judge by name. ``options`` go to the judge's constructor (see LexicalJudge,
    AnthropicJudge); with ``auto`` they go to whichever judge is chosen, lexical ones ignored
    when they do not apply."""
    if name not in JUDGE_NAMES:
        raise ValueError(f"unknown judge {name!r}; expected one of {', '.join(JUDGE_NAMES)}")
    if name == "auto":
        has_key = bool(options.get("api_key") or os.environ.get("ANTHROPIC_API_KEY"))
        name = "anthropic" if has_key else "lexical"
        if name == "lexical":
            options = {k: v for k, v in options.items() if k == "threshold"}
    if name == "lexical":
        return LexicalJudge(**options)
    if not (options.get("api_key") or os.environ.get("ANTHROPIC_API_KEY")):
        raise ValueError(
            "the anthropic judge needs an API key: set ANTHROPIC_API_KEY "
            "(or use --judge lexical offline)"
        )
    from .anthropic import AnthropicJudge

    return AnthropicJudge(**options)
