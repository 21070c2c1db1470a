"""The answer's units (the code's split, not the judge's) and the content words the checks use."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.judges import Unit, segment_answer
from ragtrace.evaluation.judges.terms import content_words, named_entities, numbers


def texts(answer: str) -> list[str]:
    return [u.text for u in segment_answer(answer)]


def test_sentences_are_units_numbered_in_order_citations_removed() -> None:
    units = segment_answer(
        "Audit logs are kept 90 days [c-9930]. They cannot be restored. [c-9930]"
    )
    assert units == (Unit(1, "Audit logs are kept 90 days."), Unit(2, "They cannot be restored."))


def test_seed_arabic_answer_is_three_units() -> None:
    answer = (
        "لك واحد وعشرون يوم عمل إجازة سنوية. ويمكنك ترحيل عشرة أيام إلى السنة التالية. "
        "ويمكنك صرف رصيد الإجازة نقدا عند الاستقالة."
    )
    assert texts(answer) == [
        "لك واحد وعشرون يوم عمل إجازة سنوية.",
        "ويمكنك ترحيل عشرة أيام إلى السنة التالية.",
        "ويمكنك صرف رصيد الإجازة نقدا عند الاستقالة.",
    ]


def test_arabic_question_mark_cjk_and_decimals() -> None:
    assert texts("هل يمكن الترحيل؟ نعم يمكن.") == ["هل يمكن الترحيل؟", "نعم يمكن."]
    assert texts("監査ログは90日間保存されます。復元できません。") == [
        "監査ログは90日間保存されます。",
        "復元できません。",
    ]
    assert texts("लॉग 90 दिन रखे जाते हैं। उन्हें बहाल नहीं किया जा सकता।") == [
        "लॉग 90 दिन रखे जाते हैं।",
        "उन्हें बहाल नहीं किया जा सकता।",
    ]
    assert texts("Version 3.5 of the API is current, e.g. for exports.") == [
        "Version 3.5 of the API is current, e.g. for exports."
    ]


def test_list_items_headings_and_wrapped_lines() -> None:
    answer = (
        "## Retention\n"
        "Audit logs are kept\nfor 90 days.\n\n"
        "- Exports are CSV.\n"
        "* Keys rotate daily. Old keys last 24 hours.\n"
        "1. Open Settings\n"
        "2) Choose API keys\n"
    )
    assert texts(answer) == [
        "Retention",
        "Audit logs are kept for 90 days.",
        "Exports are CSV.",
        "Keys rotate daily.",
        "Old keys last 24 hours.",
        "Open Settings",
        "Choose API keys",
    ]


def test_a_fenced_code_block_is_one_unit() -> None:
    answer = (
        "Rotate a key with the CLI:\n```bash\nacme keys rotate --id K1\n\nacme keys list\n```\n"
        "The old key works for 24 hours."
    )
    units = segment_answer(answer)
    assert [(u.kind, u.text) for u in units] == [
        ("sentence", "Rotate a key with the CLI:"),
        ("code", "acme keys rotate --id K1\n\nacme keys list"),
        ("sentence", "The old key works for 24 hours."),
    ]


def test_nothing_to_judge() -> None:
    assert segment_answer("") == ()
    assert segment_answer("[c-1] … \n\n- \n```\n```") == ()


def test_unit_validation() -> None:
    with pytest.raises(ValueError):
        Unit(0, "x")
    with pytest.raises(ValueError):
        Unit(1, "x", "table")


def test_content_words_drop_function_words_and_reduce_plurals() -> None:
    assert content_words(
        "Audit logs are retained for 90 days, after which they cannot be restored."
    ) == {"audit", "log", "retained", "90", "day", "restored"}
    assert content_words(".") == set() and content_words("the of and") == set()


def test_arabic_content_words_match_across_clitics_and_spelling() -> None:
    claim = content_words("ويمكنك ترحيل عشرة أيام إلى السنة التالية.")
    source = content_words("يمكن ترحيل عشرة أيام إلى السنة التالية.")
    assert {"ترحيل", "عشره", "ايام", "سنه", "تاليه"} <= claim & source
    assert "الى" not in claim and "إلى" not in claim  # a stop word
    assert content_words("إِجَازَة") == content_words("اجازه")  # harakat, alef, teh marbuta


def test_numbers_any_script_and_named_entities() -> None:
    assert numbers("٩٠ يوما") == {"90"}
    assert numbers("1,000 requests, or 1000 a day, 3.5 each") == {"1000", "3", "5"}
    assert numbers("The /v1/exports endpoint returns HTTP 409") == {"v1", "409"}
    assert named_entities("Workspace data can be hosted in the EU (Frankfurt) or Oregon.") == {
        "eu",
        "frankfurt",
        "oregon",
    }
    assert named_entities("Audit logs. Logs are deleted.") == set()  # sentence-initial only
    assert content_words("監査ログ") == {"監査", "査ロ", "ログ"}  # unspaced script: bigrams
