"""Scores into Phoenix's own views: annotations over its REST API, batched off the scoring path.

Phoenix shows annotations, not span events or log records, in its evaluation columns and
charts. :class:`PhoenixSink` delivers to its ``inner`` sink (OTLP) on the caller's thread, then
queues each trace's annotations (:mod:`~ragtrace_consumers.writeback.phoenix_annotations`:
span annotations per metric and the cell on the root span, the cell as a trace annotation, a
``gold`` document annotation per retrieved position) and returns. One thread posts everything
queued as one request per kind (``/v1/span_annotations``, ``/v1/trace_annotations``,
``/v1/document_annotations``, each ``?sync=true`` so a refusal is seen).

Phoenix stores spans asynchronously, so a trace scored right after its spans arrived is often
not there yet: Phoenix answers 404 naming the missing spans (traces). Those annotations are
held and retried quietly (0.25 s, doubling up to 2 s) for ``retry_for_s``; the rest of the
batch is posted at once. Only an annotation still refused after that, or any other failure
that outlasts it, is logged (a warning) and counted in :attr:`PhoenixSink.dropped`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragtrace_consumers.errors import WriteBackError
from ragtrace_consumers.model import ScoreSink, TraceScores
from ragtrace_consumers.writeback.phoenix_annotations import phoenix_annotations

__all__ = ["ENDPOINTS", "PhoenixSink"]

_log = logging.getLogger(__name__)

ENDPOINTS = {
    "spans": "/v1/span_annotations",
    "traces": "/v1/trace_annotations",
    "documents": "/v1/document_annotations",
}
_MISSING = re.compile(r"(?:Spans|Traces) with IDs ([0-9a-fA-F, ]+) do not exist")
_OUT_OF_BOUNDS = re.compile(r"out of bounds for span ([0-9a-fA-F]+)")
_FIRST_RETRY_S = 0.25
_MAX_RETRY_S = 2.0


@dataclass
class _Item:
    kind: str
    data: dict[str, object]
    first: float
    due: float = 0.0
    attempts: int = 0
    problem: str = field(default="")

    @property
    def key(self) -> str:
        return str(self.data.get("span_id") or self.data.get("trace_id") or "")


class PhoenixSink:
    """A :class:`~ragtrace_consumers.model.ScoreSink` annotating traces in Phoenix at
    ``base_url`` (e.g. ``http://127.0.0.1:6006``) after ``inner`` delivered (module doc)."""

    def __init__(
        self,
        base_url: str,
        inner: ScoreSink | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        recall_threshold: float | None = None,
        groundedness_threshold: float | None = None,
        retry_for_s: float = 30.0,
        batch_max: int = 1000,
    ) -> None:
        if retry_for_s <= 0 or batch_max < 1:
            raise ValueError(f"retry_for_s must be > 0 and batch_max >= 1, got {retry_for_s}")
        self._base = base_url.rstrip("/")
        self._inner = inner
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        self._timeout_s = timeout_s
        self._thresholds = (recall_threshold, groundedness_threshold)
        self._retry_for_s = retry_for_s
        self._batch_max = batch_max
        self._cond = threading.Condition()
        self._queue: list[_Item] = []
        self._posting = 0
        self._closed = False
        self.dropped = 0
        """Annotations given up on (each logged as a warning)."""
        self._thread = threading.Thread(target=self._run, name="ragtrace-phoenix", daemon=True)
        self._thread.start()

    # --- the scoring side ---------------------------------------------------------------------
    def write(self, scores: TraceScores) -> None:
        (error,) = self.write_many([scores])
        if error is not None:
            raise error

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        """``inner``'s outcome per item; the annotations of each delivered item are queued."""
        out: list[WriteBackError | None] = (
            self._inner.write_many(batch) if self._inner is not None else [None] * len(batch)
        )
        recall_t, ground_t = self._thresholds
        now = time.monotonic()
        items: list[_Item] = []
        for scores, error in zip(batch, out, strict=True):
            if error is not None:
                continue
            a = phoenix_annotations(
                scores, recall_threshold=recall_t, groundedness_threshold=ground_t
            )
            for kind, data in (
                ("spans", a.spans),
                ("traces", a.traces),
                ("documents", a.documents),
            ):
                items += [_Item(kind, d, now) for d in data]
        if items:
            with self._cond:
                self._queue += items
                self._cond.notify_all()
        return out

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued annotation was posted or given up; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._queue or self._posting:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
        return True

    def shutdown(self) -> None:
        self.flush(self._retry_for_s)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=self._timeout_s + 1)
        if self._inner is not None:
            self._inner.shutdown()

    # --- the posting thread -------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    now = time.monotonic()
                    if any(i.due <= now for i in self._queue):
                        break
                    nxt = min((i.due for i in self._queue), default=now + 1.0)
                    self._cond.wait(max(0.01, nxt - now))
                if self._closed:
                    return
                now = time.monotonic()
                due = [i for i in self._queue if i.due <= now]
                self._queue = [i for i in self._queue if i.due > now]
                self._posting += 1
            try:
                for kind in ENDPOINTS:
                    of_kind = [i for i in due if i.kind == kind]
                    for start in range(0, len(of_kind), self._batch_max):
                        self._post(kind, of_kind[start : start + self._batch_max])
            except Exception:  # noqa: BLE001 - the posting thread must survive anything
                _log.exception("posting annotations to Phoenix failed")
            finally:
                with self._cond:
                    self._posting -= 1
                    self._cond.notify_all()

    def _post(self, kind: str, items: list[_Item]) -> None:
        while items:
            status, detail = self._request(kind, [i.data for i in items])
            if status == 200:
                return
            problem = f"HTTP {status}: {detail}" if status else detail
            if status == 422 and kind == "documents":
                bad = _ids(_OUT_OF_BOUNDS, detail)
                rest = [i for i in items if i.key not in bad]
                if len(rest) < len(items):
                    # a retriever span without OpenInference documents: nothing to annotate
                    _log.info("Phoenix has no documents on span %s; not annotated", ", ".join(bad))
                    items = rest
                    continue
            missing = _ids(_MISSING, detail) if status == 404 else set()
            held = [i for i in items if i.key in missing]
            if not held:  # not a not-yet-stored span: the whole request waits
                self._retry(items, problem)
                return
            self._retry(held, problem)  # the rest goes now
            items = [i for i in items if i.key not in missing]

    def _retry(self, items: list[_Item], problem: str) -> None:
        now = time.monotonic()
        again: list[_Item] = []
        for item in items:
            if now - item.first >= self._retry_for_s:
                self.dropped += 1
                _log.warning(
                    "Phoenix %s annotation %r on %s not stored after %.0f s: %s",
                    item.kind,
                    item.data.get("name"),
                    item.key,
                    now - item.first,
                    problem[:300],
                )
                continue
            item.attempts += 1
            item.due = now + min(_MAX_RETRY_S, _FIRST_RETRY_S * 2 ** (item.attempts - 1))
            again.append(item)
        if again:
            _log.debug("Phoenix: %d annotations retried soon (%s)", len(again), problem[:200])
            with self._cond:
                self._queue += again
                self._cond.notify_all()

    def _request(self, kind: str, data: list[dict[str, object]]) -> tuple[int, str]:
        request = urllib.request.Request(
            f"{self._base}{ENDPOINTS[kind]}?sync=true",
            data=json.dumps({"data": data}).encode(),
            headers=self._headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                response.read()
                return 200, ""
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()[:2000].decode(errors="replace")
        except (urllib.error.URLError, OSError) as exc:
            return 0, f"not delivered: {exc}"


def _ids(pattern: re.Pattern[str], detail: str) -> set[str]:
    found = pattern.search(detail)
    if found is None:
        return set()
    return {x.strip().lower() for x in found.group(1).split(",") if x.strip()}
