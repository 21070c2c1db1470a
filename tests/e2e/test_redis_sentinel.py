"""The Redis stores behind Sentinel (a ``redis+sentinel://`` URL): they follow the primary
through a ``SENTINEL FAILOVER``, the retry owner waiting out the moment without a primary, and
no trace is lost or claimed twice."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.runtime.retry import Dependencies, Retrier, Retrying, redis_transient_errors
from ragtrace_consumers.stores.redis import RedisTraceStore, connect
from scripts.services import NotProvisioned, RedisSentinelSetup, start_redis_sentinel

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisSentinelSetup]:
    try:
        setup = start_redis_sentinel(tmp_path_factory.mktemp("sentinel"))
    except NotProvisioned as exc:
        pytest.fail(str(exc), pytrace=False)
    yield setup
    setup.stop()


def _span(trace_id: str) -> SpanRecord:
    return SpanRecord(trace_id, "1" * 16, None, "rag", "ragtrace", "svc", 1, 2, {})


def _replicated(setup: RedisSentinelSetup) -> bool:
    with contextlib.closing(redis.Redis(port=setup.primary_port(), decode_responses=True)) as c:
        info = c.info("replication")
    offset = int(info["master_repl_offset"])
    return all(int(v["offset"]) == offset for k, v in info.items() if k.startswith("slave") and v)


def test_the_stores_follow_the_primary_through_a_sentinel_failover(
    sentinel: RedisSentinelSetup,
) -> None:
    dependencies = Dependencies()
    retrier = Retrier("redis", redis_transient_errors(), dependencies=dependencies)
    store = Retrying(
        RedisTraceStore(connect(sentinel.url), prefix=f"s-{uuid.uuid4().hex[:8]}"), retrier
    )
    first_primary = sentinel.primary_port()
    ids = [f"{n:032x}" for n in range(1, 41)]
    written: list[str] = []

    def write() -> None:
        for trace_id in ids:
            store.append([_span(trace_id)], {trace_id: 0.0}, {trace_id})
            written.append(trace_id)
            time.sleep(0.05)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.5)
    deadline = time.monotonic() + 10
    while not _replicated(sentinel) and time.monotonic() < deadline:
        time.sleep(0.01)
    sentinel.failover()
    writer.join(60)
    assert written == ids
    assert sentinel.primary_port() != first_primary
    claimed = [lease.trace_id for lease in store.claim(time.time(), 100, 30.0)]
    assert sorted(claimed) == ids  # every trace once: none lost, none twice
    assert store.stats()["traces_created"] == len(ids)
