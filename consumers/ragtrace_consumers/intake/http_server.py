"""The embedded receiver's HTTP server and who may talk to it: a fixed worker pool, a realistic
listen backlog, per-connection read/idle timeouts, a stop that finishes the requests in progress,
and a bearer token and TLS in front of every route.

:class:`BoundedHTTPServer` is a ``socketserver`` TCP server whose accepted connections are
served by at most ``max_workers`` threads. When every worker is busy, the accept loop waits for
one (the kernel's listen queue, ``backlog`` deep, holds new connections meanwhile: no resets, no
thread per connection). The handler's ``timeout`` bounds both a stalled upload and an idle
keep-alive connection: a slow client holds a worker for at most that long.

:meth:`BoundedHTTPServer.stop` stops accepting, half-closes idle connections (their next read
sees EOF at once) and waits up to ``grace_s`` for every request being handled to finish and
answer — so nothing is acknowledged after the state behind it is closed.

With ``tls`` (a server :class:`ssl.SSLContext`, built by :func:`server_tls` from a PEM
certificate and key pair read at start, so a bad pair fails at once) each accepted connection is
wrapped in a worker, its handshake bounded by ``handshake_timeout_s``, so a client that never
finishes one holds a worker for that long, never the accept loop.

:class:`GatedRequestHandler` is the base of every handler these servers run: its
:class:`AccessPolicy` is checked once per request, before any ``do_<METHOD>`` is chosen, so every
route, present or future, is behind it. A request without ``Authorization: Bearer <token>``
(compared in constant time; ``Basic`` with the token as password is accepted too, so a browser
can prompt for it) is answered 401 and its connection closed, its body never read.
:func:`check_exposure` refuses to listen beyond loopback without a token unless the operator
said ``insecure``.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import ipaddress
import logging
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

from ragtrace.errors import RagtraceError
from ragtrace_consumers.errors import CannotListen

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_MAX_WORKERS",
    "AccessPolicy",
    "BoundedHTTPServer",
    "ExposureError",
    "GatedRequestHandler",
    "check_exposure",
    "is_loopback",
    "server_tls",
]

_SCHEME = "bearer"


class ExposureError(RagtraceError, ValueError):
    """The server would listen beyond loopback with nothing keeping strangers out, or its TLS
    pair cannot be used; the message says what to set."""


@dataclass(frozen=True)
class AccessPolicy:
    """The bearer token every request must carry (``token`` None: every request is let in)."""

    token: str | None = None

    def __post_init__(self) -> None:
        if self.token is not None and (not self.token or self.token != self.token.strip()):
            raise ExposureError("the bearer token must be non-empty, without surrounding spaces")

    def allows(self, authorization: str | None) -> bool:
        """Whether a request whose ``Authorization`` header is ``authorization`` may proceed:
        ``Bearer <token>`` (exporters, scrapers), or ``Basic`` with the token as the password
        (any user name), which a browser asks for by itself on a 401."""
        if self.token is None:
            return True
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        scheme, credentials = scheme.lower(), credentials.strip()
        given = ""
        if scheme == _SCHEME:
            given = credentials
        elif scheme == "basic":
            try:
                decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            given = decoded.partition(":")[2]
        # Constant time over the expected token, whatever was given.
        return hmac.compare_digest(given.encode(), self.token.encode())


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def check_exposure(hosts: dict[str, str], policy: AccessPolicy, *, insecure: bool) -> None:
    """Raise :class:`ExposureError` when any of ``hosts`` (what listens -> address) is beyond
    loopback while ``policy`` has no token, unless ``insecure``."""
    if policy.token is not None or insecure:
        return
    exposed = [f"{what} on {host}" for what, host in hosts.items() if not is_loopback(host)]
    if exposed:
        raise ExposureError(
            f"{', '.join(exposed)} would accept anyone who can reach it: set a bearer token "
            "(--token or RAGTRACE_SERVE_TOKEN; exporters send it as the header "
            "'Authorization: Bearer <token>'), or pass --insecure to allow it without one"
        )


def server_tls(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The server's TLS context for the PEM certificate (chain) ``cert`` and its private key
    ``key`` (None when the certificate file holds the key); None without ``cert``."""
    if cert is None:
        if key is not None:
            raise ExposureError(
                "serve.tls_key: needs serve.tls_cert (the certificate it belongs to)"
            )
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ExposureError(
            f"serve.tls_cert/tls_key: cannot use the pair {cert}"
            f"{'' if key is None else ' + ' + key}: {exc}"
        ) from None
    return context


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
        listener: str = "the HTTP server",
    ) -> None:
        """``listener`` names this server in the :class:`CannotListen` raised when ``address``
        cannot be bound."""
        if max_workers < 1 or backlog < 1:
            raise ValueError(f"max_workers and backlog must be >= 1, got {max_workers}, {backlog}")
        self.request_queue_size = backlog  # read by server_activate (listen)
        try:
            super().__init__(address, handler)
        except OSError as exc:
            raise CannotListen(listener, address[0], address[1], exc) from exc
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
