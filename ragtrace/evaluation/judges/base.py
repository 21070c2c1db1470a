"""The judge seam: result values, the ``Judge`` protocol and its errors.

A judge turns (answer, context) into a verdict per answer unit (the code splits the answer:
:mod:`ragtrace.evaluation.judges.segment`), each unit refined into claims. Whatever the judge
says, a claim counts as *entailed* only when the judge marked it so **and** its evidence quote
passed every check of :mod:`ragtrace.evaluation.judges.checks` (verbatim in one document, not an
instruction, not from an injected passage, long enough, sharing the claim's key terms): the
quote is what makes the verdict checkable. The score is computed over units.

Each result's stored JSON form (``to_dict`` / ``from_dict``) is generated from its dataclass
fields (:mod:`ragtrace.evaluation.judges._codec`); a class states only where its form departs
from one key per field (``WIRE``, :func:`~ragtrace.evaluation.judges._codec.omitted_at_default`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ragtrace.errors import RagtraceError

from ._codec import Serialised, Wire, omitted_at_default
from .checks import CHECKS as _CHECK_NAMES
from .checks import UNIT_CHECKS as _UNIT_CHECKS
from .checks import describe as _describe

__all__ = [
    "AnswerJudge",
    "ClaimVerdict",
    "GroundednessResult",
    "Judge",
    "JudgeCapabilityError",
    "JudgeInfo",
    "JudgeUnavailable",
    "MetricResult",
    "UnitVerdict",
    "Usage",
]


@dataclass(frozen=True)
class JudgeInfo(Serialised):
    """Provenance stored with every score: which judge, which model, which prompt.

    ``model`` is the model the judge was configured with (``None`` for model-free judges), the
    same for the judge's whole life, so metric series keyed by it never split; the model the API
    reports having served (an alias resolved to a dated ID) is the result's ``served_model``.
    ``prompt_sha256`` hashes the full prompt template (instructions, message layout, tool schema),
    so a changed prompt is visible in every stored score. ``provider`` is the API the model was
    reached through (``anthropic``, ``bedrock``, ``vertex``, ``openai``; ``None`` for model-free
    judges and for results stored before it was recorded).
    """

    name: str
    model: str | None
    prompt_sha256: str
    provider: str | None = omitted_at_default(None)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("JudgeInfo.name must be non-empty")
        if len(self.prompt_sha256) != 64:
            raise ValueError(
                f"JudgeInfo.prompt_sha256 must be 64 hex chars: {self.prompt_sha256!r}"
            )


@dataclass(frozen=True)
class Usage(Serialised):
    """Tokens billed for one judge call (or a sum of calls), as the Messages API reports them.

    ``input_tokens`` excludes the cached tokens, which are counted in the two cache fields.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __post_init__(self) -> None:
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Usage.{name} must be a non-negative int, got {value!r}")

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
        )


@dataclass(frozen=True)
class ClaimVerdict(Serialised):
    """One atomic claim of the answer and what became of it.

    ``judge_entailed`` is the judge's own verdict; ``evidence_verified`` says whether the quote it
    gave passed the evidence checks. ``check`` names the first failed check (see
    :data:`ragtrace.evaluation.judges.checks.CHECKS`) of a claim the judge called entailed;
    ``unit`` is the answer unit the claim refines. Only ``judge_entailed``, a verified quote and
    no failed check together make the claim entailed. ``support`` is the lexical judge's
    word-overlap share (``None`` for model judges).
    """

    claim: str
    judge_entailed: bool
    evidence: str | None
    evidence_verified: bool
    support: float | None = omitted_at_default(None)
    unit: int | None = omitted_at_default(None)
    check: str | None = omitted_at_default(None)

    # Stored with the verdicts it derives (for readers of the JSON); claims stored before
    # ``judge_entailed`` existed carry the judge's verdict as ``entailed``.
    WIRE = Wire(
        order=(
            "claim",
            "entailed",
            "judge_entailed",
            "evidence",
            "evidence_verified",
            "downgraded",
            "downgrade_reason",
            "check",
            "unit",
            "support",
        ),
        derived=("entailed", "downgraded", "downgrade_reason"),
        fallback={"judge_entailed": "entailed"},
    )

    def __post_init__(self) -> None:
        if not isinstance(self.claim, str):
            raise TypeError("ClaimVerdict.claim must be a string")
        if self.evidence_verified and not (self.evidence and self.evidence.strip()):
            raise ValueError("ClaimVerdict.evidence_verified requires a non-empty evidence quote")
        if self.support is not None and not 0.0 <= self.support <= 1.0:
            raise ValueError(f"ClaimVerdict.support must be in [0, 1], got {self.support!r}")
        if self.check is not None and self.check not in _CHECK_NAMES:
            raise ValueError(
                f"ClaimVerdict.check must be one of {_CHECK_NAMES}, got {self.check!r}"
            )

    @property
    def entailed(self) -> bool:
        return self.judge_entailed and self.evidence_verified and self.check is None

    @property
    def downgraded(self) -> bool:
        """The judge said entailed but a check failed (its quote missing, not in the context,
        unrelated to the claim …)."""
        return self.judge_entailed and not self.entailed

    @property
    def downgrade_reason(self) -> str | None:
        if not self.downgraded:
            return None
        if self.check is not None:
            return _describe(self.check)
        if self.evidence is None or not self.evidence.strip():
            return "no evidence quote given"
        return "evidence quote not found in the context"


