"""The Redis judge cache's own storage (the behaviour every cache shares is
tests/e2e/test_stores.py): entries are stored deflated, and entries written before that read
back unchanged."""

from __future__ import annotations

import json
import uuid

import pytest

from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_state import RedisJudgeResultCache

pytestmark = pytest.mark.e2e


def test_redis_judge_cache_stores_entries_deflated_and_reads_earlier_ones(redis_url: str) -> None:
    client, prefix = connect(redis_url), f"test-{uuid.uuid4().hex[:10]}"
    cache = RedisJudgeResultCache(client, prefix=prefix)
    entry = json.dumps({"result": {"claims": [{"claim": "c", "entailed": True}] * 40}}).encode()
    cache.put("new", entry)
    stored = client.get(f"{prefix}:judge:new")
    assert stored is not None and len(stored) < len(entry) / 4
    client.set(f"{prefix}:judge:old", entry)  # as written before entries were deflated
    assert cache.get_many(["new", "old"]) == [entry, entry]
