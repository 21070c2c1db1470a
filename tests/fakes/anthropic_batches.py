"""The Message Batches endpoints of the fake Anthropic API, at the wire level.

``POST /v1/messages/batches`` creates a batch of ``{"custom_id", "params"}`` requests; ``GET
/v1/messages/batches/{id}`` reports it ``in_progress`` until ``processing_s`` seconds have passed,
then ``ended`` with a ``results_url``; ``GET /v1/messages/batches/{id}/results`` streams one JSON
line per request: ``{"custom_id", "result": {"type": "succeeded", "message": …}}`` (or
``errored``), in an order different from the submission's, as the real API does not promise one.
Each message is what ``POST /v1/messages`` would have answered for its params (the fake's
scripted replies, then its responder, with usage filled in the same way), so a batch costs the
same tokens as the realtime calls; only the price differs.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchEndpoints"]

_ids = itertools.count(1)
_ROUTE = re.compile(r"^/v1/messages/batches(?:/(?P<id>[A-Za-z0-9_]+)(?P<results>/results)?)?$")


@dataclass
class _Batch:
    id: str
    requests: list[dict[str, Any]]
    created: float
    results: list[dict[str, Any]] = field(default_factory=list)


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat().replace("+00:00", "Z")


class BatchEndpoints:
    """Batch state of one fake server. ``answer(params) -> (status, body)`` is the fake's own
    Messages endpoint for one request's params."""

    def __init__(
        self, answer: Callable[[Mapping[str, Any]], tuple[int, Any]], *, processing_s: float = 0.0
    ) -> None:
        self._answer = answer
        self.processing_s = processing_s
        self._lock = threading.Lock()
        self.batches: dict[str, _Batch] = {}

    @staticmethod
    def handles(path: str) -> bool:
        return _ROUTE.match(path.split("?")[0]) is not None

    def handle(self, method: str, path: str, body: Any, base_url: str) -> tuple[int, bytes, str]:
        """(status, payload, content type) for one request on a batches route."""
        m = _ROUTE.match(path.split("?")[0])
        assert m is not None
        batch_id, results = m.group("id"), m.group("results")
        if method == "POST" and batch_id is None:
            return self._create(body, base_url)
        if method != "GET" or batch_id is None:
            return _error(405, "invalid_request_error", f"fake: {method} {path} not supported")
        with self._lock:
            batch = self.batches.get(batch_id)
        if batch is None:
            return _error(404, "not_found_error", f"fake: no batch {batch_id}")
        if results is None:
            return 200, json.dumps(self._describe(batch, base_url)).encode(), "application/json"
        if not self._ended(batch):
            return _error(400, "invalid_request_error", f"fake: batch {batch_id} not ended")
        lines = [json.dumps(r) for r in self._results(batch)]
        return 200, ("\n".join(lines) + "\n").encode(), "application/x-jsonl"

    def _create(self, body: Any, base_url: str) -> tuple[int, bytes, str]:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "fake: requests must be a non-empty list")
        seen: set[str] = set()
        for item in requests:
            cid = item.get("custom_id") if isinstance(item, dict) else None
            if (
                not isinstance(cid, str)
                or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cid)
                or cid in seen
                or not isinstance(item.get("params"), dict)
            ):
                return _error(400, "invalid_request_error", f"fake: bad batch request {item!r}")
            seen.add(cid)
        batch = _Batch(f"msgbatch_fake{next(_ids):06d}", requests, time.time())
        with self._lock:
            self.batches[batch.id] = batch
        return 200, json.dumps(self._describe(batch, base_url)).encode(), "application/json"

    def _ended(self, batch: _Batch) -> bool:
        return time.time() - batch.created >= self.processing_s

    def _results(self, batch: _Batch) -> list[dict[str, Any]]:
        with self._lock:
            if not batch.results:
                for item in reversed(batch.requests):  # any order: not the submission's
                    status, message = self._answer(item["params"])
                    if (
                        status == 200
                        and isinstance(message, dict)
                        and message.get("type") == "message"
                    ):
                        result: dict[str, Any] = {"type": "succeeded", "message": message}
                    else:
                        error = message.get("error") if isinstance(message, dict) else None
                        result = {
                            "type": "errored",
                            "error": {
                                "type": "error",
                                "error": error
                                or {"type": "api_error", "message": f"fake: HTTP {status}"},
                            },
                        }
                    batch.results.append({"custom_id": item["custom_id"], "result": result})
            return list(batch.results)

    def _describe(self, batch: _Batch, base_url: str) -> dict[str, Any]:
        ended = self._ended(batch)
        n = len(batch.requests)
        counts = {
            "processing": 0 if ended else n,
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        if ended:
            for r in self._results(batch):
                counts[r["result"]["type"]] += 1
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + 86400),
            "ended_at": _iso(batch.created + self.processing_s) if ended else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }


def _error(status: int, kind: str, message: str) -> tuple[int, bytes, str]:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return status, json.dumps(body).encode(), "application/json"
