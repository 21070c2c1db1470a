"""A consumer killed with SIGKILL mid-stream: the replica that takes over loses no sampled trace
and never writes a second, different score for a (trace, metric).

Counted where it matters: evaluation spans at the trace backend (distinct span IDs per trace and
metric), idempotency keys in Redis, and the group's committed offsets in Kafka.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
import redis

from ragtrace import semconv
from ragtrace_consumers.stores.redis_marks import RedisIdempotencyStore
from scripts.services import CollectorEndpoints, OtlpSink
from tests.e2e import online_app
from tests.e2e.online import (
    ASSIGNED,
    DLQ_TOPIC,
    app_requests,
    committed_offsets,
    consumer_env,
    end_offsets,
    evaluation_spans,
    group_at_end,
    load_labels,
    metric_spans,
    start_app,
    start_consumer,
    verbatim_responder,
)
from tests.e2e.redis_text import text
from tests.fakes.anthropic_server import FakeAnthropic

pytestmark = pytest.mark.e2e

REPEAT = 16  # 5 questions each: 80 traces
LABELLED = set(online_app.QUESTION_IDS)


def _instance(pid: int) -> str:
    return f"{socket.gethostname()}-{pid}"


def _wait_idle(client: redis.Redis, prefix: str, timeout: float = 120.0) -> None:
    """Until no trace is due, leased or stored under ``prefix``."""
    deadline = time.monotonic() + timeout
    while (
        client.zcard(f"{prefix}:due")
        or client.zcard(f"{prefix}:leases")
        or any(True for _ in client.scan_iter(f"{prefix}:trace:*", count=1000))
    ):
        assert time.monotonic() < deadline, "traces still pending in Redis"
        time.sleep(0.2)


def test_sigkill_mid_stream_loses_nothing_and_scores_nothing_twice(
    tmp_path: Path,
    redis_url: str,
    kafka_bootstrap: str,
    kafka_topic: object,
    collector: CollectorEndpoints,
    trace_backend: OtlpSink,
) -> None:
    kafka_topic(DLQ_TOPIC, 1)  # type: ignore[operator]
    prefix = f"crash-{uuid.uuid4().hex[:8]}"
    group = f"ragtrace-crash-{uuid.uuid4().hex[:8]}"
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(q) + "\n" for q in online_app.LABELS))
    load_labels(redis_url, prefix, labels)
    group_at_end(kafka_bootstrap, collector.topic, group)
    client = redis.Redis.from_url(redis_url)

    with FakeAnthropic(verbatim_responder(delay_s=0.15)) as judge:
        env = consumer_env(
            collector=collector,
            redis_url=redis_url,
            prefix=prefix,
            group=group,
            judge_url=judge.base_url,
            # 4 judgements of at most 5 s (+ 1 s margin) fit in the lease (checked at start-up);
            # a judgement the loaded machine still makes miss its budget is parked for seconds,
            # not the default half minute and more, so every trace lands within the wait below.
            extra={
                "RAGTRACE_ASSEMBLY_LEASE_S": "30",
                "RAGTRACE_JUDGE_BUDGET_S": "5",
                "RAGTRACE_JUDGE_CONCURRENCY": "2",
                "RAGTRACE_JUDGE_PARK_BACKOFF_S": "1",
                "RAGTRACE_JUDGE_PARK_BACKOFF_MAX_S": "5",
            },
        )
        first = start_consumer(env, tmp_path / "first.log")
        second = None
        try:
            first.wait_for_log(ASSIGNED)
            app = start_app(collector.app_otlp_http, repeat=REPEAT, unique=True)
            by_first = _instance(first.proc.pid)
            trace_backend.wait_for_spans(
                lambda s: (
                    s.scope == semconv.EVALUATION_SCOPE
                    and s.resource.get("service.instance.id") == by_first
                ),
                count=10,
                timeout=90,
            )
            deadline = time.monotonic() + 30
            while not client.zcard(f"{prefix}:leases"):  # kill it while it is scoring
                assert time.monotonic() < deadline, first.tail()
                time.sleep(0.005)
            first.kill()  # SIGKILL: no drain, no commit, its leased traces left behind
            orphaned = {text(t) for t in client.zrange(f"{prefix}:leases", 0, -1)}
            second = start_consumer(env, tmp_path / "second.log")
            requests = app_requests(app)
            ids = {r["trace_id"] for r in requests}
            assert len(ids) == 5 * REPEAT
            trace_backend.wait_for_spans(
                lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids,
                count=len(ids),
                timeout=180,
            )
            _wait_idle(client, prefix)
            time.sleep(2.0)  # the collector's batch timeout: any late duplicate would show
            ends = end_offsets(kafka_bootstrap, collector.topic)
            assert second.terminate() == 0, second.tail()
        finally:
            first.kill()
            if second is not None:
                second.kill()

    spans = evaluation_spans(trace_backend, ids)
    by_second = _instance(second.proc.pid)
    writers = {s.resource.get("service.instance.id") for s in spans}
    assert writers == {by_first, by_second}, "the kill did not land mid-stream"

    key_of = {r["trace_id"]: r["key"] for r in requests}
    root_of = {r["trace_id"]: r["root_span_id"] for r in requests}
    span_ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    copies: dict[str, list[object]] = defaultdict(list)
    for s in spans:
        assert s.parent_span_id == root_of[s.trace_id]
        copies[s.span_id].append((s.attributes, s.events))
    # The results sit on per-family spans under the evaluated spans: one span per metric, ever.
    for s in metric_spans(trace_backend, ids):
        copies[s.span_id].append((s.attributes, s.events))
        for _, attrs in s.events:
            span_ids[(s.trace_id, str(attrs[semconv.GEN_AI_EVALUATION_NAME]))].add(s.span_id)
    # A replay in the crash window may re-send a span, but only an identical one.
    for span_id, seen in copies.items():
        assert all(c == seen[0] for c in seen), span_id
    for trace_id in ids:
        key = key_of[trace_id]
        expected = {"groundedness"} | (
            {"recall", "hit_rate", "precision", "reciprocal_rank", "ndcg", "context_relevancy"}
            if key in LABELLED
            else set()
        )
        names = {name for (t, name) in span_ids if t == trace_id}
        assert names == expected, (trace_id, key, names)
        for name in names:
            assert len(span_ids[(trace_id, name)]) == 1, (trace_id, name)  # one score, ever
        attrs = next(
            s.attributes
            for s in spans  # the summary span (any copy: identical)
            if s.trace_id == trace_id and semconv.EVAL_GROUNDEDNESS in s.attributes
        )
        recall, _, _, _, groundedness, cell = online_app.EXPECTED[key]
        assert attrs[semconv.EVAL_GROUNDEDNESS] == groundedness
        assert attrs[semconv.EVAL_CELL] == cell
        assert attrs.get(semconv.EVAL_RECALL) == recall

    # Exactly the delivered (trace, family) pairs are marked written (the consumer's table).
    marks = RedisIdempotencyStore(client, prefix=prefix)
    pairs = [(t, fam) for t in ids for fam in ("recall", "groundedness")]
    written = {
        pair for pair, marked in zip(pairs, marks.written_many(pairs), strict=True) if marked
    }
    assert written == {
        (t, fam)
        for t in ids
        for fam in (["recall", "groundedness"] if key_of[t] in LABELLED else ["groundedness"])
    }
    assert committed_offsets(kafka_bootstrap, collector.topic, group) == ends
    # The traces the killed replica was scoring came back when their lease ran out.
    stats = {text(k): int(v) for k, v in client.hgetall(f"{prefix}:stats").items()}
    assert orphaned and stats["lease_expired"] == len(orphaned), (orphaned, stats)
    assert stats["released"] == len(ids) and stats.get("dead", 0) == 0
    print(
        f"crash recovery: {len(orphaned)} orphaned traces, store {stats}, "
        f"identical re-sends {sum(len(c) - 1 for c in copies.values())}"
    )
