"""Liveness and readiness endpoints of one ``ragtrace consume`` replica, for Kubernetes probes.

A small stdlib HTTP server (``ThreadingHTTPServer``) answering ``GET``:

* ``/livez`` — 200 while the consume loop has made progress: its :class:`Heartbeat` was beaten
  within ``liveness_timeout_s`` (the loop beats it on every Kafka poll, several times a second
  when healthy). 503 once it has not, i.e. the loop is stuck: the container should be restarted.
  While the replica drains after SIGTERM the loop stops polling; ``/livez`` then stays 200.
* ``/metrics`` — the replica's metrics in the Prometheus text format, when the server was given
  a ``metrics`` exposition (``ragtrace consume`` always gives it one): Prometheus scrapes every
  replica itself, so a replica's series end with it.
* ``/readyz`` — 200 when every readiness check passes: Redis answers ``PING``, and the Kafka
  consumer has partitions assigned or at least an open broker connection (a replica beyond the
  topic's partition count is idle but ready). 503 otherwise, and while draining.

Each answer is a small JSON object: ``{"status": "ok" | "failing", "checks": {name: detail}}``.
Checks run on the request's thread and never touch the Kafka consumer (kafka-python's client is
not thread-safe): :class:`KafkaProgress` records the consumer's state on the consume thread, as
it polls. Redis is asked directly (its client is thread-safe, its timeouts bound the check).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragtrace_consumers.errors import CannotListen
from ragtrace_consumers.telemetry.server_thread import ServerThread

__all__ = [
    "HEALTH_LISTENER",
    "Check",
    "HealthServer",
    "Heartbeat",
    "KafkaProgress",
    "redis_check",
]

_log = logging.getLogger(__name__)

HEALTH_LISTENER = "the health endpoint"
"""How a bind failure (:class:`~ragtrace_consumers.errors.CannotListen`) names this server."""

Check = Callable[[], tuple[bool, str]]
"""A readiness check: ``(ok, detail)``; an exception counts as failing with its repr."""

_OBSERVE_EVERY_S = 1.0


class Heartbeat:
    """When the consume loop last made progress. :meth:`beat` is cheap and thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last = clock()
        self.beats = 0

    def beat(self) -> None:
        """Record progress now (call once per loop iteration)."""
        self._last = self._clock()
        self.beats += 1

    def age(self) -> float:
        """Seconds since the last beat (or since creation, before the first)."""
        return max(0.0, self._clock() - self._last)


