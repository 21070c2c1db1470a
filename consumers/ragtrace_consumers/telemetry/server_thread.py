"""An HTTP server's request loop on a daemon thread (the health server, `serve`'s /metrics)."""

from __future__ import annotations

import threading
from socketserver import BaseServer

__all__ = ["ServerThread"]


class ServerThread:
    """Runs ``server.serve_forever(poll_interval)`` on a daemon thread named ``name``.

    :meth:`start` and :meth:`stop` may be called twice; :meth:`stop` returns once the loop has
    ended. The socket stays open: closing it is the owner's part."""

    def __init__(self, server: BaseServer, name: str, *, poll_interval: float) -> None:
        self._server = server
        self._name = name
        self._poll_interval = poll_interval
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Start the loop; False when it was already running."""
        if self._thread is not None:
            return False
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(self._poll_interval,),
            name=self._name,
            daemon=True,
        )
        self._thread.start()
        return True

    def stop(self) -> None:
        """End the loop (nothing when it is not running)."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
