"""The judge seam: result values, the ``Judge`` protocol and its errors.

A judge turns (answer, context) into per-claim verdicts. Whatever the judge says, a claim counts as
*entailed* only when the judge marked it so **and** its evidence quote was found in the context
(see :mod:`ragtrace.evaluation.judges.evidence`): the quote is what makes the verdict checkable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "AnswerJudge",
    "ClaimVerdict",
    "GroundednessResult",
    "Judge",
    "JudgeCapabilityError",
    "JudgeInfo",
    "JudgeUnavailable",
    "MetricResult",
    "Usage",
]


@dataclass(frozen=True)
class JudgeInfo:
    """Provenance stored with every score: which judge, which exact model, which prompt.

    ``model`` is the model ID the API reported in its response (``None`` for model-free judges);
    ``prompt_sha256`` hashes the full prompt template (instructions, message layout, tool schema),
    so a changed prompt is visible in every stored score.
    """

    name: str
    model: str | None
    prompt_sha256: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("JudgeInfo.name must be non-empty")
        if len(self.prompt_sha256) != 64:
            raise ValueError(f"JudgeInfo.prompt_sha256 must be 64 hex chars: {self.prompt_sha256!r}")

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "model": self.model, "prompt_sha256": self.prompt_sha256}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> JudgeInfo:
        model = d.get("model")
        return cls(str(d["name"]), None if model is None else str(model), str(d["prompt_sha256"]))


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
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                     "cache_creation_input_tokens"):
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
        return (self.input_tokens + self.output_tokens + self.cache_read_input_tokens
                + self.cache_creation_input_tokens)

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
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
                else 0
        return cls(get("input_tokens"), get("output_tokens"), get("cache_read_input_tokens"),
                   get("cache_creation_input_tokens"))


@dataclass(frozen=True)
class ClaimVerdict:
    """One atomic claim of the answer and what became of it.

    ``judge_entailed`` is the judge's own verdict; ``evidence_verified`` says whether the quote it
    gave was found in the supplied context. Only both together make the claim entailed.
    ``support`` is the lexical judge's word-overlap share (``None`` for model judges).
    """

    claim: str
    judge_entailed: bool
    evidence: str | None
    evidence_verified: bool
    support: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.claim, str):
            raise TypeError("ClaimVerdict.claim must be a string")
        if self.evidence_verified and not (self.evidence and self.evidence.strip()):
            raise ValueError("ClaimVerdict.evidence_verified requires a non-empty evidence quote")
        if self.support is not None and not 0.0 <= self.support <= 1.0:
            raise ValueError(f"ClaimVerdict.support must be in [0, 1], got {self.support!r}")

    @property
    def entailed(self) -> bool:
        return self.judge_entailed and self.evidence_verified

    @property
    def downgraded(self) -> bool:
        """The judge said entailed but its quote is missing or not in the context."""
        return self.judge_entailed and not self.evidence_verified

    @property
    def downgrade_reason(self) -> str | None:
        if not self.downgraded:
            return None
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
        if self.support is not None:
            d["support"] = self.support
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> ClaimVerdict:
        evidence = d.get("evidence")
        support = d.get("support")
        judge_entailed = d.get("judge_entailed", d.get("entailed"))
        return cls(
            claim=str(d["claim"]),
            judge_entailed=bool(judge_entailed),
            evidence=None if evidence is None else str(evidence),
            evidence_verified=bool(d.get("evidence_verified", False)),
            support=None if support is None else float(support),  # type: ignore[arg-type]
        )


def _check_score(score: float | None, error: str | None, owner: str) -> None:
    if (score is None) != (error is not None):
        raise ValueError(f"{owner}: score is None exactly when error is set "
                         f"(score={score!r}, error={error!r})")
    if score is not None and (math.isnan(score) or not 0.0 <= score <= 1.0):
        raise ValueError(f"{owner}.score must be in [0, 1], got {score!r}")


@dataclass(frozen=True)
class GroundednessResult:
    """Groundedness of one answer: verified entailed claims / claims.

    ``score`` is ``None`` iff ``error`` is set (a judge failure is never turned into a score).
    An answer with no claims scores 1.0 with ``no_claims=True``, as the definition has it.
    """

    score: float | None
    claims: tuple[ClaimVerdict, ...]
    judge: JudgeInfo
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    no_claims: bool = False
    error: str | None = None
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        _check_score(self.score, self.error, "GroundednessResult")
        if self.no_claims and (self.claims or self.score != 1.0):
            raise ValueError("GroundednessResult.no_claims requires no claims and score 1.0")
        if self.cost_usd < 0 or self.latency_s < 0:
            raise ValueError("GroundednessResult.cost_usd and latency_s must be >= 0")

    @classmethod
    def from_claims(cls, claims: Sequence[ClaimVerdict], judge: JudgeInfo, *,
                    usage: Usage | None = None, cost_usd: float = 0.0,
                    latency_s: float = 0.0) -> GroundednessResult:
        """Score verified claims: entailed / total, or 1.0 flagged ``no_claims`` when empty."""
        claims = tuple(claims)
        if not claims:
            return cls(1.0, (), judge, usage or Usage(), cost_usd, True, None, latency_s)
        score = sum(c.entailed for c in claims) / len(claims)
        return cls(score, claims, judge, usage or Usage(), cost_usd, False, None, latency_s)

    @classmethod
    def failed(cls, error: str, judge: JudgeInfo, *, usage: Usage | None = None,
               cost_usd: float = 0.0, latency_s: float = 0.0) -> GroundednessResult:
        return cls(None, (), judge, usage or Usage(), cost_usd, False, error, latency_s)

    @property
    def unsupported_claims(self) -> int:
        return sum(not c.entailed for c in self.claims)

    @property
    def downgraded_claims(self) -> int:
        return sum(c.downgraded for c in self.claims)

    def to_dict(self) -> dict[str, object]:
        return {
            "score": self.score,
            "claims": [c.to_dict() for c in self.claims],
            "judge": self.judge.to_dict(),
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "no_claims": self.no_claims,
            "error": self.error,
            "latency_s": self.latency_s,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> GroundednessResult:
        claims = d.get("claims") or []
        if not isinstance(claims, list):
            raise TypeError("GroundednessResult.from_dict: claims must be a list")
        usage = d.get("usage") or {}
        score = d.get("score")
        error = d.get("error")
        return cls(
            score=None if score is None else float(score),  # type: ignore[arg-type]
            claims=tuple(ClaimVerdict.from_dict(c) for c in claims),
            judge=JudgeInfo.from_dict(d["judge"]),  # type: ignore[arg-type]
            usage=Usage.from_dict(usage),  # type: ignore[arg-type]
            cost_usd=float(d.get("cost_usd", 0.0)),  # type: ignore[arg-type]
            no_claims=bool(d.get("no_claims", False)),
            error=None if error is None else str(error),
            latency_s=float(d.get("latency_s", 0.0)),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class MetricResult:
    """A judge metric other than groundedness (``answer_relevancy``, ``answer_correctness``).

    ``details`` holds the per-item verdicts the score was computed from (their shape is stated by
    the method that produced them). ``score`` is ``None`` iff ``error`` is set.
    """

    metric: str
    score: float | None
    judge: JudgeInfo
    details: tuple[Mapping[str, object], ...] = ()
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    error: str | None = None
    latency_s: float = 0.0

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
        }


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
    """The judge could not be reached after the client's retries (rate limit, overload, 5xx,
    timeout). The caller should park the work and retry later, after ``retry_after`` seconds
    when the API said how long to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JudgeCapabilityError(NotImplementedError):
    """This judge cannot compute the requested metric (e.g. answer relevancy offline)."""
