"""The Phoenix sink: annotations leave off the scoring path, batched one request per kind; a
span Phoenix has not stored yet is retried quietly within seconds; what never gets stored is
logged once and counted."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragtrace_consumers.writeback.phoenix_annotations import phoenix_annotations
from ragtrace_consumers.writeback.phoenix_sink import PhoenixSink
from tests.unit.consumers.scoring_helpers import (
    grounded,
    root_span_id,
    sid,
    tid,
    trace_scores,
)


class FakePhoenix:
    """Phoenix's annotation endpoints: spans in ``stored`` exist; others get its 404."""

    def __init__(self) -> None:
        self.stored: set[str] = set()
        self.posts: list[tuple[str, list[dict[str, Any]]]] = []
        self.accepted: list[tuple[str, dict[str, Any]]] = []
        self.delay_s = 0.0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                kind = self.path.split("?")[0].rsplit("/", 1)[-1]
                time.sleep(fake.delay_s)
                fake.posts.append((kind, body["data"]))
                key = "trace_id" if kind == "trace_annotations" else "span_id"
                missing = sorted({d[key] for d in body["data"]} - fake.stored)
                if missing:
                    what = "Traces" if key == "trace_id" else "Spans"
                    detail = json.dumps(
                        {"detail": f"{what} with IDs {', '.join(missing)} do not exist."}
                    ).encode()
                    self.send_response(404)
                    self.send_header("Content-Length", str(len(detail)))
                    self.end_headers()
                    self.wfile.write(detail)
                    return
                fake.accepted += [(kind, d) for d in body["data"]]
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture()
def phoenix() -> Iterator[FakePhoenix]:
    fake = FakePhoenix()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_annotations_of_a_trace() -> None:
    a = phoenix_annotations(
        trace_scores(7, gold=frozenset({"c-1"}), result=grounded(1, 1)),
        recall_threshold=0.5,
        groundedness_threshold=0.8,
    )
    by_name = {(x["span_id"], x["name"]): x for x in a.spans}
    cell = by_name[(root_span_id(7), "cell")]
    assert cell["result"] == {
        "label": "fine",
        "explanation": "mean_recall 1.00 >= 0.5; groundedness 1.00 >= 0.8",
    }
    assert by_name[(sid(73), "groundedness")]["result"]["label"] == "pass"  # type: ignore[index]
    assert [(t["trace_id"], t["name"], t["result"]) for t in a.traces] == [
        (tid(7), "cell", cell["result"])
    ]
    assert [(d["span_id"], d["document_position"], d["result"]) for d in a.documents] == [
        (
            sid(72),
            0,
            {
                "score": 1.0,
                "label": "gold",
                "explanation": "chunk c-1 is in the gold set of question q-audit",
            },
        ),
        (
            sid(72),
            1,
            {
                "score": 0.0,
                "label": "not_gold",
                "explanation": "chunk c-2 is not in the gold set of question q-audit",
            },
        ),
    ]


def test_batched_off_the_scoring_path_and_not_yet_stored_spans_retried_quietly(
    phoenix: FakePhoenix, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    phoenix.delay_s = 0.1
    sink = PhoenixSink(phoenix.url, recall_threshold=0.5, groundedness_threshold=0.8)
    batch = [
        trace_scores(7, gold=frozenset({"c-1"}), result=grounded(1, 1)),
        trace_scores(8, gold=frozenset({"c-1"}), result=grounded(1, 1)),
    ]
    phoenix.stored = {tid(7), root_span_id(7), sid(72), sid(73)}  # trace 8 not stored yet
    assert sink.write_many(batch) == [None, None]
    assert phoenix.posts == []  # returned before Phoenix answered: not on the scoring path
    time.sleep(1.0)
    phoenix.stored |= {tid(8), root_span_id(8), sid(82), sid(83)}
    assert sink.flush(10)
    sink.shutdown()
    per_trace = {
        n: sum(1 for _, d in phoenix.accepted if d.get("span_id", d.get("trace_id", "")) in ids)
        for n, ids in (
            (7, {tid(7), root_span_id(7), sid(72), sid(73)}),
            (8, {tid(8), root_span_id(8), sid(82), sid(83)}),
        )
    }
    # 6 recall metrics + groundedness + cell as span annotations, 1 trace annotation, 2 documents
    assert per_trace == {7: 11, 8: 11}
    # One request per kind for both traces; on a 404 the stored part goes again at once.
    assert [(kind, len(data)) for kind, data in phoenix.posts[:6]] == [
        ("span_annotations", 16),
        ("span_annotations", 8),
        ("trace_annotations", 2),
        ("trace_annotations", 1),
        ("document_annotations", 4),
        ("document_annotations", 2),
    ]
    assert sink.dropped == 0
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_span_never_stored_is_given_up_once_and_counted(
    phoenix: FakePhoenix, caplog: pytest.LogCaptureFixture
) -> None:
    sink = PhoenixSink(phoenix.url, retry_for_s=0.6)
    sink.write(trace_scores(9, gold=frozenset({"c-1"}), result=grounded(1, 1)))
    assert sink.flush(10)
    sink.shutdown()
    assert phoenix.accepted == []
    assert sink.dropped == 11
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 11 and "not stored after" in warnings[0].getMessage()
