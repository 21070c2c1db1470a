"""The judge-quality benchmark's held-out plumbing: what a fitter is given, what each row says it
was tuned on, and the figures beside the baselines."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from bench.bench_judge_quality import (
    UNSEEN_ROW,
    Judged,
    claims_kappa,
    figures,
    load_fitter,
    rows,
    run_held_out,
    shipped,
    unigram_overlap,
    verdict,
)
from ragtrace.evaluation.hallucination_sets import LabelledAnswer
from ragtrace.evaluation.judges import Judge, make_judge

CONTEXT = ("The plant in Oklahoma closed in April after listeria was found in ice cream.",)


def _answers(prefix: str) -> list[LabelledAnswer]:
    return [
        LabelledAnswer(f"{prefix}1", "The plant in Oklahoma closed in April.", CONTEXT, False),
        LabelledAnswer(
            f"{prefix}2", "The Texas factory closed in 1990 after a fire.", CONTEXT, True
        ),
        LabelledAnswer(f"{prefix}3", "Listeria was found in ice cream.", CONTEXT, False),
        LabelledAnswer(f"{prefix}4", "Salmonella hit the Ohio dairy.", CONTEXT, True),
        LabelledAnswer(f"{prefix}5", "It is a tune answer.", CONTEXT, True, split="tune"),
    ]


SETS = {name: _answers(name) for name in ("qags-a", "qags-b", "begin")}


def test_a_fitter_never_sees_the_held_out_dataset(tmp_path: Path) -> None:
    calls: list[tuple[str, ...]] = []

    def fitter(tuning: Mapping[str, Sequence[LabelledAnswer]]) -> Judge:
        calls.append(tuple(sorted(tuning)))
        assert all(len(v) == 5 for v in tuning.values())  # both halves of each tuning set
        return make_judge("lexical")

    by_set = run_held_out(SETS, fitter, None, tmp_path)
    assert calls == [("qags-a", "qags-b"), ("begin",), ("begin",)]  # begin, qags-a, qags-b
    assert by_set["qags-a"].tuned_on == ("begin",)
    assert by_set["begin"].tuned_on == ("qags-a", "qags-b")
    assert all(j.held_out for j in by_set.values())
    # only the test half is judged, ids carry their set
    assert [it.id for it in by_set["begin"].items] == [f"begin/begin{i}" for i in range(1, 5)]
    assert all(0.0 <= s <= 1.0 for j in by_set.values() for s in j.score)


def test_a_shipped_judge_states_what_it_was_tuned_on(tmp_path: Path) -> None:
    by_set = run_held_out(SETS, shipped("lexical"), ("qags-a",), tmp_path)
    assert not by_set["qags-b"].held_out and by_set["begin"].held_out
    found = rows(by_set, fitted=False)
    labels = [(r.label, r.tuned_on, r.held_out) for r in found]
    assert labels == [
        ("begin", "qags-a", True),
        ("qags-a", "**not held out**: qags-a", False),
        ("qags-b", "**not held out**: qags-a", False),
        ("pooled, held-out sets", "qags-a", True),
        ("pooled, every set", "qags-a", False),
    ]
    assert found[-1].answers == 12 and found[-2].answers == 4
    assert "of 1 (" in verdict(found) or "0 of 1 (none)" in verdict(found)
    assert "Pooled over the held-out sets" in verdict(found)


def test_a_fitted_run_names_the_other_datasets(tmp_path: Path) -> None:
    by_set = run_held_out(SETS, shipped("lexical"), None, tmp_path)
    found = rows(by_set, fitted=True)
    assert [r.tuned_on for r in found] == [
        "all sets but begin*",
        "all sets but qags* (token weights and cues: tuned on it)",
        "all sets but qags* (token weights and cues: tuned on it)",
        "each set's own fit",
        "each set's own fit; nothing else",
    ]
    # the last pooled row leaves out the datasets the judge's unfitted parts were tuned on
    assert [r.label for r in found][-2:] == ["pooled, held-out sets", UNSEEN_ROW]
    assert found[-1].answers == found[0].answers


def test_figures_against_the_baselines() -> None:
    items = tuple(_answers("x")[:4])
    j = Judged("x", items, (0.9, 0.2, 0.95, 0.5), (0.9, 0.2, 0.95, 0.5), (), 0.0)
    r = figures("x", j, "none", True)
    assert r.judge_auroc.value == 1.0 and r.judge_f1 == 1.0  # 0.2 and 0.5 flagged, both right
    assert r.flag_rate == 0.5 and r.human_rate == 0.5
    assert r.flag_all_f1 == pytest.approx(2 / 3)
    assert r.overlap_auroc.value == pytest.approx(1.0)
    assert "F1 at the default threshold is" not in verdict([r])
    assert "1 of 1 (x)" in verdict([r])


def test_unigram_overlap_is_the_share_of_answer_words_in_the_context() -> None:
    assert unigram_overlap("The plant closed, twice", CONTEXT) == pytest.approx(3 / 4)
    assert unigram_overlap("", CONTEXT) == 1.0


def fit_lexical(tuning: Mapping[str, Sequence[LabelledAnswer]]) -> Judge:
    """A fitter for the test below: ignores its tuning sets."""
    return make_judge("lexical")


def test_load_fitter_takes_module_and_function() -> None:
    assert load_fitter(f"{__name__}:fit_lexical") is fit_lexical
    with pytest.raises(SystemExit):
        load_fitter("bench.bench_judge_quality")
    with pytest.raises(SystemExit):
        load_fitter("bench.bench_judge_quality:DATA")


def test_kappa_on_claims_with_the_judge_fitted_without_the_long_form_set(tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    lines = [
        {"id": "c1", "claim": "The plant in Oklahoma closed in April.", "human_entailed": True},
        {"id": "c2", "claim": "Salmonella hit the Ohio dairy in 1990.", "human_entailed": False},
    ]
    claims.write_text("".join(json.dumps({**x, "context": list(CONTEXT)}) + "\n" for x in lines))
    seen: list[tuple[str, ...]] = []

    def fitter(tuning: Mapping[str, Sequence[LabelledAnswer]]) -> Judge:
        seen.append(tuple(sorted(tuning)))
        return make_judge("lexical")

    sets = {**SETS, "lfqa": _answers("l")}
    k = claims_kappa(sets, fitter, None, claims)
    assert k is not None and seen == [("begin", "qags-a", "qags-b")]
    assert (k.claims, k.agreement, k.kappa) == (2, 1.0, 1.0)
    assert k.tuned_on == ("begin", "qags-a", "qags-b")
    assert claims_kappa(sets, fitter, None, tmp_path / "absent.jsonl") is None
