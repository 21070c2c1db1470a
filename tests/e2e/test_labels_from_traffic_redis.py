"""Labels from live traffic into the consumer fleet's store: ``RedisLabelStore.add`` (what the
web view's :class:`~ragtrace_consumers.model.LabelSet` seam calls) makes a new versioned set
that matches the question by text, and ``ragtrace labels export`` writes it back as a file; a
save names the version it replaces and concurrent saves drop no question."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.evaluation.labels import LabelledQuestion, label_set_version, load_labels
from ragtrace.normalize import question_sha256
from ragtrace_consumers.errors import LabelConflict
from ragtrace_consumers.model import question_version
from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_state import RedisLabelStore


def test_a_label_added_to_redis_is_a_new_set_and_exports(
    any_redis_url: str, tmp_path: Path
) -> None:
    redis_url = any_redis_url
    prefix = f"web-{uuid.uuid4().hex[:8]}"
    store = RedisLabelStore(connect(redis_url), prefix=prefix)
    base = [LabelledQuestion("q-1", "How long are audit logs kept?", frozenset({"c-1"}))]
    first = store.load(base, source="file")
    added = LabelledQuestion("web-2", "Does the dashboard have a dark mode?", frozenset({"c-7"}))
    version = store.add(added, trace_id="a" * 32)
    assert version != first and version == label_set_version([*base, added])
    assert store.version() == version
    assert (
        store.by_question_sha256(question_sha256("does the dashboard have a DARK mode?")) == added
    )
    assert store.stats().source == f"labelled from trace {'a' * 32}"
    replaced = LabelledQuestion("web-2", added.question, frozenset({"c-7", "c-8"}))
    store.add(replaced)
    assert store.questions() == [base[0], replaced]
    out = tmp_path / "labels.jsonl"
    assert main(["labels", "export", "--redis", redis_url, "--prefix", prefix, "-o", str(out)]) == 0
    assert load_labels(out) == [base[0], replaced]


def test_a_redis_save_against_a_changed_label_is_refused(redis_url: str) -> None:
    prefix = f"web-{uuid.uuid4().hex[:8]}"
    store = RedisLabelStore(connect(redis_url), prefix=prefix)
    audit = LabelledQuestion("q-1", "How long are audit logs kept?", frozenset({"c-4410"}))
    other = LabelledQuestion("q-2", "Which regions?", frozenset({"c-5100"}))
    store.load([audit, other], source="file")
    assert store.labelled_at("q-1") is None
    read = question_version(audit)
    theirs = LabelledQuestion("q-1", audit.question, frozenset({"c-9931"}))
    store.add(theirs, replaces=read)
    at = store.labelled_at("q-1")
    assert at is not None and at > 0
    version = store.version()
    with pytest.raises(LabelConflict) as refused:
        store.add(LabelledQuestion("q-1", audit.question, frozenset()), replaces=read)
    assert refused.value.current == question_version(theirs)
    assert store.version() == version and store.by_id("q-1") == theirs
    with pytest.raises(LabelConflict, match="no label then"):
        store.add(LabelledQuestion("q-2", other.question, frozenset()), replaces="")
    unanswerable = LabelledQuestion("q-1", audit.question, frozenset())
    store.add(unanswerable, replaces=question_version(theirs))
    assert store.questions() == [unanswerable, other]
    store.clear()
    assert store.labelled_at("q-1") is None


def test_concurrent_redis_saves_keep_every_question(redis_url: str) -> None:
    """Each save reads the set and writes it whole: under WATCH, one that lost the race reads
    the other's set and tries again, so no question is dropped (before: last one won)."""
    prefix = f"web-{uuid.uuid4().hex[:8]}"
    client = connect(redis_url)
    RedisLabelStore(client, prefix=prefix).load(
        [LabelledQuestion("q-0", "first?", frozenset({"c-0"}))], source="file"
    )
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def save(n: int) -> None:
        store = RedisLabelStore(connect(redis_url), prefix=prefix)
        start.wait()
        try:
            store.add(LabelledQuestion(f"q-{n}", f"question {n}?", frozenset({f"c-{n}"})))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(n,)) for n in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    qids = [q.qid for q in RedisLabelStore(client, prefix=prefix).questions()]
    assert qids == [f"q-{n}" for n in range(7)]
