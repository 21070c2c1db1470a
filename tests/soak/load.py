"""The soak's load: complete RAG traces posted over OTLP/HTTP at a steady rate.

:class:`SteadyLoad` posts ``per_request`` traces (:func:`tests.e2e.chaos.trace_request`: every
answer unique, so no judge-cache hit) every ``per_request / rate`` seconds and behaves like an
OTLP exporter: a request refused (connection refused or reset, a timeout, 5xx) is sent again,
with the same traces, until it is answered 2xx. A trace is *accepted* when its request got 2xx;
``accepted`` maps it to the time (``time.monotonic()``). Time lost to retries is caught up (the
schedule is by the clock, not by pauses), so the offered rate stays the same through a fault.

Raw OTLP rather than the SDK: the SDK's exporter drops a batch after its retry deadline
without telling the application, so "what the app finished" could not be told from "what was
lost in the pipeline"; this sender knows exactly which traces the collector took.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

from tests.e2e.chaos import trace_request

__all__ = ["SteadyLoad"]


class SteadyLoad(threading.Thread):
    """Steady traffic; see the module docstring."""

    def __init__(self, url: str, rate: float, *, per_request: int = 5, salt: int = 0) -> None:
        super().__init__(daemon=True, name="soak-load")
        if rate <= 0 or per_request < 1:
            raise ValueError(f"rate must be > 0 and per_request >= 1, got {rate}, {per_request}")
        self.url = url
        self.interval_s = per_request / rate
        self.per_request = per_request
        self.salt = salt
        self.accepted: dict[str, float] = {}
        self.refused = 0
        self._next = 1
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        due = time.monotonic()
        while not self._halt.is_set():
            body, ids = trace_request(self._next, self.per_request, self.salt)
            self._next += self.per_request
            sent = False
            while not sent and not self._halt.is_set():
                sent = self._post(body)
                if not sent:
                    with self._lock:
                        self.refused += 1
                    time.sleep(0.1)
            if sent:
                now = time.monotonic()
                with self._lock:
                    self.accepted.update(dict.fromkeys(ids, now))
            due += self.interval_s
            self._halt.wait(max(0.0, due - time.monotonic()))

    def _post(self, body: bytes) -> bool:
        req = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/x-protobuf"}
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self.accepted)

    def stop(self) -> dict[str, float]:
        """Stop sending; the accepted traces."""
        self._halt.set()
        self.join(30)
        return self.snapshot()
