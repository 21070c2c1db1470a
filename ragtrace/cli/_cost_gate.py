"""What a batch of judge calls is expected to cost, the consent a paid run needs, and a cap.

Before a paid judge (any judge not declaring ``paid = False``) judges anything, the command
prints the expected tokens and cost of the answers still to judge and goes ahead only with
``--yes`` or with ``--max-cost USD`` at or above the estimate. During the run, :class:`CostCap`
stops starting new judgements once the money spent reaches ``--max-cost`` (the calls in flight
finish and are kept; a later run resumes).

The estimate: input tokens from the exact request the judge would send when it can build one
(``groundedness_request``), else from the instructions, context and answer, at
:data:`CHARS_PER_TOKEN`; output tokens :data:`OUTPUT_TOKENS_PER_UNIT` per answer unit plus
:data:`OUTPUT_TOKENS_BASE`; priced by the judge's price table at list prices, no caching. It
is an estimate: the run's stderr totals report what was billed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.evaluation.judges import (
    GroundednessResult,
    JudgeInfo,
    JudgeUnavailable,
    Usage,
    load_prices,
    segment_answer,
)
from ragtrace.evaluation.judges.prompts import GROUNDEDNESS_INSTRUCTIONS

__all__ = [
    "CHARS_PER_TOKEN",
    "OUTPUT_TOKENS_BASE",
    "OUTPUT_TOKENS_PER_UNIT",
    "CostCap",
    "CostEstimate",
    "consent_problem",
    "estimate_cost",
    "is_paid",
]

CHARS_PER_TOKEN = 3.5
OUTPUT_TOKENS_PER_UNIT = 120
OUTPUT_TOKENS_BASE = 40


def is_paid(judge: Any) -> bool:
    """Calls cost money unless the judge declares ``paid = False``."""
    return bool(getattr(judge, "paid", True))


@dataclass(frozen=True)
class CostEstimate:
    """Expected tokens of ``answers`` judgements; ``usd`` None when the model has no price."""

    answers: int
    input_tokens: int
    output_tokens: int
    usd: float | None
    model: str | None

    def describe(self) -> str:
        cost = "unknown (no price for this model)" if self.usd is None else f"${self.usd:.2f}"
        return (
            f"{self.answers} answer(s) to judge with {self.model or 'the judge'}: expected about "
            f"{self.input_tokens:,} input and {self.output_tokens:,} output tokens, "
            f"cost {cost} at list prices"
        )


def _input_chars(judge: Any, answer: str, context: Sequence[str]) -> int:
    build = getattr(judge, "groundedness_request", None)
    if callable(build):
        return len(json.dumps(build(answer, list(context)), ensure_ascii=False))
    return len(GROUNDEDNESS_INSTRUCTIONS) + len(answer) + sum(len(c) for c in context) + 2000


def estimate_cost(judge: Any, answers: Sequence[tuple[str, Sequence[str]]]) -> CostEstimate:
    """The expected cost of judging ``answers`` (``(answer, context)`` pairs) with ``judge``."""
    chars = sum(_input_chars(judge, a, c) for a, c in answers)
    units = sum(len(segment_answer(a)) for a, _ in answers)
    usage = Usage(
        int(chars / CHARS_PER_TOKEN),
        OUTPUT_TOKENS_BASE * len(answers) + OUTPUT_TOKENS_PER_UNIT * units,
    )
    model = judge.info.model
    prices = getattr(judge, "prices", None) or load_prices()
    price = prices.lookup(model)
    return CostEstimate(
        len(answers),
        usage.input_tokens,
        usage.output_tokens,
        None if price is None else price.cost(usage),
        model,
    )


def consent_problem(estimate: CostEstimate, *, yes: bool, max_cost: float | None) -> str | None:
    """Why a paid run may not start (None: it may)."""
    if yes:
        return None
    if max_cost is None:
        return "this run calls a paid judge: pass --yes, or --max-cost USD to cap the spend"
    if estimate.usd is None:
        return "--max-cost cannot be checked without a price for this model: pass --yes"
    if estimate.usd > max_cost:
        return (
            f"expected cost ${estimate.usd:.2f} is above --max-cost ${max_cost:.2f} "
            "(raise it, or pass --yes)"
        )
    return None


class CostCap:
    """A judge that refuses to start a judgement once ``limit_usd`` has been spent: it raises
    :class:`JudgeUnavailable`, which makes the batch stop starting new work and keep what
    finished (a run resumes later)."""

    def __init__(self, judge: Any, limit_usd: float) -> None:
        self._judge = judge
        self._limit = limit_usd
        self._spent = 0.0
        self._lock = threading.Lock()

    @property
    def info(self) -> JudgeInfo:
        return self._judge.info  # type: ignore[no-any-return]

    @property
    def spent_usd(self) -> float:
        return self._spent

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        with self._lock:
            if self._spent >= self._limit:
                raise JudgeUnavailable(
                    f"--max-cost ${self._limit:.2f} reached (spent ${self._spent:.4f})"
                )
        result: GroundednessResult = self._judge.groundedness(answer, context)
        with self._lock:
            self._spent += result.cost_usd
        return result
