"""From a judge's per-unit claims to a groundedness result: the one scoring path of both judges.

For each unit the judge's claims are checked (:mod:`ragtrace.evaluation.judges.checks`): every
claim called entailed must pass the evidence checks (and, in answer mode, come from its unit);
the unit is supported when it has claims, all of them entailed, and they cover it. A unit with no
claims is accepted as claimless only when it is short and carries no figure. Duplicate claims
(same normalised text) are listed once, the worst verdict kept; they never move the score, which
is computed over units. A unit failed by a unit check (``coverage``, ``claimless``) while none of
its claims is unsupported is itself listed as an unsupported claim, so the claims shown (and
written back as "unsupported") account for every unsupported unit.

Context documents flagged for a suspected injection are listed on the result and excluded as
evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .base import ClaimVerdict, GroundednessResult, JudgeInfo, UnitVerdict, Usage
from .checks import (
    check_claimless,
    check_coverage,
    check_evidence,
    check_unit_fidelity,
)
from .evidence import normalise_for_match
from .segment import Unit

__all__ = ["JudgedClaim", "score_units"]


@dataclass(frozen=True)
class JudgedClaim:
    """A claim as the judge gave it, before any check."""

    claim: str
    entailed: bool
    evidence: str | None
    support: float | None = None


def _verdict(
    raw: JudgedClaim,
    unit: Unit,
    earlier: str,
    context: Sequence[str],
    suspect: Sequence[int],
    answer_mode: bool,
) -> ClaimVerdict:
    failed = check_evidence(raw.claim, raw.evidence, context, suspect)
    if failed is None and answer_mode:
        failed = check_unit_fidelity(raw.claim, unit.text, earlier)
        verified = True
    else:
        verified = failed is None
    return ClaimVerdict(
        raw.claim,
        raw.entailed,
        raw.evidence,
        verified,
        raw.support,
        unit.id,
        failed if raw.entailed else None,
    )


def _unsupported_unit(unit: Unit) -> ClaimVerdict:
    """A unit failed by a unit check while no claim of it is unsupported: the unit itself is
    listed as an unsupported claim, so every unsupported unit shows among the claims."""
    return ClaimVerdict(unit.text, False, None, False, None, unit.id)


def _dedupe(claims: Sequence[ClaimVerdict]) -> tuple[ClaimVerdict, ...]:
    kept: dict[str, ClaimVerdict] = {}
    for c in claims:
        key = normalise_for_match(c.claim)
        if key not in kept or (kept[key].entailed and not c.entailed):
            kept[key] = c
    order = {id(c): i for i, c in enumerate(claims)}
    return tuple(sorted(kept.values(), key=lambda c: order[id(c)]))


def score_units(
    units: Sequence[Unit],
    judged: Mapping[int, Sequence[JudgedClaim]],
    context: Sequence[str],
    judge: JudgeInfo,
    *,
    suspect: Sequence[int] = (),
    answer_mode: bool = True,
    usage: Usage | None = None,
    cost_usd: float = 0.0,
    latency_s: float = 0.0,
    served_model: str | None = None,
) -> GroundednessResult:
    """The result for ``units`` given the judge's claims per unit ID (every ID present: the
    parser has already refused a judgement that misses, repeats or invents a unit).

    ``answer_mode=False`` is claims mode (calibration): each unit is a given claim, judged as
    one claim, with no unit-fidelity, coverage or claimless checks.
    """
    unit_verdicts: list[UnitVerdict] = []
    all_claims: list[ClaimVerdict] = []
    for n, unit in enumerate(units):
        earlier = " ".join(u.text for u in units[:n])
        raws = judged[unit.id]
        if not raws:
            if not answer_mode:
                raise ValueError(f"claims mode: no verdict for claim {unit.id}")
            failed = check_claimless(unit.text)
            unit_verdicts.append(UnitVerdict(unit.id, unit.text, False, failed is None, failed))
            if failed is not None:
                all_claims.append(_unsupported_unit(unit))
            continue
        verdicts = [_verdict(r, unit, earlier, context, suspect, answer_mode) for r in raws]
        all_claims.extend(verdicts)
        supported = all(v.entailed for v in verdicts)
        failed = None
        if supported and answer_mode:
            failed = check_coverage([r.claim for r in raws], unit.text)
            supported = failed is None
            if failed is not None:
                all_claims.append(_unsupported_unit(unit))
        unit_verdicts.append(UnitVerdict(unit.id, unit.text, supported, False, failed))
    return GroundednessResult.from_units(
        unit_verdicts,
        _dedupe(all_claims),
        judge,
        injection_suspected=suspect,
        usage=usage,
        cost_usd=cost_usd,
        latency_s=latency_s,
        served_model=served_model,
    )
