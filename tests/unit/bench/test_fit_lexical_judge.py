"""The offline judge's fitting (bench/fit_lexical_judge.py): the requirements hold for the shipped
constants and bind every fit; the shares are chosen by the weakest set; the threshold by the
flag rate."""

from __future__ import annotations

import pytest

from bench.bench_judge_quality import load_sets
from bench.fit_lexical_judge import (
    REQUIREMENTS,
    SHARES,
    THRESHOLDS,
    Fitted,
    Requirement,
    fit,
    lodo_judge,
    lodo_judge_without_requirements,
)
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace.evaluation.judges.lexical import DEFAULT_THRESHOLD, OVERLAP_SHARE
from ragtrace.evaluation.judges.lexical.align import UNIT_OVERLAP_SHARE

# Two shipped sets of different tasks (dialogue, RAG QA); the fit is deterministic.
SETS = load_sets(("begin", "ragtruth-qa"))


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=lambda r: r.name)
def test_the_shipped_judge_keeps_every_requirement(requirement: Requirement) -> None:
    judge = LexicalJudge()
    assert judge.threshold == DEFAULT_THRESHOLD and judge.unit_overlap_share == UNIT_OVERLAP_SHARE
    result = judge.groundedness(requirement.answer, requirement.context)
    assert result.score == pytest.approx(requirement.score)


def test_a_fit_keeps_the_requirements_and_its_judge_is_its_constants() -> None:
    fitted = fit(SETS)
    assert isinstance(fitted, Fitted)
    assert fitted.unit_overlap_share in SHARES and fitted.overlap_share in SHARES
    assert fitted.allowed[0] <= fitted.threshold <= fitted.allowed[1]
    judge = fitted.judge()
    for r in REQUIREMENTS:
        assert judge.groundedness(r.answer, r.context).score == pytest.approx(r.score)
    assert judge.info == lodo_judge(SETS).info
    assert judge.overlap_share == fitted.overlap_share
    # ranked by its weakest set: never below plain overlap on the sets it was fitted on
    assert fitted.smallest_gain >= 0


def test_without_requirements_the_fit_is_free_to_break_them() -> None:
    free = fit(SETS, requirements=())
    assert free.threshold in THRESHOLDS and free.allowed == (THRESHOLDS[0], THRESHOLDS[-1])
    # the rule alone (no requirement) settles on a threshold no requirement-keeping fit may take
    assert free.mean_rate_gap <= fit(SETS).mean_rate_gap
    assert lodo_judge_without_requirements(SETS).info == free.judge().info


def test_a_fit_needs_both_classes() -> None:
    faithful = {"x": [a for a in SETS["begin"] if not a.hallucinated]}
    with pytest.raises(ValueError, match="both faithful and hallucinated"):
        fit(faithful)


def test_the_shipped_shares_are_on_the_fitters_grid() -> None:
    assert UNIT_OVERLAP_SHARE in SHARES and OVERLAP_SHARE in SHARES
    assert DEFAULT_THRESHOLD in THRESHOLDS
