"""A private Redis Cluster on loopback: three primaries and three replicas of Debian's
``redis-server``, each node in its own directory on free ports (client and cluster bus), formed
from Python (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE) so that no ``redis-cli`` is needed.

``cluster-node-timeout`` is one second, so a killed primary's replica takes over within a few
seconds; :meth:`RedisClusterNodes.failover` promotes a replica without losing a write (CLUSTER
FAILOVER waits until the replica has caught up with its primary).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from .process import ServiceError, free_port, wait_until
from .redis import RedisServer, start_redis

__all__ = ["RedisClusterNodes", "start_redis_cluster"]

_SLOTS = 16384
NODE_TIMEOUT_MS = 1000


def _client(port: int) -> Any:  # redis-py's execute_command is untyped
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, decode_responses=True)


@dataclass
class RedisClusterNodes:
    """A running cluster; ``url`` is the plain ``redis://`` URL of its first node still
    running (any node's would do: the clients find the others)."""

    nodes: list[RedisServer]
    bus_ports: dict[int, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return next(n for n in self.nodes if n.process.running()).url

    @property
    def ports(self) -> list[int]:
        return [n.port for n in self.nodes]

    def role(self, port: int) -> str:
        """``master`` or ``slave`` as the node itself says (``""`` if it does not answer)."""
        try:
            with contextlib.closing(_client(port)) as c:
                return str(c.execute_command("ROLE")[0])
        except redis.RedisError:
            return ""

    def primaries(self) -> list[int]:
        return [p for p in self.ports if self.role(p) == "master"]

    def replica_of(self, primary: int) -> int:
        """The port of a replica following ``primary``."""
        for port in self.ports:
            if port != primary and self.role(port) == "slave":
                with contextlib.closing(_client(port)) as c:
                    info = c.info("replication")
                if int(info.get("master_port", -1)) == primary:
                    return port
        raise ServiceError(f"no replica follows the primary on port {primary}")

    def failover(self, replica: int, timeout: float = 20.0) -> None:
        """Promote ``replica`` (CLUSTER FAILOVER: no acknowledged write is lost) and wait until
        every node sees it as a primary and the cluster is ok."""
        with contextlib.closing(_client(replica)) as c:
            c.execute_command("CLUSTER FAILOVER")
        wait_until(lambda: self.role(replica) == "master", timeout, f"{replica} promoted")
        self.wait_ok(timeout)

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every live node reports ``cluster_state:ok``."""

        def ok() -> bool:
            for node in self.nodes:
                if not node.process.running():
                    continue
                try:
                    with contextlib.closing(_client(node.port)) as c:
                        if c.cluster("info").get("cluster_state") != "ok":
                            return False
                except redis.RedisError:
                    return False
            return True

        wait_until(ok, timeout, "cluster_state:ok on every node", interval=0.2)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _node_args(bus_port: int) -> list[str]:
    return [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        str(NODE_TIMEOUT_MS),
        "--cluster-port",
        str(bus_port),
        "--cluster-require-full-coverage",
        "yes",
        "--repl-diskless-sync-delay",
        "0",  # a replica syncs at once, not after 5 s
    ]


def _slot_ranges(primaries: int) -> Iterator[tuple[int, int]]:
    step = _SLOTS // primaries
    for i in range(primaries):
        yield i * step, (_SLOTS - 1 if i == primaries - 1 else (i + 1) * step - 1)


def start_redis_cluster(
    workdir: Path, primaries: int = 3, timeout: float = 60.0
) -> RedisClusterNodes:
    """Start ``primaries`` primaries and as many replicas (one each); return once every node
    reports ``cluster_state:ok`` and every replica is in sync."""
    cluster = RedisClusterNodes([])
    try:
        for i in range(2 * primaries):
            bus = free_port()
            node = start_redis(workdir / f"node{i}", extra_args=_node_args(bus))
            cluster.nodes.append(node)
            cluster.bus_ports[node.port] = bus
        _form(cluster, primaries, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _form(cluster: RedisClusterNodes, primaries: int, timeout: float) -> None:
    ports = cluster.ports
    clients = [_client(p) for p in ports]
    try:
        ids = [c.execute_command("CLUSTER MYID") for c in clients]
        for c, (lo, hi) in zip(clients, _slot_ranges(primaries), strict=False):
            c.execute_command("CLUSTER ADDSLOTSRANGE", lo, hi)
        for port in ports[1:]:
            clients[0].execute_command("CLUSTER MEET", "127.0.0.1", port, cluster.bus_ports[port])
        wait_until(
            lambda: all(len(c.cluster("nodes")) == len(ports) for c in clients),
            timeout,
            "every node to know the others",
            interval=0.1,
        )
        for replica, primary_id in zip(clients[primaries:], ids[:primaries], strict=True):
            replica.execute_command("CLUSTER REPLICATE", primary_id)
        cluster.wait_ok(timeout)

        def in_sync() -> bool:
            return all(
                c.info("replication").get("master_link_status") == "up" for c in clients[primaries:]
            )

        wait_until(in_sync, timeout, "every replica in sync", interval=0.2)
        time.sleep(0.2)  # let the last gossip about the replicas reach every node
    finally:
        for c in clients:
            c.close()
