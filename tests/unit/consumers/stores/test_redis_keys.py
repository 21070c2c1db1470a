"""Connecting to Redis (one server, a cluster found by itself, Sentinel) and the key spaces that
keep every script on one hash slot. The real servers: tests/e2e/test_stores.py and friends."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from ragtrace_consumers.stores import redis_keys
from ragtrace_consumers.stores.redis_keys import (
    TRACE_SHARDS,
    key_space,
    parse_sentinel_url,
    space_of,
    trace_spaces,
)


def _cluster_client() -> Any:
    return object.__new__(RedisCluster)  # an instance for isinstance, never connected


class _Probe:
    def __init__(self, info: dict[str, object] | Exception) -> None:
        self._info = info
        self.closed = False

    def info(self, section: str) -> dict[str, object]:
        assert section == "cluster"
        if isinstance(self._info, Exception):
            raise self._info
        return self._info

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("info", "cluster"),
    [
        ({"cluster_enabled": 1}, True),
        ({"cluster_enabled": 0}, False),
        ({}, False),
        (redis.ResponseError("unknown command"), False),
    ],
)
def test_connect_uses_the_cluster_client_only_on_a_cluster_node(
    monkeypatch: pytest.MonkeyPatch, info: dict[str, object] | Exception, cluster: bool
) -> None:
    probe = _Probe(info)
    made: dict[str, Any] = {}

    def plain(url: str, **options: Any) -> _Probe:
        made["plain"] = (url, options)
        return probe

    def clustered(url: str, **options: Any) -> str:
        made["cluster"] = (url, options)
        return "cluster client"

    monkeypatch.setattr(redis.Redis, "from_url", plain)
    monkeypatch.setattr(RedisCluster, "from_url", clustered)
    got: object = redis_keys.connect("redis://u:inurl@node-3:6379/0", "secret")
    assert (got == "cluster client") is cluster
    assert probe.closed is cluster
    url, options = made["cluster" if cluster else "plain"]
    assert url == "redis://u@node-3:6379/0"  # the argument's password wins, out of the URL
    assert options["password"] == "secret"


def test_a_connection_refused_while_probing_is_raised() -> None:
    with pytest.raises(redis.ConnectionError):
        redis_keys.connect("redis://127.0.0.1:1/0")


def test_one_server_keeps_the_prefix_and_one_trace_space() -> None:
    plain = object.__new__(redis.Redis)
    assert key_space(plain, "rt", "labels") == "rt"
    assert trace_spaces(plain, "rt") == ["rt"]
    assert space_of(["rt"], "a" * 32) == "rt"


def test_a_cluster_tags_each_space_and_spreads_traces_over_sixteen() -> None:
    client = _cluster_client()
    assert key_space(client, "rt", "labels") == "rt:{labels}"
    spaces = trace_spaces(client, "rt")
    assert spaces == [f"rt:{{t{i}}}" for i in range(TRACE_SHARDS)]
    # Every key built under a space hashes to that space's slot.
    assert key_slot(b"rt:{t3}:due") == key_slot(b"rt:{t3}:trace:abc:spans")
    ids = [f"{n:032x}" for n in range(4000)]
    counts = Counter(space_of(spaces, t) for t in ids)
    assert set(counts) == set(spaces) and min(counts.values()) > 150  # ~250 each
    assert [space_of(spaces, t) for t in ids[:50]] == [space_of(spaces, t) for t in ids[:50]]


def test_a_prefix_with_braces_is_refused_on_a_cluster() -> None:
    with pytest.raises(ValueError, match="braces"):
        key_space(_cluster_client(), "rt{x}", "labels")


def test_a_sentinel_url_is_taken_apart() -> None:
    got = parse_sentinel_url("redis+sentinel://app:p%40ss@s1:26380,s2/my%20primary/3")
    assert got.sentinels == (("s1", 26380), ("s2", 26379))
    assert (got.primary, got.db, got.username, got.password, got.tls) == (
        "my primary",
        3,
        "app",
        "p@ss",
        False,
    )
    tls = parse_sentinel_url("rediss+sentinel://s1/m?ssl_ca_certs=/etc/ca.crt")
    assert (tls.db, tls.tls, tls.ssl_ca_certs, tls.username) == (0, True, "/etc/ca.crt", None)


@pytest.mark.parametrize(
    "url",
    [
        "redis://s1/m",
        "redis+sentinel://s1",
        "redis+sentinel://s1/m/x",
        "redis+sentinel://s1/m/0/extra",
        "redis+sentinel://s1:port/m",
        "redis+sentinel://,s2/m",
    ],
)
def test_a_bad_sentinel_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        parse_sentinel_url(url)
