"""The offline judge: each answer unit aligned with the source, no model and no key.

Each answer unit (:mod:`ragtrace.evaluation.judges.segment`: sentences, list items, code blocks;
citation markers removed; meta sentences such as "Here is a concise summary of the passage:" are
not units) is one claim. Its *support* (:mod:`ragtrace.evaluation.judges.lexical.align`) blends
the rarity-weighted share of its content tokens (:mod:`ragtrace.evaluation.judges.lexical.tokens`:
lemmas, normalised numbers with their units, names and numbers weighing more than common words)
found in its **best-aligned source window** — one sentence or two adjacent sentences of one
passage — with the share of its words found anywhere in the context (passages flagged for
injection left out); a contradiction cue against that window (a negation on one side only, a
dropped hedge such as "reportedly", a "must" where the source says "may") or a figure or name
found nowhere in the context halves it. A unit is entailed at support ≥
:data:`DEFAULT_THRESHOLD`, and its evidence then goes through the same checks as a model
judge's (:mod:`ragtrace.evaluation.judges.checks`). The answer's ranking key
(:func:`ranking_score`) is built from the same supports.

Three constants are fitted on public human-labelled answers by ``bench/fit_lexical_judge.py``
(the share of word overlap in a unit's support, :data:`OVERLAP_SHARE` and
:data:`DEFAULT_THRESHOLD`), and the benchmark measures that fitting leave-one-dataset-out:
every set judged with the constants fitted without its dataset (``docs/groundedness.md``,
section 6, has the figures and the baselines beside them).

It is still a lexical check — a cheap screen, not a reader: a paraphrase with new words
("retained" for "retention") loses support, and words recombined within one window, or a
swapped relation between words that are all present, pass. The score carries this judge's name
so it is never mistaken for a model judge's. The seed's rough check (share of a sentence's words
found anywhere in the source, supported at 0.6) stays available as :func:`word_overlap`.

The evidence for a supported unit is the best-aligned window that passes the evidence checks,
else the passage of the best window, else the best window itself, which is then downgraded;
copied from the context, it points at where the words came from, it does not prove entailment.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

from ..answer_metrics import token_f1
from ..base import GroundednessResult, JudgeCapabilityError, JudgeInfo, MetricResult
from ..bounds import JudgeLimits, bounded_claims, bounded_units
from ..checks import check_evidence, could_support
from ..injection import suspect_documents
from ..prompts import CHECKS_VERSION
from ..scoring import JudgedClaim, score_units
from ..segment import Unit
from ..text import strip_citations, words
from .align import ALGORITHM, UNIT_OVERLAP_SHARE, Source, align

__all__ = [
    "DEFAULT_THRESHOLD",
    "OVERLAP_SHARE",
    "SEED_THRESHOLD",
    "TIE_BREAK",
    "LexicalJudge",
    "ranking_score",
    "word_overlap",
]

DEFAULT_THRESHOLD = 0.83
"""Support at which a unit is entailed; fitted (module docstring)."""

SEED_THRESHOLD = 0.6
"""The seed's rough check: a sentence is supported when :func:`word_overlap` reaches 0.6."""


OVERLAP_SHARE = 0.9
"""Share of the answer's :func:`word_overlap` in :func:`ranking_score`; the rest is the mean claim
support. Fitted (module docstring)."""

TIE_BREAK = 1e-6
"""Weight of the groundedness score in :func:`ranking_score`: it only orders answers whose
support and overlap are equal."""


def ranking_score(
    score: float,
    supports: Sequence[float],
    overlap: float = 1.0,
    overlap_share: float = OVERLAP_SHARE,
) -> float:
    """A continuous key to rank answers by suspicion (lower: more suspect):
    ``(1 - overlap_share) * mean(supports) + overlap_share * overlap``, remaining ties broken
    by the groundedness ``score``. ``supports`` are the claims'
    :attr:`~ragtrace.evaluation.judges.base.ClaimVerdict.support` values (stored with every
    lexical result; none: 1.0), ``overlap`` the answer's :func:`word_overlap` with the context.

    Groundedness thresholds each unit's support at :data:`DEFAULT_THRESHOLD` and takes few
    values (one-sentence answers score 0 or 1); the mean support is the same judgement before
    that step. The overlap adds what the aligned support leaves out by design: words found
    anywhere in the context, stop words and all — so the ranking holds what the plain unigram
    baseline measures. Not a score and not on the groundedness scale (it can reorder
    two different groundedness scores): it only orders answers (AUROC, a threshold tuned on
    labels)."""
    mean = sum(supports) / len(supports) if supports else 1.0
    return (1 - overlap_share) * mean + overlap_share * overlap + TIE_BREAK * score


def word_overlap(sentence: str, context: Sequence[str]) -> float:
    """The seed's rough check: the share of the distinct words of ``sentence`` found anywhere in
    ``context`` (0.0 for a sentence with no word). Kept as that documented metric; the judge's
    support is the aligned, weighted one (module docstring)."""
    w = words(strip_citations(sentence))
    source = set().union(*(words(d) for d in context)) if context else set()
    return len(w & source) / len(w) if w else 0.0


