"""Where the Redis stores put their keys: one server, or a Redis Cluster found by itself.

:func:`connect` asks the server at a plain ``redis://`` URL ``INFO cluster``; a node reporting
``cluster_enabled:1`` (Redis or Valkey) gets the cluster client, which follows MOVED/ASK and
learns the other nodes from it. Nothing else needs configuring. A ``redis+sentinel://`` URL
names Sentinels and the primary they watch instead.

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
from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

import redis
from redis.cluster import RedisCluster

__all__ = [
    "TRACE_SHARDS",
    "Client",
    "SentinelAddress",
    "connect",
    "is_cluster",
    "key_space",
    "mget",
    "parse_sentinel_url",
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
    """A client for ``url``; bytes in, bytes out. ``redis://host:port/db`` (or ``rediss://``,
    ``unix://``) gives the cluster client when that server is a cluster node;
    ``redis+sentinel://host:port,host:port/<primary name>[/db]`` (``rediss+sentinel://`` for
    TLS) asks those Sentinels for the primary and follows it through a failover. ``password``
    (``redis.password``, kept out of the URL so no library can print it) overrides a password in
    the URL. Raises :class:`redis.ConnectionError` when the server does not answer."""
    options = dict(_OPTIONS)
    if password is not None:
        options["password"] = password
        url = _without_password(url)  # redis-py lets the URL's own password win over the argument
    if urlsplit(url).scheme.endswith("+sentinel"):
        return _sentinel_primary(url, options)
    client = redis.Redis.from_url(url, **options)
    if not _cluster_enabled(client):
        return client
    client.close()
    return RedisCluster.from_url(url, **options)


@dataclass(frozen=True)
class SentinelAddress:
    """A ``redis+sentinel://`` URL taken apart."""

    sentinels: tuple[tuple[str, int], ...]
    primary: str
    db: int
    username: str | None
    password: str | None
    tls: bool
    ssl_ca_certs: str | None = None


def parse_sentinel_url(url: str) -> SentinelAddress:
    """``redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/<primary>[/<db>]``
    (``?ssl_ca_certs=<file>`` with ``rediss+sentinel://``); the port defaults to 26379. Raises
    ValueError for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis+sentinel", "rediss+sentinel"):
        raise ValueError(f"not a redis+sentinel:// URL: {parts.scheme}://")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user, _, secret = userinfo.partition(":")
    sentinels = []
    for host in hosts.split(","):
        name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        if not name or (port and not port.isdigit()):
            raise ValueError(f"a Sentinel address must be host or host:port, got {host!r}")
        sentinels.append((name, int(port or 26379)))
    path = [unquote(p) for p in parts.path.strip("/").split("/") if p]
    if not 1 <= len(path) <= 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ValueError("a Sentinel URL's path must be /<primary name>[/<db>]")
    return SentinelAddress(
        tuple(sentinels),
        path[0],
        int(path[1]) if len(path) == 2 else 0,
        unquote(user) or None,
        unquote(secret) or None,
        parts.scheme.startswith("rediss"),
        parse_qs(parts.query).get("ssl_ca_certs", [None])[-1],
    )


def _sentinel_primary(url: str, options: dict[str, Any]) -> redis.Redis:
    from redis import sentinel as sentinels  # untyped: its results are checked below

    address = parse_sentinel_url(url)
    auth = {"username": address.username, "password": address.password}
    if address.ssl_ca_certs:
        auth["ssl_ca_certs"] = address.ssl_ca_certs
    master = {**options, **{k: v for k, v in auth.items() if v is not None}}
    timeouts = {k: options[k] for k in ("socket_timeout", "socket_connect_timeout")}
    watch: Any = sentinels.Sentinel
    found = watch(list(address.sentinels), sentinel_kwargs=timeouts, **timeouts)
    client = found.master_for(address.primary, db=address.db, ssl=address.tls, **master)
    if not isinstance(client, redis.Redis):
        raise TypeError(f"Sentinel gave {type(client).__name__}, not a Redis client")
    client.ping()  # fails now, as a plain URL's INFO does, when no Sentinel knows the primary
    return client


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
