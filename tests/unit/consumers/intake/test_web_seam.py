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
