"""Hallucination detection metrics: hand-computed fixtures, a brute-force reference on random
data, and the report over tune/test splits."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtrace.evaluation.detection import (
    Confusion,
    SpanOverlap,
    auroc,
    best_threshold,
    char_positions,
    confusion_at,
    f1,
)
from ragtrace.evaluation.detection_report import JudgedAnswer, build_report, locate_units
from ragtrace.evaluation.hallucination_sets import LabelledAnswer


def test_confusion_ratios_by_hand() -> None:
    c = Confusion(tp=3, fp=1, fn=2, tn=4)
    assert c.n == 10
    assert c.precision == pytest.approx(0.75)
    assert c.recall == pytest.approx(0.6)
    assert c.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)


def test_empty_denominators_are_nan_not_zero() -> None:
    c = Confusion(tp=0, fp=0, fn=3, tn=1)
    assert math.isnan(c.precision)
    assert c.recall == 0.0
    assert math.isnan(c.f1)
    assert f1(0.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="tp"):
        Confusion(tp=-1)


def test_confusion_at_flags_scores_strictly_below_the_threshold() -> None:
    c = confusion_at([0.2, 0.5, 0.8, 1.0], [True, False, True, False], 0.8)
    # 0.2 flagged & hallucinated, 0.5 flagged & faithful, 0.8 passes (not below) & hallucinated
    assert (c.tp, c.fp, c.fn, c.tn) == (1, 1, 1, 1)


def test_auroc_by_hand() -> None:
    # hallucinated 0.1, 0.6; faithful 0.5, 0.9: pairs won 0.1<0.5, 0.1<0.9, 0.6<0.9 -> 3/4
    assert auroc([0.1, 0.6, 0.5, 0.9], [True, True, False, False]) == pytest.approx(0.75)
    # a tie counts one half: 0.5 vs 0.5 -> 1/2, 0.5 < 0.9 -> 1; (1/2 + 1) / 2
    assert auroc([0.5, 0.5, 0.9], [True, False, False]) == pytest.approx(0.75)
    assert auroc([0.0, 1.0], [True, False]) == 1.0
    assert auroc([1.0, 0.0], [True, False]) == 0.0
    assert math.isnan(auroc([0.1, 0.2], [True, True]))
    with pytest.raises(ValueError, match="labels"):
        auroc([0.1], [True, False])


def _pairwise_auroc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, h in zip(scores, labels, strict=True) if h]
    neg = [s for s, h in zip(scores, labels, strict=True) if not h]
    wins = sum(1.0 if p < n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_auroc_matches_a_brute_force_pairwise_count_on_random_data() -> None:
    rng = random.Random(19)
    for _ in range(200):
        n = rng.randint(2, 40)
        # few distinct values, so ties are common (unit-share scores are like that)
        scores = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, rng.random()]) for _ in range(n)]
        labels = [rng.random() < 0.4 for _ in range(n)]
        if all(labels) or not any(labels):
            continue
        assert auroc(scores, labels) == pytest.approx(_pairwise_auroc(scores, labels))


def test_best_threshold_by_hand() -> None:
    scores = [0.1, 0.4, 0.4, 0.7, 0.9]
    labels = [True, True, False, False, False]
    # 0.1 flags none (F1 n/a); 0.25 -> {0.1}: P1 R.5 F1 .667; 0.55 -> {0.1, 0.4, 0.4}: P.667
    # R1 F1 .8; 0.8 -> four: F1 .667; above 0.9 -> all: F1 .571
    t = best_threshold(scores, labels)
    assert t is not None
    assert t.value == pytest.approx(0.55)
    assert t.tuning == Confusion(tp=2, fp=1, fn=0, tn=2)
    assert t.tuning.f1 == pytest.approx(0.8)


def test_best_threshold_can_flag_everything_and_breaks_ties_low() -> None:
    all_bad = best_threshold([0.3, 0.9], [True, True])
    assert all_bad is not None
    assert all_bad.value > 0.9 and all_bad.tuning == Confusion(tp=2)
    # the midpoint between the answers it separates
    split = best_threshold([0.2, 0.6], [True, False])
    assert split is not None and split.value == pytest.approx(0.4)
    # flagging {0.2} (P1 R.5) or all four (P.5 R1) both give F1 .667: the lower candidate wins
    tie = best_threshold([0.2, 0.4, 0.6, 0.8], [True, False, False, True])
    assert tie is not None and tie.value == pytest.approx(0.3)
    assert best_threshold([], []) is None
    none_bad = best_threshold([0.2, 0.6], [False, False])
    assert none_bad is not None and none_bad.value == 0.2  # flags nothing


def test_best_threshold_matches_an_exhaustive_search_on_random_data() -> None:
    rng = random.Random(7)
    for _ in range(100):
        n = rng.randint(1, 30)
        scores = [round(rng.random(), 1) for _ in range(n)]
        labels = [rng.random() < 0.5 for _ in range(n)]
        t = best_threshold(scores, labels)
        assert t is not None
        grid = sorted(set(scores)) + [math.nextafter(max(scores), math.inf)]  # same flag sets
        f1s = [confusion_at(scores, labels, g).f1 for g in grid]
        best = max((-1.0 if math.isnan(x) else x) for x in f1s)
        got = confusion_at(scores, labels, t.value).f1
        assert (-1.0 if math.isnan(got) else got) == pytest.approx(best)
        assert t.tuning == confusion_at(scores, labels, t.value)


def test_span_overlap_by_hand() -> None:
    one = SpanOverlap.of([(0, 10)], [(5, 15)])
    assert (one.tp, one.fp, one.fn) == (5, 5, 5)
    assert one.precision == 0.5 and one.recall == 0.5 and one.f1 == 0.5
    two = one + SpanOverlap.of([], [(0, 4)])
    assert (two.tp, two.fp, two.fn, two.answers) == (5, 5, 9, 2)
    assert two.recall == pytest.approx(5 / 14)
    assert char_positions([(0, 3), (2, 5)]) == frozenset(range(5))
    with pytest.raises(ValueError, match="span"):
        char_positions([(4, 2)])
    nothing = SpanOverlap.of([], [])
    assert math.isnan(nothing.precision) and math.isnan(nothing.recall)


def test_locate_units_ignores_collapsed_whitespace_and_keeps_reading_order() -> None:
    answer = "Paris is big.  Paris is big.\n\nIt  has\n  rivers."
    spans = locate_units(answer, ["Paris is big.", "Paris is big.", "It has rivers.", "Absent."])
    assert spans[0] == (0, 13)
    assert spans[1] == (15, 28)
    assert spans[2] is not None and answer[spans[2][0] : spans[2][1]] == "It  has\n  rivers."
    assert spans[3] is None


def _item(i: int, hallucinated: bool, split: str, task: str = "qa") -> LabelledAnswer:
    answer = "A claim." if not hallucinated else "A claim. A made-up claim."
    spans = ((9, 25),) if hallucinated else ()
    return LabelledAnswer(f"a{i}", answer, ("ctx",), hallucinated, spans, task, split)


def test_report_tunes_on_tune_and_reports_on_test() -> None:
    items = [
        _item(1, True, "tune"),
        _item(2, False, "tune"),
        _item(3, True, "test"),
        _item(4, False, "test"),
        _item(5, True, "test", "summary"),
        _item(6, False, "test", "summary"),
        _item(7, False, "test"),  # judge failed
        _item(8, False, "test"),  # not judged
    ]
    judged: dict[str, JudgedAnswer | None] = {
        "a1": JudgedAnswer(0.5, ((9, 25),)),
        "a2": JudgedAnswer(1.0, ()),
        "a3": JudgedAnswer(0.5, ((0, 8),)),
        "a4": JudgedAnswer(0.9, ()),
        "a5": JudgedAnswer(0.95, ()),
        "a6": JudgedAnswer(0.6, ((0, 8),)),
        "a7": None,
    }
    report = build_report(items, judged, 0.8)
    assert [g.name for g in report.groups] == ["qa", "summary", "overall"]
    assert (report.failed, report.unjudged) == (1, 1)
    qa = report.group("qa")
    assert (qa.tune, qa.test, qa.test_hallucinated) == (2, 2, 1)
    assert qa.at_threshold == Confusion(tp=1, fp=0, fn=0, tn=1)
    assert qa.auroc == 1.0
    assert qa.tuned is not None and qa.tuned.value == 0.75  # tune: 0.5 bad, 1.0 good
    assert qa.at_tuned == Confusion(tp=1, fp=0, fn=0, tn=1)
    assert qa.spans is not None and (qa.spans.tp, qa.spans.fp, qa.spans.fn) == (0, 8, 16)
    summary = report.group("summary")
    assert summary.tune == 0 and summary.tuned is None and summary.at_tuned is None
    assert summary.at_threshold == Confusion(tp=0, fp=1, fn=1, tn=0)
    assert summary.auroc == 0.0
    overall = report.overall
    assert overall.test == 4 and overall.at_threshold == Confusion(tp=1, fp=1, fn=1, tn=1)
    assert overall.auroc == pytest.approx(0.5)  # pairs: .5<.9 win, .5<.6 win, .95 loses both
    doc = report.to_dict()
    assert doc["failed_answers"] == 1 and len(doc["groups"]) == 3  # type: ignore[arg-type]


def test_the_ranking_key_breaks_ties_for_auroc_and_tuning_but_not_the_threshold() -> None:
    """Two answers scoring 1.0 are ordered by their finer key; at the configured threshold both
    still pass (the key never moves an answer across it)."""
    items = [_item(1, True, "tune"), _item(2, False, "tune")]
    items += [_item(3, True, "test"), _item(4, False, "test")]
    judged: dict[str, JudgedAnswer | None] = {
        "a1": JudgedAnswer(1.0, (), rank=1.0002),
        "a2": JudgedAnswer(1.0, (), rank=1.0009),
        "a3": JudgedAnswer(1.0, (), rank=1.0001),
        "a4": JudgedAnswer(1.0, (), rank=1.0008),
    }
    qa = build_report(items, judged, 0.8).group("qa")
    assert qa.auroc == 1.0  # by score alone: a tie, 0.5
    assert qa.at_threshold == Confusion(tp=0, fp=0, fn=1, tn=1)
    assert qa.tuned is not None and qa.tuned.value == pytest.approx(1.00055)
    assert qa.at_tuned == Confusion(tp=1, fp=0, fn=0, tn=1)
    assert JudgedAnswer(0.5).key == 0.5
    with pytest.raises(ValueError, match="rank must be finite"):
        JudgedAnswer(0.5, rank=math.nan)


def test_a_lexical_record_is_ranked_by_its_claim_supports() -> None:
    from ragtrace.cli._detect_results import judged

    record = {"score": 1.0, "claims": [{"support": 0.9}, {"support": 0.8}], "units": []}
    low = judged("x", record, ["x"])
    high = judged("x", {**record, "claims": [{"support": 1.0}]}, ["x"])
    assert low is not None and high is not None and low.score == high.score == 1.0
    assert low.key < high.key < 1.0 + 0.0011
    plain = judged("x", {"score": 1.0, "claims": [{"entailed": True}]})
    assert plain is not None and plain.rank is None and plain.key == 1.0


_scores = st.lists(
    st.tuples(st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]) | st.floats(0, 1), st.booleans()),
    min_size=1,
    max_size=40,
)


@given(_scores)
def test_auroc_properties(pairs: list[tuple[float, bool]]) -> None:
    scores = [s for s, _ in pairs]
    labels = [h for _, h in pairs]
    value = auroc(scores, labels)
    if all(labels) or not any(labels):
        assert math.isnan(value)
        return
    assert 0.0 <= value <= 1.0
    # swapping the classes mirrors the curve
    assert auroc(scores, [not h for h in labels]) == pytest.approx(1.0 - value)
    # an order-preserving transform of the scores changes nothing
    assert auroc([2 * s for s in scores], labels) == pytest.approx(value)  # exact in floats


@given(_scores, st.floats(0, 1.01))
def test_the_tuned_threshold_is_at_least_as_good_as_any_other(
    pairs: list[tuple[float, bool]], other: float
) -> None:
    scores = [s for s, _ in pairs]
    labels = [h for _, h in pairs]
    tuned = best_threshold(scores, labels)
    assert tuned is not None
    rival = confusion_at(scores, labels, other).f1
    if not math.isnan(rival):
        assert tuned.tuning.f1 >= rival - 1e-12
