"""The write-back marks' fixed-size table on a real Redis and a real cluster: memory bounded by
its capacity whatever is written, the newest marks kept, nothing never marked reported written;
and its bytes per judged trace against the former one key per mark (``MEMORY USAGE``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_marks import MARK_BYTES, RedisIdempotencyStore

pytestmark = pytest.mark.e2e

FAMILIES = ("recall", "groundedness")


class Clock:
    def __init__(self) -> None:
        self.t = 1_900_000_000.0

    def __call__(self) -> float:
        return self.t


def _table_bytes(client: Any, prefix: str) -> int:
    spaces = [prefix, *(f"{prefix}:{{w{i}}}" for i in range(16))]
    keys = [f"{space}:written_marks:{chunk}" for space in spaces for chunk in range(4)]
    return sum(int(client.memory_usage(k, samples=0) or 0) for k in keys)


def test_the_table_is_bounded_and_keeps_the_newest_marks(any_redis_url: str) -> None:
    client = connect(any_redis_url)
    prefix, clock = f"marks-{uuid.uuid4().hex[:8]}", Clock()
    marks = RedisIdempotencyStore(client, prefix=prefix, ttl_s=3600.0, capacity=256, clock=clock)
    traces = [f"{n:032x}" for n in range(1, 2001)]
    for i in range(0, len(traces), 50):
        marks.mark_written_many([(t, "groundedness") for t in traces[i : i + 50]])
        clock.t += 1.0
    newest = marks.written_many([(t, "groundedness") for t in traces[-100:]])
    assert sum(newest) >= 95, sum(newest)  # the oldest of a full bucket goes first
    assert not any(marks.written_many([(t, "recall") for t in traces]))  # never marked
    assert 256 <= marks.capacity <= 256 * 1.25 + 16 * 8  # filled to its memory's size class
    assert marks.evicted() >= len(traces) - marks.capacity
    # 12 bytes a mark, and each string's key and headers (one string per space on a cluster).
    assert _table_bytes(client, prefix) <= marks.capacity * MARK_BYTES + 16 * 200
    clock.t += 3601.0
    assert not any(marks.written_many([(t, "groundedness") for t in traces[-100:]]))


def test_a_judged_trace_costs_ten_times_less_than_a_key_per_mark(redis_url: str) -> None:
    """40,000 judged traces, two metric families each, remembered for 7 days: the former keys
    (``SET P:written:<trace>:<metric> 1 PX``) against a table sized 15 % above them."""
    client = connect(redis_url)
    traces = [uuid.uuid4().hex for _ in range(40_000)]
    pairs = [(t, f) for t in traces for f in FAMILIES]
    ttl_ms = 7 * 86400 * 1000

    def used() -> int:
        return int(client.info("memory")["used_memory"])

    prefix = f"new-{uuid.uuid4().hex[:8]}"
    marks = RedisIdempotencyStore(client, prefix=prefix, capacity=int(len(pairs) * 1.15))
    before = used()
    for i in range(0, len(pairs), 1000):
        marks.mark_written_many(pairs[i : i + 1000])
    per_trace_new = (used() - before) / len(traces)
    assert all(marks.written_many(pairs[-2000:]))  # evictions take the oldest
    assert per_trace_new * len(traces) >= _table_bytes(client, prefix) * 0.9

    old_prefix = f"old-{uuid.uuid4().hex[:8]}"  # after: freeing keys shrinks tables later
    before = used()
    for i in range(0, len(pairs), 1000):
        pipe = client.pipeline(transaction=False)
        for t, f in pairs[i : i + 1000]:
            pipe.set(f"{old_prefix}:written:{t}:{f}", b"1", px=ttl_ms)
        pipe.execute()
    per_trace_old = (used() - before) / len(traces)
    client.delete(*[f"{old_prefix}:written:{t}:{f}" for t, f in pairs])
    print(f"bytes per judged trace: {per_trace_old:.0f} as keys, {per_trace_new:.1f} as a table")
    assert per_trace_new * 10 <= per_trace_old
    assert marks.evicted() <= len(pairs) // 100  # 87 % full: about 0.3 % evicted
