"""The embedded label store's per-question versions: a save names the version it replaces and is
refused, writing nothing, when the question's label changed since (optimistic concurrency)."""

from __future__ import annotations

import threading

import pytest

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.errors import LabelConflict
from ragtrace_consumers.model import question_version
from ragtrace_consumers.stores.sqlite_labels import SqliteLabelStore
from ragtrace_consumers.stores.sqlite_state import SqliteState

AUDIT = LabelledQuestion("q-audit", "How long are audit logs kept?", frozenset({"c-4410"}))
OTHER = LabelledQuestion("q-other", "Which regions?", frozenset({"c-5100"}))


@pytest.fixture
def store() -> SqliteLabelStore:
    s = SqliteLabelStore(SqliteState(":memory:"))
    s.start([AUDIT, OTHER], source="labels.jsonl")
    return s


def _with(q: LabelledQuestion, *gold: str) -> LabelledQuestion:
    return LabelledQuestion(q.qid, q.question, frozenset(gold))


def test_a_question_version_changes_with_that_question_only() -> None:
    assert question_version(None) == ""
    v = question_version(AUDIT)
    assert len(v) == 16 and v == question_version(_with(AUDIT, "c-4410"))
    assert question_version(_with(AUDIT, "c-9931")) != v
    assert question_version(_with(AUDIT)) not in ("", v)  # unanswerable is a label too
    renamed = LabelledQuestion(AUDIT.qid, "How long are audit logs retained?", AUDIT.gold)
    assert question_version(renamed) != v


def test_a_save_against_the_version_read_replaces_it(store: SqliteLabelStore) -> None:
    assert store.labelled_at(AUDIT.qid) is None  # from the labels file
    before = store.version()
    new = store.add(_with(AUDIT, "c-9931"), trace_id="a" * 32, replaces=question_version(AUDIT))
    assert new != before and store.version() == new
    assert store.by_id(AUDIT.qid) == _with(AUDIT, "c-9931")
    assert store.by_id(OTHER.qid) == OTHER
    at = store.labelled_at(AUDIT.qid)
    assert at is not None and at > 0


def test_a_stale_save_is_refused_and_writes_nothing(store: SqliteLabelStore) -> None:
    read = question_version(AUDIT)
    store.add(_with(AUDIT, "c-9931"), replaces=read)  # someone else saved first
    version, kept = store.version(), store.by_id(AUDIT.qid)
    with pytest.raises(LabelConflict) as refused:
        store.add(_with(AUDIT, "c-4410", "c-1001"), replaces=read)
    assert refused.value.expected == read
    assert refused.value.current == question_version(_with(AUDIT, "c-9931"))
    assert "q-audit" in str(refused.value) and read in str(refused.value)
    assert (store.version(), store.by_id(AUDIT.qid)) == (version, kept)


def test_a_new_label_must_still_be_new_and_none_skips_the_check(
    store: SqliteLabelStore,
) -> None:
    fresh = LabelledQuestion("q-new", "Is there a dark mode?", frozenset({"c-7700"}))
    store.add(fresh, replaces="")
    with pytest.raises(LabelConflict, match="no label then"):
        store.add(_with(fresh, "c-1"), replaces="")
    store.add(_with(fresh, "c-1"))  # a script's save without a version: written as before
    assert store.by_id("q-new") == _with(fresh, "c-1")


def test_an_unanswerable_label_is_an_empty_gold_set_and_survives_a_restart(
    store: SqliteLabelStore,
) -> None:
    store.add(_with(AUDIT), replaces=question_version(AUDIT))
    again = SqliteLabelStore(store._state)
    again.start([AUDIT, OTHER], source="labels.jsonl")
    found = again.by_id(AUDIT.qid)
    assert found is not None and found.gold == frozenset() and not found.answerable
    assert again.stats().answerable == 1


def test_concurrent_saves_of_one_version_keep_exactly_one(store: SqliteLabelStore) -> None:
    read = question_version(AUDIT)
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def save(n: int) -> None:
        start.wait()
        try:
            store.add(_with(AUDIT, f"c-{n}"), replaces=read)
            outcomes.append(f"c-{n}")
        except LabelConflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=save, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (winner,) = [o for o in outcomes if o != "refused"]
    assert outcomes.count("refused") == 7
    assert store.by_id(AUDIT.qid) == _with(AUDIT, winner)
