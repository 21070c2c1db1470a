"""The judge seam: result values, the ``Judge`` protocol and its errors.

A judge turns (answer, context) into a verdict per answer unit (the code splits the answer:
:mod:`ragtrace.evaluation.judges.segment`), each unit refined into claims. Whatever the judge
says, a claim counts as *entailed* only when the judge marked it so **and** its evidence quote
passed every check of :mod:`ragtrace.evaluation.judges.checks` (verbatim in one document, not an
instruction, not from an injected passage, long enough, sharing the claim's key terms): the
quote is what makes the verdict checkable. The score is computed over units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

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


def _number(value: object, field: str) -> float:
    """A stored number (JSON int, float or numeric string) as float; TypeError names ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"{field} must be a number, got {value!r}")
    return float(value)


def _optional_number(value: object, field: str) -> float | None:
    return None if value is None else _number(value, field)


def _object(value: object, field: str) -> Mapping[str, object]:
    """A stored JSON object; TypeError names ``field``."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{field} must be an object, got {value!r}")
    return value


@dataclass(frozen=True)
class JudgeInfo:
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
    provider: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("JudgeInfo.name must be non-empty")
        if len(self.prompt_sha256) != 64:
            raise ValueError(
                f"JudgeInfo.prompt_sha256 must be 64 hex chars: {self.prompt_sha256!r}"
            )

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "model": self.model,
            "prompt_sha256": self.prompt_sha256,
            "provider": self.provider,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> JudgeInfo:
        model, provider = d.get("model"), d.get("provider")
        return cls(
            str(d["name"]),
            None if model is None else str(model),
            str(d["prompt_sha256"]),
            None if provider is None else str(provider),
        )


@dataclass(frozen=True)
class Usage:
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

    def to_dict(self) -> dict[str, object]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Usage:
        def get(key: str) -> int:
            value = d.get(key, 0)
            return (
                int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
            )

        return cls(
            get("input_tokens"),
            get("output_tokens"),
            get("cache_read_input_tokens"),
            get("cache_creation_input_tokens"),
        )


@dataclass(frozen=True)
class ClaimVerdict:
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
    support: float | None = None
    unit: int | None = None
    check: str | None = None

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

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "claim": self.claim,
            "entailed": self.entailed,
            "judge_entailed": self.judge_entailed,
            "evidence": self.evidence,
            "evidence_verified": self.evidence_verified,
            "downgraded": self.downgraded,
        }
        if self.downgraded:
            d["downgrade_reason"] = self.downgrade_reason
        if self.check is not None:
            d["check"] = self.check
        if self.unit is not None:
            d["unit"] = self.unit
        if self.support is not None:
            d["support"] = self.support
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> ClaimVerdict:
        evidence = d.get("evidence")
        support = d.get("support")
        unit = d.get("unit")
        check = d.get("check")
        judge_entailed = d.get("judge_entailed", d.get("entailed"))
        return cls(
            claim=str(d["claim"]),
            judge_entailed=bool(judge_entailed),
            evidence=None if evidence is None else str(evidence),
            evidence_verified=bool(d.get("evidence_verified", False)),
            support=_optional_number(support, "support"),
            unit=None if unit is None else int(_number(unit, "unit")),
            check=None if check is None else str(check),
        )


@dataclass(frozen=True)
class UnitVerdict:
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
    check: str | None = None

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

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "id": self.id,
            "text": self.text,
            "supported": self.supported,
            "claimless": self.claimless,
        }
        if self.check is not None:
            d["check"] = self.check
            d["reason"] = _describe(self.check)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> UnitVerdict:
        check, unit_id = d.get("check"), d["id"]
        if not isinstance(unit_id, (int, str)):
            raise TypeError(f"unit id must be an integer, got {unit_id!r}")
        return cls(
            int(unit_id),
            str(d["text"]),
            bool(d.get("supported")),
            bool(d.get("claimless", False)),
            None if check is None else str(check),
        )


def _check_score(score: float | None, error: str | None, owner: str) -> None:
    if (score is None) != (error is not None):
        raise ValueError(
            f"{owner}: score is None exactly when error is set (score={score!r}, error={error!r})"
        )
    if score is not None and (math.isnan(score) or not 0.0 <= score <= 1.0):
        raise ValueError(f"{owner}.score must be in [0, 1], got {score!r}")


@dataclass(frozen=True)
class GroundednessResult:
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
    units: tuple[UnitVerdict, ...] = ()
    injection_suspected: tuple[int, ...] = ()
    served_model: str | None = None

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

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "score": self.score,
            "claims": [c.to_dict() for c in self.claims],
            "judge": self.judge.to_dict(),
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "no_claims": self.no_claims,
            "error": self.error,
            "latency_s": self.latency_s,
        }
        if self.units:
            d["units"] = [u.to_dict() for u in self.units]
        if self.injection_suspected:
            d["injection_suspected"] = list(self.injection_suspected)
        if self.served_model is not None:
            d["served_model"] = self.served_model
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> GroundednessResult:
        claims = d.get("claims") or []
        units = d.get("units") or []
        suspected = d.get("injection_suspected") or []
        if (
            not isinstance(claims, list)
            or not isinstance(units, list)
            or not isinstance(suspected, list)
        ):
            raise TypeError(
                "GroundednessResult.from_dict: claims, units and injection_suspected must be lists"
            )
        usage = d.get("usage") or {}
        score = d.get("score")
        error = d.get("error")
        served = d.get("served_model")
        return cls(
            score=_optional_number(score, "score"),
            claims=tuple(ClaimVerdict.from_dict(c) for c in claims),
            judge=JudgeInfo.from_dict(_object(d["judge"], "judge")),
            usage=Usage.from_dict(_object(usage, "usage")),
            cost_usd=_number(d.get("cost_usd", 0.0), "cost_usd"),
            no_claims=bool(d.get("no_claims", False)),
            error=None if error is None else str(error),
            latency_s=_number(d.get("latency_s", 0.0), "latency_s"),
            units=tuple(UnitVerdict.from_dict(u) for u in units),
            injection_suspected=tuple(int(i) for i in suspected),
            served_model=None if served is None else str(served),
        )


@dataclass(frozen=True)
class MetricResult:
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

    def __post_init__(self) -> None:
        if not self.metric:
            raise ValueError("MetricResult.metric must be non-empty")
        _check_score(self.score, self.error, "MetricResult")

    def to_dict(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "score": self.score,
            "details": [dict(x) for x in self.details],
            "judge": self.judge.to_dict(),
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "error": self.error,
            "latency_s": self.latency_s,
            "served_model": self.served_model,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> MetricResult:
        details = d.get("details") or []
        if not isinstance(details, list) or not all(isinstance(x, dict) for x in details):
            raise TypeError("MetricResult.from_dict: details must be a list of objects")
        score = d.get("score")
        error = d.get("error")
        return cls(
            metric=str(d["metric"]),
            score=_optional_number(score, "score"),
            judge=JudgeInfo.from_dict(_object(d["judge"], "judge")),
            details=tuple(details),
            usage=Usage.from_dict(_object(d.get("usage") or {}, "usage")),
            cost_usd=_number(d.get("cost_usd", 0.0), "cost_usd"),
            error=None if error is None else str(error),
            latency_s=_number(d.get("latency_s", 0.0), "latency_s"),
        )


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


class JudgeUnavailable(Exception):
    """The judge could not answer within its time budget (rate limit, overload, 5xx, timeout:
    :mod:`ragtrace.evaluation.judges.retry`). The caller should park the work and retry later, after ``retry_after`` seconds
    when the API said how long to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JudgeCapabilityError(NotImplementedError):
    """This judge cannot compute the requested metric (e.g. answer relevancy offline)."""
