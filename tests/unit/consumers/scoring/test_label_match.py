"""Label matching and the label index (the store contract is tests/e2e/test_stores.py)."""

from __future__ import annotations

import threading

import pytest

from ragtrace.evaluation.labels import LabelledQuestion, label_set_version
from ragtrace.normalize import question_sha256
from ragtrace_consumers.model import (
    EMPTY_QUESTION_SHA256,
    LabelIndex,
    LabelStats,
    RagTrace,
    question_from_json,
    question_to_json,
)
from ragtrace_consumers.scoring.label_match import match_label
from ragtrace_consumers.stores.memory import MemoryLabelStore

Q1 = LabelledQuestion("q1", "How long are audit logs kept?", frozenset({"c1", "c2"}))
Q2 = LabelledQuestion("q2", "Ｗｈｅｒｅ are logs stored?", frozenset({"c3"}))
Q3 = LabelledQuestion("q3", "¿¡!!", frozenset())


def _trace(question_id: str | None = None, sha: str | None = None) -> RagTrace:
    return RagTrace(
        trace_id="a" * 32,
        service="s",
        target_span_id="1" * 16,
        question_id=question_id,
        query_sha256=sha,
    )


def test_index() -> None:
    index = LabelIndex.build([Q1, Q2, Q3])
    assert dict(index.by_id) == {"q1": Q1, "q2": Q2, "q3": Q3}
    # A question that normalises to nothing is never matched by text.
    assert dict(index.by_sha256) == {Q1.question_sha256: "q1", Q2.question_sha256: "q2"}
    assert index.ambiguous == frozenset()
    assert index.version == label_set_version([Q3, Q2, Q1])
    assert index.stats(loaded_at=5.0, source="f") == LabelStats(
        version=index.version, questions=3, answerable=2, ambiguous=0, loaded_at=5.0, source="f"
    )
    assert Q3.question_sha256 == EMPTY_QUESTION_SHA256


def test_ambiguous_and_duplicate() -> None:
    twin = LabelledQuestion("q9", "how long are AUDIT logs kept", frozenset({"c9"}))
    index = LabelIndex.build([Q1, twin])
    assert index.by_sha256 == {}
    assert index.ambiguous == {Q1.question_sha256}
    assert index.stats().ambiguous == 2
    with pytest.raises(ValueError, match="duplicate qid 'q1' in the label set"):
        LabelIndex.build([Q1, Q1])


def test_match_by_id_first_then_text_then_nothing() -> None:
    store = MemoryLabelStore([Q1, Q2, Q3])
    assert match_label(_trace("q1", question_sha256("Where are logs stored")), store) == (
        Q1,
        "question_id",
    )
    # Full-width letters, case and punctuation do not matter.
    assert match_label(_trace(sha=question_sha256("where ARE logs stored")), store) == (
        Q2,
        "query_text",
    )
    assert match_label(_trace("nope", question_sha256("where are logs stored?")), store) == (
        Q2,
        "query_text",
    )
    assert match_label(_trace(sha=EMPTY_QUESTION_SHA256), store) == (None, None)
    assert match_label(_trace(), store) == (None, None)
    assert match_label(_trace("q1"), MemoryLabelStore()) == (None, None)


def test_question_json_round_trip() -> None:
    text = question_to_json(Q2)
    assert text == '{"qid":"q2","question":"Ｗｈｅｒｅ are logs stored?","gold":["c3"]}'
    assert question_from_json(text) == Q2
    assert question_from_json(text.encode()) == Q2


def test_stats_values_are_validated() -> None:
    with pytest.raises(ValueError, match="label counts must be >= 0"):
        LabelStats(version="v", questions=-1)
    assert LabelStats(version=None).to_dict() == {
        "version": None,
        "questions": 0,
        "answerable": 0,
        "ambiguous": 0,
        "loaded_at": None,
        "source": None,
    }


def test_memory_reload_is_atomic_for_concurrent_readers() -> None:
    old = [LabelledQuestion(f"q{i}", f"old question {i}", frozenset({"old"})) for i in range(50)]
    new = [LabelledQuestion(f"q{i}", f"old question {i}", frozenset({"new"})) for i in range(50)]
    store = MemoryLabelStore(old)
    seen: set[frozenset[str]] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            # One lookup pair sees one version: never a gold set from the other.
            q = store.by_question_sha256(question_sha256("old question 7"))
            assert q is not None
            seen.add(q.gold)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for _ in range(20):
        store.load(new)
        store.load(old)
    stop.set()
    for t in threads:
        t.join()
    assert seen <= {frozenset({"old"}), frozenset({"new"})}
