"""Labels from live traffic into the consumer fleet's store: ``RedisLabelStore.add`` (what the
web view's :class:`~ragtrace_consumers.model.LabelSet` seam calls) makes a new versioned set
that matches the question by text, and ``ragtrace labels export`` writes it back as a file."""

from __future__ import annotations

import uuid
from pathlib import Path

from ragtrace.cli import main
from ragtrace.evaluation.labels import LabelledQuestion, label_set_version, load_labels
from ragtrace.normalize import question_sha256
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
