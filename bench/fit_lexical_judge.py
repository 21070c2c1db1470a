"""Fit the offline judge's three constants on human-labelled answers.

The lexical judge (``ragtrace/evaluation/judges/lexical/``) has three fitted constants: the share
of plain word overlap in a unit's support (``UNIT_OVERLAP_SHARE``), the share of the answer's
word overlap in its ranking key (``OVERLAP_SHARE``) and the support at which a unit is entailed
(``DEFAULT_THRESHOLD``). :func:`fit` chooses them from the sets it is given:

1. every answer of every tuning set (both halves) is aligned once by the judge's own code, which
   keeps each unit's parts (:class:`~ragtrace.evaluation.judges.lexical.align.Alignment`); a
   support for another share is recomputed from them;
2. only a unit share and threshold that keep the :data:`REQUIREMENTS` are candidates: the seed's
   worked examples keep their scores, and a fabrication recombined from words spread over the
   context still fails (the real judge runs each case);
3. the two shares, on a grid of tenths: the pair whose **smallest** AUROC gain over plain unigram
   overlap across the tuning sets is largest (the judge must not rank worse than the simplest
   baseline on any of them), ties broken by the mean AUROC;
4. the threshold, on a grid of hundredths from 0.40 to 0.95, among those step 2 allows for that
   unit share: the one whose flag rate (an answer flagged when under 80 % of its units reach the
   threshold, the four cells' pass mark) is nearest the human rate, averaged over the tuning
   sets as ``|flag rate − human rate|``.

Step 4 reads the score as the share of units at the threshold (claimless units and evidence
checks left out); the benchmark measures the real judge. :func:`fit` with ``requirements=()``
is the same rule without step 2, so the price of the requirements can be measured.

:func:`lodo_judge` is the fitting hook of ``bench/bench_judge_quality.py --fit``: the judge fitted
on the sets it is given (every dataset but the one it is measured on). ``python
bench/fit_lexical_judge.py`` fits on every set of ``bench/data/hallucination/`` and prints the
constants shipped in the judge's modules.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragtrace.evaluation.detection import auroc
from ragtrace.evaluation.hallucination_sets import LabelledAnswer
from ragtrace.evaluation.judges.bounds import JudgeLimits, bounded_units
from ragtrace.evaluation.judges.injection import suspect_documents
from ragtrace.evaluation.judges.lexical import LexicalJudge, ranking_score, word_overlap
from ragtrace.evaluation.judges.lexical.align import Alignment, Source, align
from ragtrace.evaluation.judges.text import strip_citations

__all__ = [
    "REQUIREMENTS",
    "Fitted",
    "Requirement",
    "fit",
    "lodo_judge",
    "lodo_judge_without_requirements",
]

PASS_MARK = 0.8

_EXAMPLES = ROOT / "examples" / "groundedness"
"""The seed's worked examples, as the README runs them through ``ragtrace groundedness``."""


def _example(name: str) -> str:
    return (_EXAMPLES / name).read_text(encoding="utf-8").strip()


_SPREAD = (
    "Maria Lopez founded the bakery in Seville in 1998. "
    "Lopez later opened a school for pastry chefs. "
    "The city council of Madrid fined a restaurant in 2011."
)


@dataclass(frozen=True)
class Requirement:
    """An answer the judge must score ``score`` against ``context``, whatever it is fitted on."""

    name: str
    answer: str
    context: tuple[str, ...]
    score: float


REQUIREMENTS = (
    Requirement(
        "the seed's audit-log answer is grounded",
        _example("audit-log-answer.txt"),
        (_example("c-9930.txt"),),
        1.0,
    ),
    Requirement(
        "the seed's leave answer: two sentences supported, one invented",
        _example("leave-answer.txt"),
        (_example("leave-policy.txt"),),
        2 / 3,
    ),
    Requirement(
        "a fabrication recombined from two sentences fails",
        "The city council of Seville fined Maria Lopez's bakery in 1998.",
        (_SPREAD,),
        0.0,
    ),
    Requirement(
        "a sentence joined from three fails",
        "Alpha reviewed the merger.",
        ("Alpha wrote the report. Gamma reviewed the budget. Delta approved the merger.",),
        0.0,
    ),
)
"""What no fit may give up (module docstring, step 2)."""
SHARES = tuple(i / 10 for i in range(11))
THRESHOLDS = tuple(i / 100 for i in range(40, 96))

Sets = Mapping[str, Sequence[LabelledAnswer]]


@dataclass(frozen=True)
class Fitted:
    """The three constants and the tuning figures they were chosen by."""

    unit_overlap_share: float
    overlap_share: float
    threshold: float
    smallest_gain: float  # over unigram overlap, across the tuning sets
    mean_auroc: float
    mean_rate_gap: float  # mean |flag rate - human rate| across the tuning sets
    allowed: tuple[float, float]  # lowest and highest threshold the requirements leave

    def judge(self) -> LexicalJudge:
        return LexicalJudge(
            self.threshold,
            unit_overlap_share=self.unit_overlap_share,
            overlap_share=self.overlap_share,
        )


@dataclass(frozen=True)
class _Answer:
    hallucinated: bool
    units: tuple[Alignment, ...]
    overlap: float  # the answer's word overlap, as the ranking key reads it
    baseline: float  # plain unigram overlap, as the benchmark's baseline reads it


_ALIGNED: dict[tuple[str, str], _Answer | None] = {}