def _sha(description: str) -> str:
    return hashlib.sha256(description.encode("utf-8")).hexdigest()


class LexicalJudge:
    """Model-free groundedness (and token-F1 answer correctness). Answer relevancy needs a model
    and raises :class:`JudgeCapabilityError`."""

    name = "lexical"
    paid = False  # local word overlap: the consumers' judge call budget does not apply

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        *,
        limits: JudgeLimits | None = None,
        unit_overlap_share: float = UNIT_OVERLAP_SHARE,
        overlap_share: float = OVERLAP_SHARE,
    ) -> None:
        """``threshold``, ``unit_overlap_share`` (the word overlap's share of a unit's support)
        and ``overlap_share`` (of the ranking key) default to the fitted constants; the fitter
        builds judges with others."""
        self.limits = limits if limits is not None else JudgeLimits()
        """What one judgement takes on (:mod:`~ragtrace.evaluation.judges.bounds`)."""
        if isinstance(threshold, bool) or not 0.0 < float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        for label, share in (
            ("unit_overlap_share", unit_overlap_share),
            ("overlap_share", overlap_share),
        ):
            if isinstance(share, bool) or not 0.0 <= float(share) <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {share!r}")
        self.threshold = float(threshold)
        self.unit_overlap_share = float(unit_overlap_share)
        self.overlap_share = float(overlap_share)
        self._info = JudgeInfo(
            self.name,
            None,
            _sha(
                f"ragtrace lexical groundedness v4: blended support >= {self.threshold}; "
                f"unit overlap share {self.unit_overlap_share}; ranking overlap share "
                f"{self.overlap_share}; {ALGORITHM}; {CHECKS_VERSION}"
            ),
        )
        self._correctness_info = JudgeInfo(
            self.name, None, _sha("ragtrace lexical answer correctness v1: token F1")
        )

    @property
    def info(self) -> JudgeInfo:
        return self._info

    def _claim(
        self,
        claim: str,
        context: Sequence[str],
        source_docs: Sequence[str],
        source: Source,
    ) -> JudgedClaim:
        found = align(strip_citations(claim), source, self.unit_overlap_share)
        entailed = found.support >= self.threshold
        evidence = None
        if entailed and found.window is not None:
            # the best-aligned window that carries the claim's figures and key terms, else the
            # passage of the best window, else the best window itself (then downgraded)
            candidates = [w.text for w in found.ranked] + [
                source_docs[w.doc] for w in found.ranked[:1]
            ]
            evidence = next(
                (
                    c
                    for c in candidates
                    if could_support(claim, c) and check_evidence(claim, c, context) is None
                ),
                found.window.text,
            )
        return JudgedClaim(claim, entailed, evidence, round(found.support, 4))

    def refusal(self, answer: str, context: Sequence[str]) -> str | None:
        """Why :meth:`groundedness` would refuse ``answer`` and ``context`` as too large, or
        None."""
        units = bounded_units(answer, context, self.limits)
        return units if isinstance(units, str) else None

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        start = time.perf_counter()
        return self._score(bounded_units(answer, context, self.limits), context, start, True)

    def judge_claims(self, claims: Sequence[str], context: Sequence[str]) -> GroundednessResult:
        """Verdicts on claims already split (calibration), one per claim, in order."""
        start = time.perf_counter()
        return self._score(bounded_claims(claims, context, self.limits), context, start, False)

    def _score(
        self, units: Sequence[Unit] | str, context: Sequence[str], start: float, answer_mode: bool
    ) -> GroundednessResult:
        if isinstance(units, str):  # refused: too large to judge
            return GroundednessResult.failed(
                units, self._info, latency_s=time.perf_counter() - start
            )
        suspect = suspect_documents(context)
        # a passage flagged for injection is never evidence
        source = Source.of([(i, d) for i, d in enumerate(context) if i + 1 not in suspect])
        judged = {u.id: [self._claim(u.text, context, context, source)] for u in units}
        return score_units(
            units,
            judged,
            context,
            self._info,
            suspect=suspect,
            answer_mode=answer_mode,
            latency_s=time.perf_counter() - start,
        )

    def answer_relevancy(self, question: str, answer: str) -> MetricResult:
        raise JudgeCapabilityError(
            "answer relevancy needs a model judge (--judge anthropic); it is not available offline"
        )

    def answer_correctness(self, question: str, answer: str, reference: str) -> MetricResult:
        """SQuAD token F1 between ``answer`` and ``reference`` (``question`` is unused)."""
        start = time.perf_counter()
        return MetricResult(
            "answer_correctness",
            token_f1(answer, reference),
            self._correctness_info,
            ({"method": "token_f1"},),
            latency_s=time.perf_counter() - start,
        )
