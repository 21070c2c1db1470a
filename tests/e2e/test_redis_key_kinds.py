"""Every key the real Redis stores write, on one server and on a cluster, falls into one of the
scale model's kinds (bench/bench_redis_scale.py): a store that gains a key the model does not
know fails here, not silently in the sizing table."""

from __future__ import annotations

import time
import uuid

import pytest

from bench.bench_redis_scale import KINDS, OTHER, key_kind
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import Chunk, SessionTurn, SpanRecord
from ragtrace_consumers.stores.redis import RedisTraceStore, connect
from ragtrace_consumers.stores.redis_marks import RedisIdempotencyStore
from ragtrace_consumers.stores.redis_state import (
    RedisBatchStore,
    RedisJudgeBudget,
    RedisJudgeResultCache,
    RedisLabelStore,
    RedisSessionEvidence,
)
from scripts.services.redis_cluster import RedisClusterNodes

pytestmark = pytest.mark.e2e


def _every_store_writes(url: str) -> dict[str, str]:
    """Key -> kind of every key the stores write under a new prefix."""
    client = connect(url)
    prefix = f"kinds-{uuid.uuid4().hex[:6]}"
    traces = RedisTraceStore(client, prefix=prefix, max_attempts=1)
    ids = [uuid.uuid4().hex for _ in range(4)]
    spans = [SpanRecord(t, "1" * 16, None, "s", "r", "svc", 1, 2, {}) for t in ids]
    traces.append(spans, dict.fromkeys(ids, 0.0), set(ids))
    leases = {lease.trace_id: lease.token for lease in traces.claim(time.time(), 4, 60.0)}
    traces.release_many([(ids[0], leases[ids[0]])])  # done mark
    traces.park(ids[1], time.time() + 60, "test", leases[ids[1]])  # attempts, then dead
    RedisIdempotencyStore(client, prefix=prefix, capacity=1024).mark_written_many([(ids[0], "g")])
    RedisJudgeResultCache(client, prefix=prefix).put("k", b"v")
    RedisLabelStore(client, prefix=prefix).load([LabelledQuestion("q", "Q?", frozenset({"c"}))])
    RedisJudgeBudget(client, 10, 1000, prefix=prefix).try_acquire(1, 10)
    RedisSessionEvidence(client, prefix=prefix).record_many(
        [("s", SessionTurn(ids[0], 1, (Chunk("c", "text"),)))]
    )
    RedisBatchStore(client, prefix=prefix).add_batch("b", {"x": b"y"})
    keys = {raw.decode(): key_kind(raw.decode(), prefix) for raw in client.scan_iter(f"{prefix}*")}
    client.close()
    return keys


def _check(keys: dict[str, str]) -> None:
    assert not [k for k, kind in keys.items() if kind == OTHER], keys
    # Two traces are still leased, so every kind, spans and leases included, holds a key.
    assert set(keys.values()) == {kind for kind, _ in KINDS}, sorted(set(keys.values()))


def test_every_key_of_one_server_has_a_kind(redis_url: str) -> None:
    keys = _every_store_writes(redis_url)
    _check(keys)


def test_every_key_of_a_cluster_has_a_kind(redis_cluster: RedisClusterNodes) -> None:
    keys = _every_store_writes(redis_cluster.url)
    _check(keys)
    assert any("{" in k for k in keys)
