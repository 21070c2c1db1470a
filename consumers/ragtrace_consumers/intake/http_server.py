"""A bounded HTTP server for the embedded receiver: a fixed worker pool, a realistic listen
backlog, per-connection read/idle timeouts, and a stop that finishes the requests in progress.

:class:`BoundedHTTPServer` is a ``socketserver`` TCP server whose accepted connections are
served by at most ``max_workers`` threads. When every worker is busy, the accept loop waits for
one (the kernel's listen queue, ``backlog`` deep, holds new connections meanwhile: no resets, no
thread per connection). The handler's ``timeout`` bounds both a stalled upload and an idle
keep-alive connection: a slow client holds a worker for at most that long.

:meth:`BoundedHTTPServer.stop` stops accepting, half-closes idle connections (their next read
sees EOF at once) and waits up to ``grace_s`` for every request being handled to finish and
answer — so nothing is acknowledged after the state behind it is closed.

With ``tls`` (a server :class:`ssl.SSLContext`) each accepted connection is wrapped in a worker,
its handshake bounded by ``handshake_timeout_s``, so a client that never finishes one holds a
worker for that long, never the accept loop. :class:`GatedRequestHandler` is the base of every
handler these servers run: its access check (:class:`~ragtrace_consumers.intake.access.AccessPolicy`)
runs once per request before any ``do_<METHOD>`` is chosen, so every route, present or future,
is behind it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

from ragtrace_consumers.intake.access import AccessPolicy

__all__ = ["DEFAULT_BACKLOG", "DEFAULT_MAX_WORKERS", "BoundedHTTPServer", "GatedRequestHandler"]

DEFAULT_MAX_WORKERS = 64
DEFAULT_BACKLOG = 1024


class GatedRequestHandler(BaseHTTPRequestHandler):
    """A request handler whose every request passes :attr:`access` before routing: without the
    bearer token it is answered 401 (``WWW-Authenticate: Bearer``) and the connection closed,
    the body unread. Subclasses set ``access`` (None: no check) and add ``do_<METHOD>`` routes."""

    access: ClassVar[AccessPolicy | None] = None

    def checks_access_itself(self) -> bool:
        """Whether this request goes to a route that asks for the same token in its own way
        (the web view: a sign-in form and a session cookie, since a browser sends no bearer
        header); such a request passes the gate to it. None does by default."""
        return False

    def refused(self, reason: str) -> None:
        """Called once for each request the gate refuses (``reason``: ``unauthorized``), for a
        subclass to count it; does nothing by default."""

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        access = self.access
        if access is None or access.allows(self.headers.get("Authorization")):
            return True
        if self.checks_access_itself():
            return True
        self.refused("unauthorized")
        body = b"missing or wrong bearer token (Authorization: Bearer <token>)"
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="ragtrace"')
        self.send_header("WWW-Authenticate", 'Basic realm="ragtrace", charset="UTF-8"')
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True
        return False


class BoundedHTTPServer(HTTPServer):
    """``HTTPServer`` serving connections on a bounded pool (module doc)."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        backlog: int = DEFAULT_BACKLOG,
        tls: ssl.SSLContext | None = None,
        handshake_timeout_s: float = 10.0,
    ) -> None:
        if max_workers < 1 or backlog < 1:
            raise ValueError(f"max_workers and backlog must be >= 1, got {max_workers}, {backlog}")
        self.request_queue_size = backlog  # read by server_activate (listen)
        super().__init__(address, handler)
        self.max_workers = max_workers
        self._slots = threading.BoundedSemaphore(max_workers)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ragtrace-http")
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._busy = 0
        self._idle_done = threading.Condition(self._lock)
        self.stopping = False
        self.tls = tls
        self._handshake_timeout_s = handshake_timeout_s

    def process_request(self, request: Any, client_address: Any) -> None:
        self._slots.acquire()  # all workers busy: wait here; the listen queue holds the rest
        with self._lock:
            self._open.add(request)
            self._busy += 1
        try:
            self._pool.submit(self._work, request, client_address)
        except RuntimeError:  # the pool is shut down: stopping
            self._finished(request)
            self.shutdown_request(request)

    def _secure(self, raw: socket.socket) -> ssl.SSLSocket:
        """``raw`` wrapped in TLS, its handshake done (in this worker, bounded)."""
        assert self.tls is not None
        raw.settimeout(self._handshake_timeout_s)
        secure = self.tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        try:
            secure.do_handshake()
        except BaseException:
            secure.close()
            raise
        with self._lock:
            self._open.discard(raw)
            self._open.add(secure)
        return secure

    def _work(self, request: Any, client_address: Any) -> None:
        served = request
        try:
            if self.tls is not None:
                # The raw socket is detached by the wrap: the TLS one is served and closed.
                served = self._secure(request)
            self.finish_request(served, client_address)
        except Exception:  # one connection's failure never ends the server
            logging.getLogger(__name__).debug(
                "connection from %s failed", client_address, exc_info=True
            )
        finally:
            self._finished(served)
            self.shutdown_request(served)

    def _finished(self, request: Any) -> None:
        with self._lock:
            self._open.discard(request)
            self._busy -= 1
            self._idle_done.notify_all()
        self._slots.release()

    @property
    def busy(self) -> int:
        """Connections being served now."""
        with self._lock:
            return self._busy

    def stop(self, grace_s: float = 10.0) -> bool:
        """Stop accepting (call after ``shutdown()``), let every request in progress finish
        (up to ``grace_s``), close the socket. True when none was left unfinished."""
        self.stopping = True
        with self._lock:
            for conn in list(self._open):
                # An idle keep-alive connection wakes up with EOF; responses still go out.
                with contextlib.suppress(OSError):
                    # The socket's own shutdown: SSLSocket.shutdown would end TLS for the
                    # response still to be written.
                    socket.socket.shutdown(conn, socket.SHUT_RD)
            finished = self._idle_done.wait_for(lambda: self._busy == 0, timeout=grace_s)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.server_close()
        return bool(finished)
