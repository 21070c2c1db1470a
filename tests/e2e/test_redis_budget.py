"""The Redis judge budget keeps running sums of its grants: a deployment upgraded from the
version that kept only the grants (and summed them on every check) takes them over correctly."""

from __future__ import annotations

import time
import uuid

import pytest
from redis.crc import key_slot

from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_state import RedisJudgeBudget
from scripts.services import RedisClusterNodes
from tests.e2e.redis_text import text

pytestmark = pytest.mark.e2e


def test_redis_budget_takes_over_grants_kept_by_an_older_version(redis_url: str) -> None:
    """Grants recorded before the running sums existed are counted once, then expire."""
    client = connect(redis_url)
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    now = float(client.time()[0])
    client.zadd(f"{prefix}:budget", {"a:2:300": now, "b:1:100": now})  # 3 calls, 400 tokens
    budget = RedisJudgeBudget(client, 4, 1000, prefix=prefix, window_s=1.5)
    assert budget.try_acquire(2, 0) is False  # 3 + 2 > 4
    assert budget.try_acquire(1, 600) is True  # 4 calls, 1000 tokens
    assert budget.try_acquire(0, 1) is False
    time.sleep(1.6)
    assert budget.try_acquire(4, 1000) is True  # everything before expired and was subtracted
    sums = {text(k): int(v) for k, v in client.hgetall(f"{prefix}:budget:sums").items()}
    assert sums == {"calls": 4, "tokens": 1000}


def test_on_a_cluster_the_budget_keys_share_one_slot(redis_cluster: RedisClusterNodes) -> None:
    """The budget script's two keys are hash-tagged into one slot (a cluster refuses a script
    over two slots); concurrent clients on different nodes' URLs share the one budget."""
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    first, second = (
        RedisJudgeBudget(connect(f"redis://127.0.0.1:{port}/0"), 3, 10_000, prefix=prefix)
        for port in redis_cluster.ports[:2]
    )
    assert [first.try_acquire(1, 1), second.try_acquire(1, 1), first.try_acquire(1, 1)] == [
        True,
        True,
        True,
    ]
    assert second.try_acquire(1, 1) is False
    client = connect(redis_cluster.url)
    assert key_slot(f"{prefix}:{{budget}}:budget".encode()) == key_slot(
        f"{prefix}:{{budget}}:budget:sums".encode()
    )
    assert client.zcard(f"{prefix}:{{budget}}:budget") == 3
