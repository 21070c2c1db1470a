"""A private Redis server on loopback, data in its own directory: no persistence by default;
``persistent=True`` keeps an append-only file fsynced on every write, so a restart (killed or
not) on the same directory loses nothing (the chaos tests restart it under traffic)."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .process import ServiceProcess, free_port

__all__ = ["RedisServer", "start_redis"]


@dataclass
class RedisServer:
    """A running redis-server; ``url`` is ``redis://127.0.0.1:PORT/0``."""

    port: int
    process: ServiceProcess
    workdir: Path | None = None
    persistent: bool = False
    extra_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.stop()

    def restart(self, down_s: float = 0.0) -> RedisServer:
        """Stop, stay down ``down_s`` seconds, start again on the same port and directory."""
        import time

        assert self.workdir is not None
        self.stop()
        time.sleep(down_s)
        return start_redis(
            self.workdir, self.port, persistent=self.persistent, extra_args=self.extra_args
        )


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(
    workdir: Path,
    port: int | None = None,
    timeout: float = 15.0,
    *,
    persistent: bool = False,
    extra_args: Sequence[str] = (),
) -> RedisServer:
    """Start redis-server on 127.0.0.1 (a free port unless given); return once it answers PING.
    ``extra_args`` are more ``--name value`` options (a cluster node's, for instance)."""
    binary = paths.redis_server()
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [
        str(binary),
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(workdir),
        "--save",
        "",
        *(
            ["--appendonly", "yes", "--appendfsync", "always"]
            if persistent
            else ["--appendonly", "no"]
        ),
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
        "--logfile",
        "",  # log to stdout, which ServiceProcess captures
        *extra_args,
    ]
    proc = ServiceProcess("redis", argv, workdir, stop_grace_s=5.0).start()
    proc.wait_ready(lambda: _pong(port), timeout, f"PING on 127.0.0.1:{port}")
    return RedisServer(port, proc, workdir, persistent, tuple(extra_args))
