"""The checks a judge's verdict must pass before a claim counts: evidence and unit fidelity.

A claim the judge marks entailed is **downgraded** (counted unsupported) at the first failed
check, which is recorded by name on the claim (:data:`CHECKS`, in the order they run):

``no_quote``
    no evidence quote, or an empty one.
``verbatim``
    the quote, normalised (:mod:`ragtrace.evaluation.judges.evidence`), is not a substring of
    one single context document (a quote stitched across documents fails too).
``instruction``
    the quote reads as an instruction to an evaluator or a model
    (:mod:`ragtrace.evaluation.judges.injection`).
``injected_passage``
    the quote is found only in documents flagged for a suspected injection: such a passage
    never serves as evidence.
``too_short``
    the quote has fewer than :data:`MIN_EVIDENCE_WORDS` content words
    (:mod:`ragtrace.evaluation.judges.terms`): ``"."`` or ``"the"`` carry no meaning.
``unrelated``
    the quote does not share the claim's content: it must contain every number and every
    named entity of the claim, and at least ``min(MIN_SHARED_WORDS, claim's content words)`` of
    the claim's content words making at least :data:`MIN_SHARED_SHARE` of them (a quote that
    carries less than half of what the claim says does not entail it).
``off_unit``
    (answer mode) the claim is not drawn from the unit it is filed under: it shares no content
    word with the unit, fewer than :data:`MIN_UNIT_SHARE` of its content words occur in the unit
    or the units before it (a pronoun may be resolved), or it adds a number none of them has. A
    claim may refine its unit, not replace it.

And per unit (answer mode), the unit is unsupported when:

``coverage``
    its claims together leave out a number of the unit or cover less than
    :data:`MIN_COVERAGE` of its content words (a judge may not drop the unsupported half).
``claimless``
    the judge gave it no claims, but it has a number or more than
    :data:`MAX_CLAIMLESS_WORDS` content words: only a short unit without figures (a greeting,
    "I don't know.") may be declared free of factual claims.

The thresholds were set on the seed's worked examples and the demo's answers, so honest
verdicts on them keep their scores (``tests/unit/evaluation/judges/test_adversarial.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache

from .evidence import normalise_for_match
from .injection import PATTERNS, reads_as_instruction
from .segment import meta_fingerprint
from .terms import ARABIC_STOP_WORDS, ENGLISH_STOP_WORDS, content_words, named_entities, numbers

__all__ = [
    "CHECKS",
    "CHECKS_VERSION",
    "MAX_CLAIMLESS_WORDS",
    "MIN_COVERAGE",
    "MIN_EVIDENCE_WORDS",
    "MIN_SHARED_SHARE",
    "MIN_SHARED_WORDS",
    "MIN_UNIT_SHARE",
    "UNIT_CHECKS",
    "check_claimless",
    "check_coverage",
    "check_evidence",
    "check_unit_fidelity",
    "checks_fingerprint",
    "could_support",
    "describe",
    "locate_quote",
]

MIN_EVIDENCE_WORDS = 2
MIN_SHARED_WORDS = 2
MIN_SHARED_SHARE = 0.5
MIN_UNIT_SHARE = 0.5
MIN_COVERAGE = 0.5
MAX_CLAIMLESS_WORDS = 4

CHECKS_VERSION = 2
"""Bump on a change to the checks' logic (thresholds, patterns and word lists are in the
fingerprint by value)."""

CHECKS = (
    "no_quote",
    "verbatim",
    "instruction",
    "injected_passage",
    "too_short",
    "unrelated",
    "off_unit",
)
UNIT_CHECKS = ("coverage", "claimless")

_DESCRIPTIONS = {
    "no_quote": "no evidence quote given",
    "verbatim": "evidence quote not found in the context",
    "instruction": "evidence quote reads as an instruction to the evaluator",
    "injected_passage": "evidence quote comes only from a passage flagged for prompt injection",
    "too_short": f"evidence quote has fewer than {MIN_EVIDENCE_WORDS} content words",
    "unrelated": "evidence quote does not share the claim's numbers, names or key terms",
    "off_unit": "claim is not drawn from the answer unit it is filed under",
    "coverage": "the unit's claims leave out part of the unit",
    "claimless": "the judge declared the unit free of claims, but it states facts",
}


def checks_fingerprint() -> str:
    """SHA-256 of everything the checks decide by: their version, thresholds, the injection
    pattern set, the stop-word lists and the meta vocabulary that decides which units are
    exempt (:func:`~ragtrace.evaluation.judges.segment.meta_fingerprint`: it changes what a model
    judge is asked to judge). Part of every groundedness prompt hash, so a change to the checks
    shows as a judge change, like a prompt change."""
    blob = json.dumps(
        {
            "version": CHECKS_VERSION,
            "thresholds": [
                MIN_EVIDENCE_WORDS,
                MIN_SHARED_WORDS,
                MIN_SHARED_SHARE,
                MIN_UNIT_SHARE,
                MIN_COVERAGE,
                MAX_CLAIMLESS_WORDS,
            ],
            "checks": [CHECKS, UNIT_CHECKS],
            "patterns": PATTERNS,
            "stop_words": sorted(ENGLISH_STOP_WORDS | ARABIC_STOP_WORDS),
            "meta_units": meta_fingerprint(),
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def describe(check: str) -> str:
    """The human-readable reason for a failed check."""
    return _DESCRIPTIONS[check]


def locate_quote(quote: str, context: Sequence[str]) -> tuple[int, ...]:
    """1-based indices of the documents that contain the normalised ``quote`` (see evidence)."""
    q = normalise_for_match(quote)
    if len(q) >= 2 and q[0] == q[-1] and q[0] in "\"'":
        q = q[1:-1].strip()
    if not q:
        return ()
    return tuple(i for i, doc in enumerate(context, start=1) if q in _normalised(doc))


@lru_cache(maxsize=1024)
def _normalised(doc: str) -> str:
    return normalise_for_match(doc)


def _shares(claim: str, evidence: str) -> bool:
    c, e = content_words(claim), content_words(evidence)
    if not numbers(claim) <= e:
        return False
    if not named_entities(claim) <= e:
        return False
    if not c:
        return True  # nothing to share: the other checks carry it
    shared = len(c & e)
    return shared >= min(MIN_SHARED_WORDS, len(c)) and shared / len(c) >= MIN_SHARED_SHARE


def could_support(claim: str, evidence: str) -> bool:
    """Whether ``evidence`` passes the checks that read only the claim and the quote (long
    enough, shares the claim's figures, names and words): a cheap first test for a judge
    choosing among many candidate quotes, since :func:`check_evidence` fails without them."""
    return len(content_words(evidence)) >= MIN_EVIDENCE_WORDS and _shares(claim, evidence)


def check_evidence(
    claim: str, evidence: str | None, context: Sequence[str], suspect: Sequence[int] = ()
) -> str | None:
    """The first failed evidence check for ``claim`` (None: the quote supports it)."""
    if evidence is None or not evidence.strip():
        return "no_quote"
    found = locate_quote(evidence, context)
    if not found:
        return "verbatim"
    if reads_as_instruction(evidence):
        return "instruction"
    if not set(found) - set(suspect):
        return "injected_passage"
    if len(content_words(evidence)) < MIN_EVIDENCE_WORDS:
        return "too_short"
    if not _shares(claim, evidence):
        return "unrelated"
    return None


def check_unit_fidelity(claim: str, unit: str, earlier: str = "") -> str | None:
    """``off_unit`` when ``claim`` is not drawn from ``unit`` (module docstring), else None.

    Words of the ``earlier`` units count too, so a claim may resolve a pronoun ("They cannot be
    restored." → "Deleted audit logs cannot be restored."), but it must share at least one
    content word with its own unit; coverage still requires a unit's claims to carry its own
    words."""
    c, u = content_words(claim), content_words(unit)
    known = u | content_words(earlier)
    if not numbers(claim) <= known:
        return "off_unit"
    if not c:
        return None if not u else "off_unit"
    if u and not c & u:
        return "off_unit"
    return None if len(c & known) / len(c) >= MIN_UNIT_SHARE else "off_unit"


def check_coverage(claims: Sequence[str], unit: str) -> str | None:
    """``coverage`` when the unit's claims together leave out part of it, else None."""
    u = content_words(unit)
    covered: set[str] = set()
    for claim in claims:
        covered |= content_words(claim)
    if not numbers(unit) <= covered:
        return "coverage"
    if u and len(u & covered) / len(u) < MIN_COVERAGE:
        return "coverage"
    return None


def check_claimless(unit: str) -> str | None:
    """``claimless`` when a unit the judge called free of claims states facts, else None."""
    if numbers(unit) or len(content_words(unit)) > MAX_CLAIMLESS_WORDS:
        return "claimless"
    return None
