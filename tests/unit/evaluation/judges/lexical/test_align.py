"""The offline judge's building blocks on the failures seen on human-labelled sets: a dropped
hedge, a recombined fabrication, a meta preamble, a number written with its unit, negation."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.judges import LexicalJudge
from ragtrace.evaluation.judges.checks import check_evidence
from ragtrace.evaluation.judges.lexical.align import Source, align, cues
from ragtrace.evaluation.judges.lexical.tokens import NUMBER_WEIGHT, tokens
from ragtrace.evaluation.judges.segment import is_meta, meta_lead, segment_answer


def _texts(text: str) -> list[str]:
    return [t.text for t in tokens(text)]


def test_numbers_are_normalised_with_their_units() -> None:
    assert _texts("It is 5.68m tall.") == _texts("It is 5.68 m tall.") == ["5.68", "tall"]
    assert _texts("1,200 people, 12% and 3.50 dollars") == [
        "1200",
        "12",
        "3.5",
        "people",
        "percent",
        "dollar",
    ]
    assert _texts("three sites") == ["3", "site"]
    assert _texts("٩٠ يوما")[0] == "90"
    assert tokens("v1 of COVID-19")[0].text == "19" and "v1" in _texts("v1 of COVID-19")


def test_rare_words_names_and_numbers_weigh_more() -> None:
    weight = {t.text: t.weight for t in tokens("In 2019 Dr Okonkwo said carcinogenic.")}
    assert weight["2019"] == NUMBER_WEIGHT
    assert weight["okonkwo"] > weight["said"]
    assert weight["carcinogenic"] > 2 * weight["said"]
    assert "in" not in weight  # a stop word is no token


def test_inflection_is_not_new() -> None:
    source = Source.of([(0, "The committee carries the motions.")])
    assert align("The committee carried the motion.", source).support == 1.0


def test_the_5_68m_number_passes_support_and_the_unrelated_check() -> None:
    context = ["The record jump was 5.68 m, set in 2019."]
    answer = "The record jump was 5.68m."
    assert check_evidence(answer, context[0], context) is None
    result = LexicalJudge().groundedness(answer, context)
    assert result.score == 1.0 and result.claims[0].evidence_verified


def test_a_dropped_hedge_is_a_contradiction() -> None:
    context = ["The factory released a reportedly carcinogenic chemical into the river."]
    assert cues("The factory released a carcinogenic chemical.", context[0]) == ("hedge",)
    assert cues("The factory released a reportedly carcinogenic chemical.", context[0]) == ()
    result = LexicalJudge().groundedness("The factory released a carcinogenic chemical.", context)
    assert result.score == 0.0
    kept = LexicalJudge().groundedness(
        "The factory released a reportedly carcinogenic chemical.", context
    )
    assert kept.score == 1.0


@pytest.mark.parametrize(
    ("answer", "cue"),
    [
        ("The new drug does not cure the disease.", "negation"),  # added
        ("Patients must take the drug daily.", "modality"),
    ],
)
def test_negation_and_modality_mismatches(answer: str, cue: str) -> None:
    window = "Patients may take the new drug daily, and it cures the disease."
    assert cue in cues(answer, window)


def test_a_dropped_negation_is_a_contradiction() -> None:
    context = ["The council did not approve the new stadium plan."]
    result = LexicalJudge().groundedness("The council approved the new stadium plan.", context)
    assert result.score == 0.0
    assert LexicalJudge().groundedness("The council did not approve the plan.", context).score == 1


def test_a_recombined_fabrication_is_not_supported() -> None:
    # every word of the answer is somewhere in the context, but no sentence (nor two adjacent
    # ones, the widest window) says it
    context = [
        "Maria Lopez founded the bakery in Seville in 1998. "
        "Lopez later opened a school for pastry chefs. "
        "The city council of Madrid fined a restaurant in 2011."
    ]
    answer = "The city council of Seville fined Maria Lopez's bakery in 1998."
    found = align(answer, Source.of(list(enumerate(context))))
    assert found.anywhere == 1.0
    assert found.aligned < 0.8 and found.support < LexicalJudge().threshold
    assert LexicalJudge().groundedness(answer, context).score == 0.0


def test_support_is_measured_against_one_window_not_the_whole_context() -> None:
    context = ["Alpha wrote the report. Gamma reviewed the budget. Delta approved the merger."]
    source = Source.of(list(enumerate(context)))
    spread = align("Alpha reviewed the merger.", source)
    assert spread.anywhere == 1.0 and spread.support < LexicalJudge().threshold
    assert align("Alpha wrote the report.", source).support == 1.0


@pytest.mark.parametrize(
    "unit",
    [
        "Here is a concise summary of the passage:",
        "Sure! Here is a summary of the news article within 116 words:",
        "I hope this helps!",
        "Let me know if you have any other questions.",
        "Sure.",
        "Summary:",
    ],
)
def test_meta_units_are_recognised(unit: str) -> None:
    assert is_meta(unit)


@pytest.mark.parametrize(
    "unit",
    [
        "Here is why Paris won the bid.",
        "Based on the passages, Paris is the capital of France.",
        "Thanks to the new law, taxes fell.",
        "Sure, the firm lost money.",
        "Here is the answer: 42 people died.",
    ],
)
def test_a_unit_with_a_claim_is_not_meta(unit: str) -> None:
    assert not is_meta(unit)


def test_meta_preamble_is_not_a_unit_and_a_lead_in_is_cut() -> None:
    answer = (
        "Here is a concise summary of the passage:\n\n"
        "The firm lost 5 million dollars. I hope this helps!"
    )
    assert [u.text for u in segment_answer(answer)] == ["The firm lost 5 million dollars."]
    lead = "Based on the given passages, the answer is: Paris is the capital."
    assert lead[meta_lead(lead) :].strip() == "Paris is the capital."
    assert [u.text for u in segment_answer(lead)] == ["Paris is the capital."]
    result = LexicalJudge().groundedness(answer, ["The firm lost 5 million dollars last year."])
    assert result.score == 1.0


def test_a_fact_cannot_hide_in_a_preamble() -> None:
    answer = "Here is a summary of the merger that closed in 2019:"
    assert not is_meta(answer)
    assert [u.text for u in segment_answer(answer)] == [answer]
    assert LexicalJudge().groundedness(answer, ["Nothing about it."]).score == 0.0


def test_a_figure_or_name_the_source_lacks_is_a_mismatch() -> None:
    source = Source.of(
        [(0, "The film grossed $181.7 million worldwide on a budget of $160 million.")]
    )
    found = align("The film grossed $181,674,817 worldwide.", source)
    assert "figure" in found.cues and found.support < 0.5
    assert align("The film grossed $181.7 million worldwide.", source).cues == ()
    named = Source.of([(0, "HSBC has appointed the chief executive of AIA, Mark Tucker.")])
    assert "name" in align("HSBC has appointed Alex Tucker.", named).cues
    assert align("HSBC has appointed Mark Tucker.", named).cues == ()


@pytest.mark.parametrize(
    "unit",
    [
        "Here is a concise summary of the passage, covering the core pieces of information "
        "described:",
        "Based solely on the information provided in the passage, I can offer the following "
        "concise summary:",
        "Key points include:",
    ],
)
def test_longer_preambles_are_meta(unit: str) -> None:
    assert is_meta(unit)
    assert not is_meta("Key points include the 2014 shortlist:")


def test_ranking_score_blends_mean_support_with_word_overlap() -> None:
    from ragtrace.evaluation.judges.lexical.judge import OVERLAP_SHARE, TIE_BREAK, ranking_score

    assert OVERLAP_SHARE == 0.9
    # (1 - 0.9) * mean support + 0.9 * overlap + TIE_BREAK * groundedness, exactly
    assert ranking_score(0.0, [0.6, 0.8], 0.5) == pytest.approx(0.52)
    assert ranking_score(1.0, [0.9], 0.7) == pytest.approx(0.72 + TIE_BREAK)
    # another share (a judge fitted on other sets)
    assert ranking_score(0.0, [0.6, 0.8], 0.5, 0.5) == pytest.approx(0.6)
    assert ranking_score(0.0, [0.6, 0.8], 0.5, 0.0) == pytest.approx(0.7)
    assert ranking_score(1.0, []) == ranking_score(1.0, [1.0]) == pytest.approx(1.0 + TIE_BREAK)
    # lower support or lower overlap: more suspect
    assert ranking_score(1.0, [0.9]) < ranking_score(1.0, [1.0])
    assert ranking_score(1.0, [1.0], 0.5) < ranking_score(1.0, [1.0], 0.9)
    # the key is not on the groundedness scale: a well-supported answer that failed one unit
    # by a check can outrank a barely passing one
    assert ranking_score(0.5, [0.95, 0.99], 1.0) > ranking_score(1.0, [0.84, 0.84], 0.6)
    # groundedness only orders answers whose support and overlap are equal
    assert ranking_score(0.5, [0.9], 0.9) < ranking_score(1.0, [0.9], 0.9)
    assert ranking_score(1.0, [0.9], 0.9) < ranking_score(0.0, [0.9], 0.91)


def test_a_figure_spaced_in_the_source_is_the_same_figure() -> None:
    source = Source.of(
        [(0, "There are about 26, 000 members and 15 000 staff; it cost $ 1. 7 million.")]
    )
    found = align("It has 26,000 members, 15,000 staff and cost $1.7 million.", source)
    assert found.cues == () and found.anywhere == 1.0
    assert found.support >= LexicalJudge().threshold
    assert "figure" in align("It has 27,000 members.", source).cues
