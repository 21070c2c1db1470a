"""Which assembled traces get which scores: deterministic by trace ID, with per-route rules.

Every replica must agree on a trace, so nothing here is random: a trace's position
``u = blake2b(salt + trace_id) / 2**64`` in [0, 1) is compared with each rate. Recall is computed
when ``u < recall_rate`` and the judge runs when ``u < judge_rate``, so the judged traces are a
subset of the recall-scored ones whenever ``judge_rate <= recall_rate`` (the attribution cells
need both scores on the same trace).

Rules are tried in order and the first whose every pattern matches sets the rates (a rate left
None keeps the default). Pattern keys: ``service``, ``pipeline``, ``model``, or any user
attribute of the trace's pipeline span (``http.route``, ``tenant``, …); values are shell-style
globs (``fnmatch``, case-sensitive). A key the trace lacks never matches.

The judge budget is *not* spent here: the judging step takes it after its result-cache lookup
(a cached judgement costs nothing), and skips the judge with reason ``budget_exhausted`` when
the shared budget is spent — skip, not defer, so a sustained overload never builds a backlog.

Every skip carries a bounded reason (a metric attribute): see :data:`SKIP_REASONS`.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtrace_consumers.model import (
    SKIP_CONTEXT_TEXT_MISSING,
    SKIP_CONTEXT_TRUNCATED,
    SKIP_NO_ANSWER,
    SKIP_NO_CONTEXT,
    SKIP_NO_GENERATION,
    SKIP_NO_RETRIEVAL,
    SKIP_SAMPLED_OUT,
    RagTrace,
    SamplingDecision,
)

__all__ = [
    "Sampler",
    "SamplerConfig",
    "SamplingRule",
    "parse_rules",
    "trace_position",
]


def _check_rate(name: str, rate: float | None) -> None:
    if rate is not None and (isinstance(rate, bool) or not 0.0 <= rate <= 1.0):
        raise ValueError(f"{name} must be between 0 and 1, got {rate!r}")


@dataclass(frozen=True)
class SamplingRule:
    """Rates for the traces whose fields all match ``match`` (key -> glob)."""

    match: Mapping[str, str]
    recall_rate: float | None = None
    judge_rate: float | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not self.match:
            raise ValueError("a sampling rule needs at least one match pattern")
        for key, pattern in self.match.items():
            if not isinstance(key, str) or not key or not isinstance(pattern, str):
                raise ValueError(f"bad sampling rule pattern {key!r}: {pattern!r}")
        _check_rate("recall_rate", self.recall_rate)
        _check_rate("judge_rate", self.judge_rate)
        object.__setattr__(self, "match", dict(self.match))

    def matches(self, trace: RagTrace) -> bool:
        for key, pattern in self.match.items():
            value = _field(trace, key)
            if value is None or not fnmatch.fnmatchcase(value, pattern):
                return False
        return True

    @property
    def label(self) -> str:
        return self.name or ",".join(f"{k}={v}" for k, v in sorted(self.match.items()))


def _field(trace: RagTrace, key: str) -> str | None:
    value: str | None
    if key == "service":
        value = trace.service
    elif key == "pipeline":
        value = trace.pipeline
    elif key == "model":
        value = trace.model
    else:
        value = trace.attributes.get(key)
    return value


@dataclass(frozen=True)
class SamplerConfig:
    """Default rates, ordered rules, the hash salt, and whether truncated context is judged."""

    recall_rate: float = 1.0
    judge_rate: float = 1.0
    rules: tuple[SamplingRule, ...] = ()
    salt: str = ""
    judge_truncated_context: bool = False

    def __post_init__(self) -> None:
        _check_rate("recall_rate", self.recall_rate)
        _check_rate("judge_rate", self.judge_rate)
        object.__setattr__(self, "rules", tuple(self.rules))
        for rule in self.rules:
            if not isinstance(rule, SamplingRule):
                raise TypeError(f"rules must be SamplingRule values, got {rule!r}")


def trace_position(trace_id: str, salt: str = "") -> float:
    """The trace's deterministic position in [0, 1)."""
    digest = hashlib.blake2b((salt + trace_id.lower()).encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


class Sampler:
    """Decides per trace; stateless and thread-safe."""

    def __init__(self, config: SamplerConfig | None = None) -> None:
        self._config = config or SamplerConfig()

    @property
    def config(self) -> SamplerConfig:
        return self._config

    def decide(self, trace: RagTrace) -> SamplingDecision:
        cfg = self._config
        recall_rate, judge_rate, rule_label = cfg.recall_rate, cfg.judge_rate, None
        for rule in cfg.rules:
            if rule.matches(trace):
                rule_label = rule.label
                if rule.recall_rate is not None:
                    recall_rate = rule.recall_rate
                if rule.judge_rate is not None:
                    judge_rate = rule.judge_rate
                break
        u = trace_position(trace.trace_id, cfg.salt)

        recall_reason: str | None = None
        if not trace.has_retrieval:
            recall_reason = SKIP_NO_RETRIEVAL
        elif not u < recall_rate:
            recall_reason = SKIP_SAMPLED_OUT

        judge_reason: str | None = None
        if not trace.has_generation:
            judge_reason = SKIP_NO_GENERATION
        elif not trace.answer:
            judge_reason = SKIP_NO_ANSWER
        elif not trace.context:
            judge_reason = SKIP_NO_CONTEXT
        elif any(c.text is None for c in trace.context):
            judge_reason = SKIP_CONTEXT_TEXT_MISSING
        elif trace.context_truncated and not cfg.judge_truncated_context:
            judge_reason = SKIP_CONTEXT_TRUNCATED
        elif not u < judge_rate:
            judge_reason = SKIP_SAMPLED_OUT
        return SamplingDecision(
            recall=recall_reason is None,
            judge=judge_reason is None,
            recall_reason=recall_reason,
            judge_reason=judge_reason,
            rule=rule_label,
        )


def parse_rules(
    items: Sequence[Mapping[str, object]], *, where: str = "rules"
) -> tuple[SamplingRule, ...]:
    """Rules from configuration data: ``[{"match": {...}, "recall_rate": .., "judge_rate": ..,
    "name": ..}]``; a bad entry raises ValueError naming ``where[i]`` and the field."""
    rules: list[SamplingRule] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"{where}[{i}]: expected a mapping, got {type(item).__name__}")
        unknown = set(item) - {"match", "recall_rate", "judge_rate", "name"}
        if unknown:
            raise ValueError(f"{where}[{i}]: unknown keys {sorted(unknown)}")
        match = item.get("match")
        if not isinstance(match, Mapping):
            raise TypeError(f"{where}[{i}].match: expected a mapping of attribute -> glob")
        try:
            rules.append(
                SamplingRule(
                    match={str(k): str(v) for k, v in match.items()},
                    recall_rate=_rate(item.get("recall_rate")),
                    judge_rate=_rate(item.get("judge_rate")),
                    name=None if item.get("name") is None else str(item.get("name")),
                )
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}[{i}]: {exc}") from None
    return tuple(rules)


def _rate(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"rate must be a number, got {value!r}")
    return float(value)