class KafkaProgress:
    """A ``KafkaConsumer`` as the runner sees it, plus health bookkeeping: every ``poll`` beats
    the heartbeat and, at most once a second, records the consumer's partition assignment and
    open broker connections (on the polling thread). Every other attribute is the consumer's."""

    def __init__(
        self, consumer: Any, heartbeat: Heartbeat, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._consumer = consumer
        self._heartbeat = heartbeat
        self._clock = clock
        self._observed_at: float | None = None
        self.assigned: int | None = None
        """Partitions assigned at the last observation (None: not observed yet)."""
        self.connections: int | None = None
        """Open broker connections at the last observation (None: unknown)."""

    def poll(self, *args: Any, **kwargs: Any) -> Any:
        records = self._consumer.poll(*args, **kwargs)
        self._heartbeat.beat()
        now = self._clock()
        if self._observed_at is None or now - self._observed_at >= _OBSERVE_EVERY_S:
            self._observed_at = now
            self._observe()
        return records

    def _observe(self) -> None:
        try:
            self.assigned = len(self._consumer.assignment() or ())
        except Exception:  # noqa: BLE001 - bookkeeping must never break the consume loop
            self.assigned = None
        try:  # kafka-python's metrics are best effort ("unstable interface")
            count = (
                (self._consumer.metrics() or {}).get("consumer-metrics", {}).get("connection-count")
            )
            self.connections = None if count is None else int(count)
        except Exception:  # noqa: BLE001
            self.connections = None

    def check(self) -> tuple[bool, str]:
        """Readiness of the Kafka side, from the last observation."""
        if self.assigned is None:
            return False, "not polled yet"
        if self.assigned:
            return True, f"partitions assigned: {self.assigned}"
        if self.connections:
            return True, f"no partitions assigned; broker connections open: {self.connections}"
        return False, "no partitions assigned and no broker connection"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


def redis_check(client: Any) -> Check:
    """Readiness of Redis: ``PING`` answered."""

    def check() -> tuple[bool, str]:
        client.ping()
        return True, "ping ok"

    return check


class HealthServer:
    """Serves ``/livez`` and ``/readyz`` (see the module doc) on ``host:port`` (0: a free port).

    The socket is bound at construction, so a busy port fails before anything runs (with
    :class:`~ragtrace_consumers.errors.CannotListen`); :meth:`start`
    serves on a daemon thread; :meth:`stop` closes it. ``draining()`` returning True marks a
    replica shutting down: live, not ready.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        heartbeat: Heartbeat,
        liveness_timeout_s: float,
        readiness: Mapping[str, Check] | None = None,
        draining: Callable[[], bool] = lambda: False,
        metrics: Callable[[], tuple[bytes, str]] | None = None,
    ) -> None:
        if not liveness_timeout_s > 0:
            raise ValueError(f"liveness_timeout_s must be > 0, got {liveness_timeout_s!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be within 0..65535, got {port}")
        self.heartbeat = heartbeat
        self.liveness_timeout_s = liveness_timeout_s
        self.readiness = dict(readiness or {})
        self.draining = draining
        self.metrics = metrics
        """``metrics()`` returns ``(body, content type)`` of GET /metrics; None: no such path."""
        try:
            self._server = ThreadingHTTPServer((host, port), _handler(self))
        except OSError as exc:
            raise CannotListen(HEALTH_LISTENER, host, port, exc) from exc
        self._server.daemon_threads = True
        self._loop = ServerThread(self._server, "ragtrace-health", poll_interval=0.1)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        return f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{self.port}"

    def start(self) -> HealthServer:
        if self._loop.start():
            _log.info("health endpoints on %s/livez and /readyz", self.url)
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; safe to call twice or without :meth:`start`."""
        self._loop.stop()
        self._server.server_close()

    # --- the answers ----------------------------------------------------------------------
    def liveness(self) -> tuple[bool, dict[str, object]]:
        age = self.heartbeat.age()
        if self.draining():
            return True, {"status": "ok", "checks": {"loop": "draining"}}
        ok = age <= self.liveness_timeout_s
        detail = f"last progress {age:.1f}s ago" + (
            "" if ok else f" (more than {self.liveness_timeout_s:g}s: stuck)"
        )
        return ok, {"status": "ok" if ok else "failing", "checks": {"loop": detail}}

    def ready(self) -> tuple[bool, dict[str, object]]:
        if self.draining():
            return False, {"status": "failing", "checks": {"replica": "draining"}}
        checks: dict[str, str] = {}
        ok = True
        for name, check in self.readiness.items():
            try:
                passed, detail = check()
            except Exception as exc:  # noqa: BLE001 - a failing dependency is the answer
                passed, detail = False, repr(exc)
            ok = ok and passed
            checks[name] = detail
        return ok, {"status": "ok" if ok else "failing", "checks": checks}


def _handler(health: HealthServer) -> type[BaseHTTPRequestHandler]:
    routes = {"/livez": health.liveness, "/readyz": health.ready}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics" and health.metrics is not None:
                exposition, content_type = health.metrics()
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(exposition)))
                self.end_headers()
                self.wfile.write(exposition)
                return
            route = routes.get(path)
            if route is None:
                self._reply(404, {"status": "not found", "paths": sorted(routes)})
                return
            ok, body = route()
            self._reply(200 if ok else 503, body)

        def _reply(self, code: int, body: Mapping[str, object]) -> None:
            data = json.dumps(body, sort_keys=True).encode() + b"\n"
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            _log.debug("health: " + format, *args)

    return Handler
