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
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

__all__ = ["DEFAULT_BACKLOG", "DEFAULT_MAX_WORKERS", "BoundedHTTPServer"]

DEFAULT_MAX_WORKERS = 64
DEFAULT_BACKLOG = 1024


class BoundedHTTPServer(HTTPServer):
    """``HTTPServer`` serving connections on a bounded pool (module doc)."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        backlog: int = DEFAULT_BACKLOG,
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

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # one connection's failure never ends the server
            logging.getLogger(__name__).debug(
                "connection from %s failed", client_address, exc_info=True
            )
        finally:
            self._finished(request)
            self.shutdown_request(request)

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
                    conn.shutdown(socket.SHUT_RD)
            finished = self._idle_done.wait_for(lambda: self._busy == 0, timeout=grace_s)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.server_close()
        return bool(finished)
