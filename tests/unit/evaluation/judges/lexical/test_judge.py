from __future__ import annotations

import hashlib

import pytest

from ragtrace.evaluation.judges import JudgeCapabilityError, LexicalJudge, make_judge
from ragtrace.evaluation.judges.lexical.judge import DEFAULT_THRESHOLD, SEED_THRESHOLD, word_overlap
from ragtrace.evaluation.judges.segment import segment_answer

# The second seed document's faithfulness example, verbatim.
SOURCE = (
    "يحق للموظف إجازة سنوية مدتها واحد وعشرون يوم عمل. "
    "تقدم الطلبات قبل أسبوعين. يمكن ترحيل عشرة أيام إلى السنة التالية."
)
ANSWER = (
    "لك واحد وعشرون يوم عمل إجازة سنوية. "
    "ويمكنك ترحيل عشرة أيام إلى السنة التالية. "
    "ويمكنك صرف رصيد الإجازة نقدا عند الاستقالة."
)

AUDIT_CONTEXT = (
    "Audit log retention on the Enterprise plan is 90 days. Logs older than the "
    "retention window are deleted nightly and cannot be restored."
)
AUDIT_ANSWER = (
    "Audit logs are retained for 90 days, after which they are deleted nightly and "
    "cannot be restored. [c-9930]"
)


def test_seed_arabic_example_two_supported_one_invented() -> None:
    result = LexicalJudge().groundedness(ANSWER, [SOURCE])
    assert [c.claim for c in result.claims] == [
        "لك واحد وعشرون يوم عمل إجازة سنوية.",
        "ويمكنك ترحيل عشرة أيام إلى السنة التالية.",
        "ويمكنك صرف رصيد الإجازة نقدا عند الاستقالة.",
    ]
    # the seed's rough check, kept as its documented metric: 86 %, 86 %, 0 % of the words
    seed = [word_overlap(u.text, [SOURCE]) for u in segment_answer(ANSWER)]
    assert seed == [6 / 7, 6 / 7, 0.0]
    assert [round(s * 100) for s in seed] == [86, 86, 0]
    assert [s >= SEED_THRESHOLD for s in seed] == [True, True, False]
    # the judge's support: 0.9 of the aligned, rarity-weighted share ("لك" is a stop word;
    # "ويمكنك" matches "يمكن" fuzzily, at 0.8 of its weight: 1.0, 0.9571, 0.1961) and 0.1 of the
    # word overlap with inflection folded (6/7, 6/7, 1/7)
    assert [c.support for c in result.claims] == [0.9857, 0.9471, 0.1907]
    assert [c.entailed for c in result.claims] == [True, True, False]
    assert result.score == pytest.approx(2 / 3)
    assert result.claims[0].evidence == "يحق للموظف إجازة سنوية مدتها واحد وعشرون يوم عمل."
    assert result.claims[1].evidence == "يمكن ترحيل عشرة أيام إلى السنة التالية."
    assert all(c.evidence_verified for c in result.claims[:2])
    assert result.claims[2].evidence is None and not result.claims[2].downgraded
    assert result.judge.name == "lexical" and result.judge.model is None


def test_threshold_is_inclusive_and_configurable() -> None:
    # 3 of 5 words in the source, weighted by rarity 0.564, by count 0.6: support
    # 0.9 * 0.564 + 0.1 * 0.6 = 0.5676, supported at exactly that
    answer, context = "alpha beta gamma delta epsilon.", ["alpha beta gamma"]
    assert word_overlap(answer, context) == 0.6
    result = LexicalJudge().groundedness(answer, context)
    assert result.claims[0].support == 0.5676 and result.score == 0.0
    assert LexicalJudge(threshold=0.5676).groundedness(answer, context).score == 1.0
    strict = LexicalJudge(threshold=0.5677)
    assert strict.groundedness(answer, context).score == 0
    assert strict.info.prompt_sha256 != LexicalJudge().info.prompt_sha256
    assert LexicalJudge().threshold == DEFAULT_THRESHOLD == 0.83
    with pytest.raises(ValueError, match="threshold"):
        LexicalJudge(threshold=0)
    with pytest.raises(ValueError, match="unit_overlap_share"):
        LexicalJudge(unit_overlap_share=1.5)
    with pytest.raises(ValueError, match="overlap_share"):
        LexicalJudge(overlap_share=-0.1)
    shares = LexicalJudge(unit_overlap_share=0.5, overlap_share=0.5)
    assert shares.groundedness(answer, context).claims[0].support == 0.582  # 0.5 each
    assert shares.info.prompt_sha256 != LexicalJudge().info.prompt_sha256


