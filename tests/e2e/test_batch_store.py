"""The batch judge mode's store, in process memory and in a real Redis: what one poller wrote,
another (a restarted replica) reads; finishing a batch forgets it and its requests."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ragtrace_consumers.stores.memory import MemoryBatchStore
from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_state import RedisBatchStore


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def stores(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """Two handles on one store (two replicas, or one before and after a restart)."""
    if request.param == "memory":
        store = MemoryBatchStore()
        return store, store
    url = (
        request.getfixturevalue("redis_url")
        if request.param == "redis"
        else request.getfixturevalue("redis_cluster").url
    )
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    return RedisBatchStore(connect(url), prefix=prefix), RedisBatchStore(
        connect(url), prefix=prefix
    )


def test_batches_survive_a_restart_and_finish_cleanly(stores: tuple[Any, Any]) -> None:
    first, restarted = stores
    first.add_batch("msgbatch_1", {"a" * 64: b'{"key": "k1"}', "b" * 64: b'{"key": "k2"}'})
    first.add_batch("msgbatch_2", {"c" * 64: b'{"key": "k3"}'})
    assert restarted.pending_batches() == ["msgbatch_1", "msgbatch_2"]
    assert restarted.batch_items("msgbatch_1") == {
        "a" * 64: b'{"key": "k1"}',
        "b" * 64: b'{"key": "k2"}',
    }
    assert restarted.submitted(["a" * 64, "c" * 64, "d" * 64]) == [True, True, False]
    restarted.finish_batch("msgbatch_1")
    assert first.pending_batches() == ["msgbatch_2"]
    assert first.batch_items("msgbatch_1") == {}
    assert first.submitted(["a" * 64, "b" * 64, "c" * 64]) == [False, False, True]
    assert first.submitted([]) == []
