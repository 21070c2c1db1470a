"""``GET /metrics`` of ``ragtrace serve``: a Prometheus registry served behind the same gate
(bearer token) and TLS as the OTLP receiver.

One :class:`~ragtrace_consumers.intake.http_server.BoundedHTTPServer` with a small worker pool;
``GET /metrics`` answers the registry in the Prometheus text format (``HEAD`` too), any other path
404 — every request, whatever its path, first passes the access check.
"""

from __future__ import annotations

import ssl

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from ragtrace_consumers.intake.http_server import (
    AccessPolicy,
    BoundedHTTPServer,
    GatedRequestHandler,
)
from ragtrace_consumers.telemetry.server_thread import ServerThread

__all__ = ["METRICS_LISTENER", "METRICS_PATH", "MetricsEndpoint"]

METRICS_PATH = "/metrics"
METRICS_LISTENER = "the metrics endpoint"
"""How a bind failure (:class:`~ragtrace_consumers.errors.CannotListen`) names this endpoint."""
_WORKERS = 4


class MetricsEndpoint:
    """Serves ``registry`` on ``host:port`` (0: a free port); :meth:`start`, then :meth:`stop`."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        *,
        access: AccessPolicy | None = None,
        tls: ssl.SSLContext | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        class Handler(GatedRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "ragtrace-metrics"
            timeout = timeout_s

            def do_GET(self) -> None:
                self._answer(body=True)

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def _answer(self, *, body: bool) -> None:
                if self.path.split("?", 1)[0] == METRICS_PATH:
                    status, ctype, payload = 200, CONTENT_TYPE_LATEST, generate_latest(registry)
                else:
                    status, ctype, payload = 404, "text/plain", b"not found: GET /metrics"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if body:
                    self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass  # scrapes are not worth a log line each

        Handler.access = access
        self._server = BoundedHTTPServer(
            (host, port), Handler, max_workers=_WORKERS, tls=tls, listener=METRICS_LISTENER
        )
        self._loop = ServerThread(self._server, "ragtrace-metrics-http", poll_interval=0.05)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        if isinstance(host, bytes):  # the socket API's type; a TCP server's host is text
            host = host.decode()
        scheme = "https" if self._server.tls is not None else "http"
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{port}{METRICS_PATH}"

    def start(self) -> MetricsEndpoint:
        self._loop.start()
        return self

    def stop(self) -> None:
        self._loop.stop()
        self._server.stop(grace_s=2.0)
