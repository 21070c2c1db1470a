"""A private Redis Sentinel setup on loopback: a primary, one replica and one Sentinel watching
them (quorum 1), from Debian's ``redis-server`` (``--sentinel``); ``url`` is the
``redis+sentinel://`` URL the consumers take."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from . import paths
from .process import ServiceProcess, free_port, wait_until
from .redis import RedisServer, _pong, start_redis

__all__ = ["PRIMARY_NAME", "RedisSentinelSetup", "start_redis_sentinel"]

PRIMARY_NAME = "ragtrace-primary"


def _client(port: int) -> Any:  # redis-py's execute_command is untyped
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, decode_responses=True)


@dataclass
class RedisSentinelSetup:
    primary: RedisServer
    replica: RedisServer
    sentinel_port: int
    sentinel: ServiceProcess

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.sentinel_port}/{PRIMARY_NAME}/0"

    def primary_port(self) -> int:
        with contextlib.closing(_client(self.sentinel_port)) as c:
            _, port = c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", PRIMARY_NAME)
        return int(port)

    def failover(self, timeout: float = 30.0) -> None:
        """``SENTINEL FAILOVER``; returns once the replica is the primary Sentinel names and
        it accepts writes."""
        before = self.primary_port()
        with contextlib.closing(_client(self.sentinel_port)) as c:
            c.execute_command("SENTINEL", "FAILOVER", PRIMARY_NAME)

        def moved() -> bool:
            port = self.primary_port()
            if port == before:
                return False
            with contextlib.closing(_client(port)) as c:
                return bool(c.execute_command("ROLE")[0] == "master")

        wait_until(moved, timeout, "the Sentinel failover", interval=0.2)

    def stop(self) -> None:
        self.sentinel.stop()
        self.replica.stop()
        self.primary.stop()


def start_redis_sentinel(workdir: Path, timeout: float = 30.0) -> RedisSentinelSetup:
    """Start the primary, its replica and the Sentinel; return once the Sentinel knows the
    replica (it can fail over)."""
    primary = start_redis(workdir / "primary", extra_args=["--repl-diskless-sync-delay", "0"])
    started: list[Any] = [primary]
    try:
        replica = start_redis(
            workdir / "replica",
            extra_args=["--replicaof", "127.0.0.1", str(primary.port)],
        )
        started.append(replica)
        port = free_port()
        sdir = workdir / "sentinel"
        sdir.mkdir(parents=True, exist_ok=True)
        conf = sdir / "sentinel.conf"  # Sentinel rewrites its own configuration file
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {sdir}\n"
            f"sentinel monitor {PRIMARY_NAME} 127.0.0.1 {primary.port} 1\n"
            f"sentinel down-after-milliseconds {PRIMARY_NAME} 1000\n"
            f"sentinel failover-timeout {PRIMARY_NAME} 5000\n"
        )
        argv = [str(paths.redis_server()), str(conf), "--sentinel"]
        sentinel = ServiceProcess("redis-sentinel", argv, sdir, stop_grace_s=5.0).start()
        started.append(sentinel)
        sentinel.wait_ready(lambda: _pong(port), timeout, f"PING on 127.0.0.1:{port}")
        setup = RedisSentinelSetup(primary, replica, port, sentinel)

        def knows_replica() -> bool:
            with contextlib.closing(_client(port)) as c:
                return bool(c.execute_command("SENTINEL", "REPLICAS", PRIMARY_NAME))

        wait_until(knows_replica, timeout, "the Sentinel to find the replica", interval=0.2)
        return setup
    except BaseException:
        for service in reversed(started):
            service.stop()
        raise
