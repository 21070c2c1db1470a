"""Where the Redis stores put their keys: one server, or a Redis Cluster found by itself.

:func:`connect` asks the server at a plain ``redis://`` URL ``INFO cluster``; a node reporting
``cluster_enabled:1`` (Redis or Valkey) gets the cluster client, which follows MOVED/ASK and
learns the other nodes from it. Nothing else needs configuring.

On a cluster every script and transaction must touch keys of one hash slot. Each store therefore
builds its keys under a *key space*: on one server the prefix ``P`` itself (the key names of
earlier versions, unchanged), on a cluster ``P:{part}``, whose hash tag puts the part in one
slot. The trace store spreads traces over :data:`TRACE_SHARDS` spaces ``P:{t0}`` ..
``P:{t15}`` by a hash of the trace ID (a trace's spans, its due and lease entries and its done
mark share a slot); the other stores each have one space (``P:{labels}``, ``P:{budget}``,
``P:{batches}``), and keys that stand alone (judge cache, write-back marks, session turns) keep
their own slots and are read with one non-atomic multi-get per node.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.cluster import RedisCluster

__all__ = [
    "TRACE_SHARDS",
    "Client",
    "connect",
    "is_cluster",
    "key_space",
    "mget",
    "space_of",
    "trace_spaces",
]

#: Key spaces of the trace store on a cluster: the most primaries its work spreads over.
TRACE_SHARDS = 16

Client: TypeAlias = "redis.Redis | RedisCluster"

_OPTIONS: dict[str, Any] = {
    "socket_timeout": 10,
    "socket_connect_timeout": 5,
    "health_check_interval": 30,
}


def connect(url: str, password: str | None = None) -> Client:
    """A client for ``url`` (``redis://host:port/db``); bytes in, bytes out: the cluster
    client when that server is a cluster node. ``password`` (``redis.password``, kept out of the
    URL so no library can print it) overrides a password in the URL. Raises
    :class:`redis.ConnectionError` when the server does not answer."""
    options = dict(_OPTIONS)
    if password is not None:
        options["password"] = password
        url = _without_password(url)  # redis-py lets the URL's own password win over the argument
    client = redis.Redis.from_url(url, **options)
    if not _cluster_enabled(client):
        return client
    client.close()
    return RedisCluster.from_url(url, **options)


def _cluster_enabled(client: redis.Redis) -> bool:
    try:
        info = client.info("cluster")
    except redis.ResponseError:  # INFO refused (a proxy or an ACL): use it as one server
        return False
    return str(info.get("cluster_enabled", 0)) == "1"


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    netloc = f"{userinfo.split(':', 1)[0]}@{host}" if userinfo.split(":", 1)[0] else host
    return urlunsplit(parts._replace(netloc=netloc))


def is_cluster(client: object) -> bool:
    return isinstance(client, RedisCluster)


def key_space(client: object, prefix: str, part: str) -> str:
    """``prefix`` on one server, ``prefix:{part}`` (one hash slot) on a cluster."""
    if not is_cluster(client):
        return prefix
    if "{" in prefix or "}" in prefix:
        raise ValueError(f"on a Redis Cluster the key prefix cannot hold braces, got {prefix!r}")
    return f"{prefix}:{{{part}}}"


def trace_spaces(client: object, prefix: str) -> list[str]:
    """The trace store's key spaces: ``[prefix]`` on one server, :data:`TRACE_SHARDS` on a
    cluster."""
    if not is_cluster(client):
        return [prefix]
    return [key_space(client, prefix, f"t{i}") for i in range(TRACE_SHARDS)]


def space_of(spaces: Sequence[str], trace_id: str) -> str:
    """The key space of ``trace_id`` among ``spaces`` (stable: CRC-32 of the ID)."""
    if len(spaces) == 1:
        return spaces[0]
    return spaces[zlib.crc32(trace_id.encode("utf-8", "surrogatepass")) % len(spaces)]


def mget(client: Client, keys: Sequence[str]) -> list[Any]:
    """MGET of keys in any slots (one round trip per node on a cluster, not atomic there)."""
    if isinstance(client, RedisCluster):
        return list(client.mget_nonatomic(list(keys)))
    return list(client.mget(list(keys)))
