"""The :class:`~ragtrace_consumers.model.SessionEvidence` contract, the same on every store: the
in-memory one, the SQLite state file and the real Redis of the ``redis_url`` fixture."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace_consumers.model import Chunk, SessionEvidence, SessionTurn
from ragtrace_consumers.stores.memory import MemorySessionEvidence
from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_state import RedisSessionEvidence
from ragtrace_consumers.stores.sqlite_state import SqliteSessionEvidence, SqliteState

S = 1_000_000_000  # ns per second


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionEvidence]:
    if request.param == "memory":
        yield MemorySessionEvidence(max_turns=2, ttl_s=600.0)
    elif request.param == "sqlite":
        with SqliteState(tmp_path / "state.sqlite3") as state:
            yield SqliteSessionEvidence(state, max_turns=2, ttl_s=600.0)
    else:
        fixture = "redis_url" if request.param == "redis" else "redis_cluster"
        found = request.getfixturevalue(fixture)
        client = connect(found if isinstance(found, str) else found.url)
        prefix = f"test-{uuid.uuid4().hex[:10]}"
        yield RedisSessionEvidence(client, prefix=prefix, max_turns=2, ttl_s=600.0)


def _turn(n: int, ended_ns: int, text: str = "") -> SessionTurn:
    chunks = (Chunk(f"c-{n}", text or f"passage {n} ünïcode", 0.5 if n % 2 else None, n == 3),)
    return SessionTurn(f"{n:032x}", ended_ns, chunks)


def test_recent_turns_newest_first_before_the_turn_and_per_session(store: SessionEvidence) -> None:
    now = time.time_ns()
    t1, t2 = _turn(1, now - 30 * S), _turn(2, now - 20 * S)
    other = _turn(3, now - 25 * S)
    store.record_many([("s-1", t1), ("s-1", t2), ("s-2", other)])
    assert store.recent_many([("s-1", now)], 3, 600.0) == [[t2, t1]]
    assert store.recent_many([("s-1", now - 20 * S)], 3, 600.0) == [[t1]]  # strictly before
    assert store.recent_many([("s-1", now), ("s-2", now), ("s-9", now)], 1, 600.0) == [
        [t2],
        [other],
        [],
    ]


def test_the_age_bound_and_the_turn_bound(store: SessionEvidence) -> None:
    now = time.time_ns()
    old, mid, new = _turn(1, now - 100 * S), _turn(2, now - 20 * S), _turn(4, now - 10 * S)
    store.record_many([("s-1", old)])
    assert store.recent_many([("s-1", now)], 3, 50.0) == [[]]  # 100 s ago: older than 50 s
    store.record_many([("s-1", mid), ("s-1", new)])
    # The store keeps its newest max_turns (2): the oldest turn is gone whatever is asked.
    assert store.recent_many([("s-1", now)], 5, 600.0) == [[new, mid]]


def test_a_turn_recorded_twice_is_kept_once(store: SessionEvidence) -> None:
    now = time.time_ns()
    t1 = _turn(1, now - 5 * S)
    store.record_many([("s-1", t1)])
    store.record_many([("s-1", t1)])
    assert store.recent_many([("s-1", now)], 3, 600.0) == [[t1]]
    store.record_many([])
    assert store.recent_many([], 3, 600.0) == []


def test_a_long_session_id_and_text_round_trip(store: SessionEvidence) -> None:
    now = time.time_ns()
    session = "conversation/" + "x" * 2000 + " \u00e9\U0001f600"
    t1 = _turn(1, now - S, 'quote "this" — 90 days\n' * 50)
    store.record_many([(session, t1)])
    assert store.recent_many([(session, now)], 1, 600.0) == [[t1]]