@dataclass(frozen=True)
class UnitVerdict(Serialised):
    """One answer unit (:mod:`ragtrace.evaluation.judges.segment`) and what became of it.

    ``claimless``: the judge gave the unit no claims and the code accepted that (a short unit
    without figures); it is left out of the score. Otherwise the unit is ``supported`` when it
    has claims, every one of them entailed, and no unit check failed (``check``: ``coverage``
    or ``claimless``, see :mod:`ragtrace.evaluation.judges.checks`).
    """

    id: int
    text: str
    supported: bool
    claimless: bool = False
    check: str | None = omitted_at_default(None)

    WIRE = Wire(derived=("reason",))

    def __post_init__(self) -> None:
        if self.id < 1:
            raise ValueError(f"UnitVerdict.id must be >= 1, got {self.id}")
        if self.claimless and (self.supported or self.check is not None):
            raise ValueError("a claimless unit is neither supported nor failed")
        if self.check is not None and (self.supported or self.check not in _UNIT_CHECKS):
            raise ValueError(
                f"UnitVerdict.check must be one of {_UNIT_CHECKS} on an "
                f"unsupported unit, got {self.check!r}"
            )

    @property
    def reason(self) -> str | None:
        """What the failed unit check means (``None``: no check failed)."""
        return None if self.check is None else _describe(self.check)


def _check_score(score: float | None, error: str | None, owner: str) -> None:
    if (score is None) != (error is not None):
        raise ValueError(
            f"{owner}: score is None exactly when error is set (score={score!r}, error={error!r})"
        )
    if score is not None and (math.isnan(score) or not 0.0 <= score <= 1.0):
        raise ValueError(f"{owner}.score must be in [0, 1], got {score!r}")


