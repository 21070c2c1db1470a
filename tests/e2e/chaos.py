"""Steady OTLP traffic for the chaos tests, and the exactly-once check of what came out.

:class:`Sender` posts complete RAG traces (root, retrieval, generation; every answer unique, so
no judge-cache hit) to an OTLP/HTTP endpoint at a steady pace and behaves like an OTLP exporter:
a request refused (connection refused or reset, 5xx) is retried until it is answered 2xx. A trace
is *accepted* once its request got 2xx; :func:`assert_scored_once` then checks every accepted
trace was written back, and each (trace, metric) under exactly one evaluation span ID.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterable

from ragtrace import semconv
from scripts.services import OtlpSink
from tests.otlp_requests import export_request, otlp_span

__all__ = ["Sender", "assert_scored_once", "trace_request"]

_TEXT = "Keys rotate from the Settings page"


def trace_request(first: int, count: int, salt: int = 0) -> tuple[bytes, list[str]]:
    """``count`` complete RAG traces numbered from ``first`` (trace IDs carry ``salt`` in their
    high bytes, so runs never collide), as one ExportTraceServiceRequest."""
    spans, ids = [], []
    for n in range(first, first + count):
        tid = (salt << 64 | n).to_bytes(16, "big")
        root, ret, gen = ((3 * n + k).to_bytes(8, "big") for k in (1, 2, 3))
        ids.append(tid.hex())
        text = f"{_TEXT} of workspace {salt}-{n}."
        now = time.time_ns()
        kind = semconv.OPENINFERENCE_SPAN_KIND
        question = {kind: "CHAIN", semconv.INPUT_VALUE: f"question {n}"}
        retrieval = {
            kind: "RETRIEVER",
            semconv.INPUT_VALUE: f"question {n}",
            semconv.retrieval_document_id(0): "c-1",
            semconv.retrieval_document_content(0): text,
        }
        generation = {kind: "LLM", semconv.OUTPUT_VALUE: text}
        spans += [
            otlp_span(tid, root, None, semconv.SPAN_PIPELINE, (now, now + 3), question),
            otlp_span(tid, ret, root, semconv.SPAN_RETRIEVE, (now, now + 1), retrieval),
            otlp_span(tid, gen, root, semconv.SPAN_GENERATE, (now + 1, now + 2), generation),
        ]
    req = export_request(spans, service="chaos-app", scope=semconv.INSTRUMENTATION_SCOPE)
    return req.SerializeToString(), ids


class Sender(threading.Thread):
    """Steady traffic with exporter-style retries; ``accepted`` holds the 2xx'd trace IDs."""

    def __init__(
        self, url: str, *, per_request: int = 5, pause_s: float = 0.1, salt: int = 0
    ) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.per_request = per_request
        self.pause_s = pause_s
        self.salt = salt
        self.next = 1
        self.accepted: list[str] = []
        self.refused = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            body, ids = trace_request(self.next, self.per_request, self.salt)
            self.next += self.per_request
            while not self.halt.is_set():
                req = urllib.request.Request(
                    self.url, data=body, headers={"Content-Type": "application/x-protobuf"}
                )
                try:
                    with urllib.request.urlopen(req, timeout=10) as resp:
                        if resp.status == 200:
                            self.accepted += ids
                            break
                except (urllib.error.URLError, OSError):
                    self.refused += 1
                time.sleep(0.05)
            time.sleep(self.pause_s)

    def stop(self) -> set[str]:
        """Stop sending; the accepted trace IDs."""
        self.halt.set()
        self.join(15)
        return set(self.accepted)


def assert_scored_once(backend: OtlpSink, accepted: Iterable[str], timeout: float = 120.0) -> None:
    """Every accepted trace's groundedness is written back, and every (trace, metric) under one
    span ID only (an identical re-send after a crash is allowed: same ID)."""
    ids = set(accepted)
    assert ids, "no traffic was accepted"
    # Each trace's groundedness result is on its own span, under the generation span.
    backend.wait_for_spans(
        lambda s: (
            s.scope == semconv.EVALUATION_SCOPE
            and s.trace_id in ids
            and s.name == f"{semconv.SPAN_EVALUATION}.groundedness"
        ),
        count=len(ids),
        timeout=timeout,
    )
    time.sleep(1.0)  # the collector's batch timeout: a late duplicate would show
    span_ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in backend.spans(lambda s: s.scope == semconv.EVALUATION_SCOPE and s.trace_id in ids):
        for _, attrs in s.events:
            span_ids[(s.trace_id, str(attrs[semconv.GEN_AI_EVALUATION_NAME]))].add(s.span_id)
    scored = {t for t, name in span_ids if name == "groundedness"}
    assert scored == ids, f"{len(ids - scored)} accepted traces never scored"
    twice = {k: v for k, v in span_ids.items() if len(v) > 1}
    assert not twice, f"written back twice with different spans: {list(twice)[:5]}"