def _aligned(name: str, it: LabelledAnswer) -> _Answer | None:
    """The answer's units aligned (None: the judge refuses it or finds no unit); cached."""
    key = (name, it.id)
    if key not in _ALIGNED:
        from bench.bench_judge_quality import unigram_overlap

        units = bounded_units(it.answer, it.context, JudgeLimits())
        if isinstance(units, str) or not units:
            _ALIGNED[key] = None
        else:
            suspect = suspect_documents(it.context)
            source = Source.of([(i, d) for i, d in enumerate(it.context) if i + 1 not in suspect])
            _ALIGNED[key] = _Answer(
                it.hallucinated,
                tuple(align(strip_citations(u.text), source) for u in units),
                word_overlap(it.answer, it.context),
                unigram_overlap(it.answer, it.context),
            )
    return _ALIGNED[key]


def _key(a: _Answer, unit_share: float, share: float) -> float:
    return ranking_score(0.0, [u.support_at(unit_share) for u in a.units], a.overlap, share)


def _flag_gap(answers: Sequence[_Answer], unit_share: float, threshold: float) -> float:
    flagged = 0
    for a in answers:
        entailed = sum(u.support_at(unit_share) >= threshold for u in a.units)
        flagged += entailed / len(a.units) < PASS_MARK
    human = sum(a.hallucinated for a in answers)
    return abs(flagged - human) / len(answers)


def _keeps(requirements: Sequence[Requirement], unit_share: float, threshold: float) -> bool:
    judge = LexicalJudge(threshold, unit_overlap_share=unit_share)
    return all(
        abs((judge.groundedness(r.answer, r.context).score or 0.0) - r.score) < 1e-9
        for r in requirements
    )


@cache
def _allowed(requirements: tuple[Requirement, ...]) -> dict[float, tuple[float, ...]]:
    """Per unit share, the thresholds that keep ``requirements`` (all without any); the same
    for every fit, so worked out once."""
    return {
        u: tuple(t for t in THRESHOLDS if _keeps(requirements, u, t))
        if requirements
        else THRESHOLDS
        for u in SHARES
    }


def fit(tuning: Sets, requirements: Sequence[Requirement] = REQUIREMENTS) -> Fitted:
    """The constants chosen on ``tuning`` (module docstring)."""
    sets = {
        name: [a for a in (_aligned(name, it) for it in items) if a is not None]
        for name, items in sorted(tuning.items())
    }
    sets = {n: a for n, a in sets.items() if len({x.hallucinated for x in a}) == 2}
    if not sets:
        raise ValueError("fit needs a tuning set with both faithful and hallucinated answers")
    allowed = _allowed(tuple(requirements))
    labels = {n: [a.hallucinated for a in answers] for n, answers in sets.items()}
    baseline = {n: auroc([a.baseline for a in answers], labels[n]) for n, answers in sets.items()}
    best: tuple[tuple[float, float], float, float] | None = None
    for unit_share in (u for u in SHARES if allowed[u]):
        for share in SHARES:
            aurocs = {
                n: auroc([_key(a, unit_share, share) for a in answers], labels[n])
                for n, answers in sets.items()
            }
            rank = (
                min(aurocs[n] - baseline[n] for n in sets),
                sum(aurocs.values()) / len(aurocs),
            )
            if best is None or rank > best[0]:
                best = (rank, unit_share, share)
    if best is None:
        raise ValueError("no unit share and threshold keep the requirements")
    (gain, mean_auroc), unit_share, share = best
    gaps = {
        t: sum(_flag_gap(answers, unit_share, t) for answers in sets.values()) / len(sets)
        for t in allowed[unit_share]
    }
    threshold = min(gaps, key=lambda t: (gaps[t], t))
    band = (min(allowed[unit_share]), max(allowed[unit_share]))
    return Fitted(unit_share, share, threshold, gain, mean_auroc, gaps[threshold], band)


def lodo_judge(tuning: Sets) -> LexicalJudge:
    """The fitting hook of ``bench/bench_judge_quality.py --fit``: the judge fitted on
    ``tuning``."""
    return fit(tuning).judge()


def lodo_judge_without_requirements(tuning: Sets) -> LexicalJudge:
    """:func:`lodo_judge` without the :data:`REQUIREMENTS`: what they cost, measured."""
    return fit(tuning, requirements=()).judge()


def main() -> int:
    from bench.bench_judge_quality import load_sets

    sets = load_sets()
    fitted = fit(sets)
    print(f"fitted on {', '.join(sorted(sets))}, keeping {len(REQUIREMENTS)} requirements:")
    print(f"  UNIT_OVERLAP_SHARE = {fitted.unit_overlap_share}  (lexical/align.py)")
    print(f"  OVERLAP_SHARE = {fitted.overlap_share}  (lexical/judge.py)")
    print(f"  DEFAULT_THRESHOLD = {fitted.threshold}  (lexical/judge.py)")
    print(
        f"  smallest AUROC gain over unigram overlap {fitted.smallest_gain:+.3f}, mean AUROC "
        f"{fitted.mean_auroc:.3f}, mean |flag rate - human rate| {fitted.mean_rate_gap:.3f}; "
        f"the requirements leave thresholds {fitted.allowed[0]}-{fitted.allowed[1]}"
    )
    free = fit(sets, requirements=())
    print(
        f"without the requirements: unit overlap share {free.unit_overlap_share}, overlap share "
        f"{free.overlap_share}, threshold {free.threshold}, mean |flag rate - human rate| "
        f"{free.mean_rate_gap:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