@dataclass(frozen=True)
class GroundednessResult(Serialised):
    """Groundedness of one answer.

    With ``units`` (both built-in judges): supported units / units, accepted claimless units left
    out; the judge's claims decide each unit but cannot change how many there are. Without
    ``units`` (results built from bare claims): verified entailed claims / claims.
    ``score`` is ``None`` iff ``error`` is set (a judge failure is never turned into a score).
    An answer with nothing to judge scores 1.0 with ``no_claims=True``, as the definition has it.
    ``injection_suspected`` lists the 1-based context documents flagged for a suspected prompt
    injection (:mod:`ragtrace.evaluation.judges.injection`); none of them served as evidence.
    ``served_model`` is the model ID the API reported in its response (None: no call made, or a
    model-free judge); ``judge.model`` is the configured one.
    """

    score: float | None
    claims: tuple[ClaimVerdict, ...]
    judge: JudgeInfo
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    no_claims: bool = False
    error: str | None = None
    latency_s: float = 0.0
    units: tuple[UnitVerdict, ...] = omitted_at_default(())
    injection_suspected: tuple[int, ...] = omitted_at_default(())
    served_model: str | None = omitted_at_default(None)

    def __post_init__(self) -> None:
        _check_score(self.score, self.error, "GroundednessResult")
        if self.no_claims and (self.claims or self.score != 1.0):
            raise ValueError("GroundednessResult.no_claims requires no claims and score 1.0")
        if self.cost_usd < 0 or self.latency_s < 0:
            raise ValueError("GroundednessResult.cost_usd and latency_s must be >= 0")
        if any(i < 1 for i in self.injection_suspected):
            raise ValueError("GroundednessResult.injection_suspected holds 1-based indices")

    @classmethod
    def from_claims(
        cls,
        claims: Sequence[ClaimVerdict],
        judge: JudgeInfo,
        *,
        usage: Usage | None = None,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
    ) -> GroundednessResult:
        """Score verified claims: entailed / total, or 1.0 flagged ``no_claims`` when empty."""
        claims = tuple(claims)
        if not claims:
            return cls(1.0, (), judge, usage or Usage(), cost_usd, True, None, latency_s)
        score = sum(c.entailed for c in claims) / len(claims)
        return cls(score, claims, judge, usage or Usage(), cost_usd, False, None, latency_s)

    @classmethod
    def from_units(
        cls,
        units: Sequence[UnitVerdict],
        claims: Sequence[ClaimVerdict],
        judge: JudgeInfo,
        *,
        injection_suspected: Sequence[int] = (),
        usage: Usage | None = None,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        served_model: str | None = None,
    ) -> GroundednessResult:
        """Score over units: supported / (units not accepted as claimless); 1.0 flagged
        ``no_claims`` when nothing is left to judge."""
        units, claims = tuple(units), tuple(claims)
        judged = [u for u in units if not u.claimless]
        if not judged and claims:
            raise ValueError("claims given but every unit is claimless")
        score = sum(u.supported for u in judged) / len(judged) if judged else 1.0
        return cls(
            score,
            claims,
            judge,
            usage or Usage(),
            cost_usd,
            not judged,
            None,
            latency_s,
            units,
            tuple(injection_suspected),
            served_model,
        )

    @classmethod
    def failed(
        cls,
        error: str,
        judge: JudgeInfo,
        *,
        usage: Usage | None = None,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        injection_suspected: Sequence[int] = (),
        served_model: str | None = None,
    ) -> GroundednessResult:
        return cls(
            None,
            (),
            judge,
            usage or Usage(),
            cost_usd,
            False,
            error,
            latency_s,
            injection_suspected=tuple(injection_suspected),
            served_model=served_model,
        )

    @property
    def unsupported_claims(self) -> int:
        return sum(not c.entailed for c in self.claims)

    @property
    def downgraded_claims(self) -> int:
        return sum(c.downgraded for c in self.claims)

    @property
    def unsupported_units(self) -> int:
        return sum(not u.supported and not u.claimless for u in self.units)

    @property
    def downgrades_by_check(self) -> dict[str, int]:
        """How many claims each check downgraded, and units each unit check failed."""
        counts: dict[str, int] = {}
        for name in [c.check for c in self.claims if c.downgraded and c.check] + [
            u.check for u in self.units if u.check
        ]:
            counts[name] = counts.get(name, 0) + 1
        return counts


@dataclass(frozen=True)
class MetricResult(Serialised):
    """A judge metric other than groundedness (``answer_relevancy``, ``answer_correctness``).

    ``details`` holds the per-item verdicts the score was computed from (their shape is stated by
    the method that produced them). ``score`` is ``None`` iff ``error`` is set. ``served_model``
    as on :class:`GroundednessResult`.
    """

    metric: str
    score: float | None
    judge: JudgeInfo
    details: tuple[Mapping[str, object], ...] = ()
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    error: str | None = None
    latency_s: float = 0.0
    served_model: str | None = None

    WIRE = Wire(order=("metric", "score", "details"))

    def __post_init__(self) -> None:
        if not self.metric:
            raise ValueError("MetricResult.metric must be non-empty")
        _check_score(self.score, self.error, "MetricResult")


@runtime_checkable
class Judge(Protocol):
    """Scores groundedness of an answer against the context it was given."""

    @property
    def info(self) -> JudgeInfo: ...

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult: ...


@runtime_checkable
class AnswerJudge(Protocol):
    """The adjacent answer metrics, on the same judges."""

    def answer_relevancy(self, question: str, answer: str) -> MetricResult: ...

    def answer_correctness(self, question: str, answer: str, reference: str) -> MetricResult: ...


class JudgeUnavailable(RagtraceError):
    """The judge could not answer within its time budget (rate limit, overload, 5xx, timeout:
    :mod:`ragtrace.evaluation.judges.model.retry`). The caller should park the work and retry later, after ``retry_after`` seconds
    when the API said how long to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JudgeCapabilityError(RagtraceError, NotImplementedError):
    """This judge cannot compute the requested metric (e.g. answer relevancy offline)."""
