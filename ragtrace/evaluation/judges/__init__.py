"""Judges: groundedness (and the adjacent answer metrics) behind one small seam.

``make_judge(JudgeSpec(...))`` (or ``make_judge(name, **options)``, a name of
:data:`JUDGE_NAMES`) — ``auto`` is the Anthropic judge when an API key is available (``api_key=``
or ``ANTHROPIC_API_KEY``), else the offline lexical judge; ``anthropic``, ``bedrock``, ``vertex``
are the Claude judge on that provider, ``openai`` the judge over an OpenAI-compatible endpoint
(:mod:`.spec`).
"""

from __future__ import annotations

from dataclasses import fields
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
from .bounds import TOO_LARGE, JudgeLimits, is_too_large
from .checks import CHECKS, UNIT_CHECKS, check_evidence
from .evidence import normalise_for_match, quote_found
from .injection import injection_hits, reads_as_instruction, suspect_documents
from .lexical.judge import LexicalJudge
from .model.pricing import ModelPrice, PriceTable, load_prices
from .model.retry import CallBudget
from .prompts import PROMPT_SHA256
from .segment import Unit, segment_answer
from .spec import JUDGE_NAMES, PROVIDERS, JudgeSpec

if TYPE_CHECKING:
    from .model.anthropic import AnthropicJudge
    from .model.openai_compat import OpenAICompatibleJudge

__all__ = [
    "TOO_LARGE",
    "JudgeLimits",
    "is_too_large",
    "CHECKS",
    "JUDGE_NAMES",
    "PROMPT_SHA256",
    "PROVIDERS",
    "UNIT_CHECKS",
    "AnswerJudge",
    "AnthropicJudge",
    "CallBudget",
    "ClaimVerdict",
    "GroundednessResult",
    "Judge",
    "JudgeCapabilityError",
    "JudgeInfo",
    "JudgeSpec",
    "JudgeUnavailable",
    "LexicalJudge",
    "MetricResult",
    "ModelPrice",
    "OpenAICompatibleJudge",
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


def __getattr__(name: str) -> Any:
    # The model judges import their SDKs (the `judge` extra); keep them lazy for the core install.
    if name == "AnthropicJudge":
        from .model.anthropic import AnthropicJudge

        return AnthropicJudge
    if name == "OpenAICompatibleJudge":
        from .model.openai_compat import OpenAICompatibleJudge

        return OpenAICompatibleJudge
    raise AttributeError(name)


_SPEC_KEYS = frozenset(f.name for f in fields(JudgeSpec)) - {"name"}
_LEXICAL_OPTIONS = frozenset({"threshold", "limits"})


def make_judge(
    spec: JudgeSpec | str = "auto", /, **options: Any
) -> LexicalJudge | AnthropicJudge | OpenAICompatibleJudge:
    """The judge ``spec`` describes (see :meth:`JudgeSpec.resolved`: ``auto``, the model, the
    provider's required settings). A name instead of a spec builds one from the
    :class:`JudgeSpec` fields among ``options``; the other ``options`` go to the judge's
    constructor (``threshold`` for the lexical judge, which ignores the rest; ``prices``,
    ``instructions``, ``sleep``, ``clock``, ``client`` for a model judge). ValueError for an
    unknown name or a missing setting."""
    if isinstance(spec, str):
        spec = JudgeSpec(spec, **{k: options.pop(k) for k in _SPEC_KEYS & options.keys()})
    spec = spec.resolved()
    if spec.model_free:
        lexical = {k: v for k, v in options.items() if k in _LEXICAL_OPTIONS}
        return LexicalJudge(**{"limits": spec.limits, **lexical})
    if spec.provider == "openai":
        from .model.openai_compat import OpenAICompatibleJudge

        return OpenAICompatibleJudge.from_spec(spec, **options)
    from .model.anthropic import AnthropicJudge

    return AnthropicJudge.from_spec(spec, **options)
