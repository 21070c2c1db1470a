"""The receiver's web seam over real HTTP, and ``ragtrace labels export --state``."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.evaluation.labels import LabelledQuestion, load_labels
from ragtrace_consumers.intake.otlp_receiver import OtlpHttpReceiver
from ragtrace_consumers.intake.web_seam import MAX_FORM_BYTES, WebRequest, WebResponse
from ragtrace_consumers.stores.sqlite_labels import SqliteLabelStore
from ragtrace_consumers.stores.sqlite_state import SqliteState


class _Echo:
    def __init__(self) -> None:
        self.seen: list[WebRequest] = []

    def handle(self, request: WebRequest) -> WebResponse | None:
        self.seen.append(request)
        if request.path == "/boom":
            raise RuntimeError("a bug in a page")
        if request.path == "/missing":
            return None
        return WebResponse(200, "text/plain", f"{request.method} {request.path}".encode())


def _ask(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": "a=b"}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    out = r.status, r.read()
    conn.close()
    return out


def test_the_receiver_hands_other_gets_and_ui_posts_to_the_web_handler() -> None:
    web = _Echo()
    with OtlpHttpReceiver(lambda spans: None, port=0, web=web) as receiver:
        port = receiver.port
        assert _ask(port, "GET", "/ui/traces?cell=fine") == (200, b"GET /ui/traces")
        assert web.seen[-1].query == "cell=fine" and web.seen[-1].headers["cookie"] == "a=b"
        assert _ask(port, "POST", "/ui/labels", b"x=1") == (200, b"POST /ui/labels")
        assert web.seen[-1].body == b"x=1"
        assert _ask(port, "POST", "/ui/labels", b"x" * (MAX_FORM_BYTES + 1))[0] == 413
        assert _ask(port, "GET", "/missing")[0] == 404
        assert _ask(port, "GET", "/boom") == (500, b"internal error")
        assert _ask(port, "GET", "/v1/traces")[0] == 405  # the receiver's own paths stay its own
        assert _ask(port, "POST", "/other", b"")[0] == 404
        assert _ask(port, "POST", "/v1/traces", b"")[0] == 415
    with OtlpHttpReceiver(lambda spans: None, port=0) as plain:  # no web view: as before
        assert _ask(plain.port, "GET", "/ui/")[0] == 404


def test_labels_export_writes_the_set_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "state.sqlite3"
    with SqliteState(path) as state:
        store = SqliteLabelStore(state)
        store.start([LabelledQuestion("q-1", "first?", frozenset({"c-1"}))], source="file")
        version = store.add(
            LabelledQuestion("web-1", "second?", frozenset({"c-2", "c-3"})), trace_id="a" * 32
        )
    out = tmp_path / "labels.jsonl"
    assert main(["labels", "export", "--state", str(path), "-o", str(out)]) == 0
    assert version in capsys.readouterr().err
    assert [(q.qid, q.question, q.gold) for q in load_labels(out)] == [
        ("q-1", "first?", frozenset({"c-1"})),
        ("web-1", "second?", frozenset({"c-2", "c-3"})),
    ]
    assert main(["labels", "export", "--state", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x)["qid"] for x in lines] == ["q-1", "web-1"]
    empty = tmp_path / "empty.sqlite3"
    SqliteState(empty).close()
    assert main(["labels", "export", "--state", str(empty)]) == 1
    assert "no label set was ever loaded" in capsys.readouterr().err
    assert main(["labels", "export", "--state", str(tmp_path / "nope.sqlite3")]) == 2


def _raw(port: int, request: bytes) -> tuple[int, bytes]:
    """Send ``request`` as is (framing chosen by the test); the status and body answered."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_a_form_post_is_framed_as_the_otlp_bodies_are() -> None:
    """Web view posts go through the receiver's body reader: a chunked form is read whole, a
    form with no framing header is empty, bad framing is refused as for OTLP (not counted)."""
    web = _Echo()
    start = b"POST /ui/labels HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    with OtlpHttpReceiver(lambda spans: None, port=0, web=web) as receiver:
        port = receiver.port
        chunked = start + b"Transfer-Encoding: chunked\r\n\r\n3\r\nx=1\r\n4\r\n&y=2\r\n0\r\n\r\n"
        assert _raw(port, chunked) == (200, b"POST /ui/labels")
        assert web.seen[-1].body == b"x=1&y=2"
        assert _raw(port, start + b"\r\n") == (200, b"POST /ui/labels")
        assert web.seen[-1].body == b""
        big = b"%x\r\n" % (MAX_FORM_BYTES + 1) + b"x" * (MAX_FORM_BYTES + 1) + b"\r\n0\r\n\r\n"
        assert _raw(port, start + b"Transfer-Encoding: chunked\r\n\r\n" + big)[0] == 413
        assert _raw(port, start + b"Content-Length: -1\r\n\r\n")[0] == 400
        both = b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nx=1"
        assert _raw(port, start + both)[0] == 400
        assert _raw(port, start + b"Transfer-Encoding: gzip\r\n\r\n")[0] == 501
        assert len(web.seen) == 2