def test_audit_log_answer_is_grounded_and_citation_is_not_a_claim() -> None:
    result = LexicalJudge().groundedness(AUDIT_ANSWER, [AUDIT_CONTEXT])
    assert len(result.claims) == 1
    assert word_overlap(AUDIT_ANSWER, [AUDIT_CONTEXT]) == 11 / 16  # the seed's check
    # aligned with the context's two sentences ("retained" is not "retention"): 0.8509, blended
    # 0.9 : 0.1 with the word overlap (11/16): 0.8346
    assert result.claims[0].support == 0.8346
    assert result.score == 1.0


def test_no_claims_and_empty_context() -> None:
    assert LexicalJudge().groundedness("[c-1] …", ["x"]).no_claims
    empty = LexicalJudge().groundedness("Something is true.", [])
    assert empty.score == 0.0 and empty.claims[0].support == 0.0


def test_judge_claims_keeps_given_claims() -> None:
    result = LexicalJudge().judge_claims(["يمكن ترحيل عشرة أيام", "صرف رصيد نقدا"], [SOURCE])
    assert [c.claim for c in result.claims] == ["يمكن ترحيل عشرة أيام", "صرف رصيد نقدا"]
    assert [c.entailed for c in result.claims] == [True, False]


def test_adjacent_metrics_offline() -> None:
    judge = LexicalJudge()
    with pytest.raises(JudgeCapabilityError, match="not available offline"):
        judge.answer_relevancy("q?", "a")
    result = judge.answer_correctness("q?", "the cat sat", "the cat sat down")
    # precision 3/3, recall 3/4 -> F1 = 6/7
    assert result.score == pytest.approx(6 / 7)
    assert result.metric == "answer_correctness" and result.details == ({"method": "token_f1"},)
    assert judge.answer_correctness("q", "", "").score == 1.0
    assert judge.answer_correctness("q", "dog", "cat").score == 0.0


def test_make_judge_auto_is_lexical_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert isinstance(make_judge(), LexicalJudge)
    assert isinstance(make_judge("auto", model="x", threshold=0.7), LexicalJudge)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        make_judge("anthropic")
    with pytest.raises(ValueError, match="unknown judge"):
        make_judge("gpt")


def test_the_aligned_algorithm_is_a_judge_change() -> None:
    """The calibration warning compares prompt hashes: the rebuilt judge must not share the word
    overlap judge's hash, and its constants are part of the description."""
    from ragtrace.evaluation.judges.lexical.align import ALGORITHM, ALIGNED_SHARE, CUE_PENALTY
    from ragtrace.evaluation.judges.prompts import CHECKS_VERSION

    overlap_v2 = f"ragtrace lexical groundedness v2: unit word overlap >= 0.6; {CHECKS_VERSION}"
    old = hashlib.sha256(overlap_v2.encode("utf-8")).hexdigest()
    assert LexicalJudge(threshold=0.6).info.prompt_sha256 != old
    assert f"share={ALIGNED_SHARE}" in ALGORITHM and f"cue={CUE_PENALTY}" in ALGORITHM
    from ragtrace.evaluation.judges.segment import meta_fingerprint

    assert "mismatch=figure,name" in ALGORITHM and meta_fingerprint() in ALGORITHM
