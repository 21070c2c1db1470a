"""The receiver under hostile input and slow clients, over real sockets: lengths, stalled and
idle connections, the bounded worker pool, multi-member gzip, deep JSON, the evaluator's
pending bound (refused whole), and a stop that answers the requests in progress."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from google.rpc import status_pb2

from ragtrace_consumers.errors import Held
from ragtrace_consumers.intake.otlp_receiver import Accepted, OtlpHttpReceiver
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from tests.unit.consumers.intake.test_otlp_receiver import EXPECTED, PB, Sink, _post, _request

JS = {"Content-Type": "application/json"}


@pytest.fixture()
def sink() -> Sink:
    return Sink()


@pytest.fixture()
def receiver(sink: Sink) -> Iterator[OtlpHttpReceiver]:
    with OtlpHttpReceiver(
        sink, port=0, max_body_bytes=64 * 1024, timeout_s=0.5, max_workers=2
    ) as r:
        yield r


def _raw(receiver: OtlpHttpReceiver, data: bytes, wait: float = 5.0) -> bytes:
    with socket.create_connection((receiver.host, receiver.port), timeout=wait) as s:
        s.sendall(data)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_a_negative_content_length_is_400_and_nothing_is_read(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    reply = _raw(
        receiver,
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
        b"application/x-protobuf\r\nContent-Length: -1\r\n\r\n" + b"x" * 1000,
    )
    assert reply.startswith(b"HTTP/1.1 400 ") and b"bad Content-Length" in reply
    assert sink.batches == []


def test_neither_a_length_nor_chunked_is_411(receiver: OtlpHttpReceiver, sink: Sink) -> None:
    reply = _raw(
        receiver,
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n\r\n",
    )
    assert reply.startswith(b"HTTP/1.1 411 ") and sink.batches == []


def test_a_stalled_upload_is_cut_after_the_read_timeout(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    started = time.monotonic()
    reply = _raw(
        receiver,
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
        b"application/x-protobuf\r\nContent-Length: 1000\r\n\r\npartial",
    )
    assert reply.startswith(b"HTTP/1.1 408 ") and time.monotonic() - started < 3
    assert sink.batches == []


def test_idle_and_stalled_clients_cannot_hold_the_workers(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    """Two workers, four clients that connect and send nothing: a real request is still served
    (each idle client holds a worker for at most the timeout; the backlog holds the rest)."""
    idle = [socket.create_connection((receiver.host, receiver.port)) for _ in range(4)]
    try:
        started = time.monotonic()
        status, _, _ = _post(receiver, _request().SerializeToString(), PB)
        assert status == 200 and sink.batches == [EXPECTED]
        assert time.monotonic() - started < 5
    finally:
        for s in idle:
            s.close()


def test_gzip_members_are_all_read(receiver: OtlpHttpReceiver, sink: Sink) -> None:
    raw = _request().SerializeToString()
    half = len(raw) // 2  # protobuf: a message split anywhere is the concatenation of both parts
    body = gzip.compress(raw[:half]) + gzip.compress(raw[half:])
    status, _, _ = _post(receiver, body, dict(PB, **{"Content-Encoding": "gzip"}))
    assert status == 200 and sink.batches == [EXPECTED]


def test_a_bomb_spread_over_members_is_413(receiver: OtlpHttpReceiver, sink: Sink) -> None:
    member = gzip.compress(b"\x00" * (40 * 1024))  # each fits, together they do not
    status, _, _ = _post(receiver, member * 3, dict(PB, **{"Content-Encoding": "gzip"}))
    assert status == 413 and sink.batches == []


def test_json_nested_too_deep_is_400_with_the_location(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    body = b'{"resourceSpans": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    status, _, reply = _post(receiver, body, JS)
    assert status == 400
    from google.protobuf import json_format

    message = json_format.Parse(reply, status_pb2.Status()).message
    assert message == (
        "cannot decode OTLP JSON trace request: JSON nested deeper than 100 levels "
        "at byte 117 (line 1, column 118)"
    )  # the 101st bracket


def test_stop_answers_the_request_in_progress_before_returning() -> None:
    entered, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def slow(spans: Sequence[SpanRecord]) -> Accepted | None:
        entered.set()
        release.wait(5)
        finished.append("stored")
        return None

    receiver = OtlpHttpReceiver(slow, port=0).start()
    result: list[int] = []
    client = threading.Thread(
        target=lambda: result.append(_post(receiver, _request().SerializeToString(), PB)[0])
    )
    client.start()
    assert entered.wait(5)
    stopper = threading.Thread(target=receiver.stop)
    stopper.start()
    time.sleep(0.3)
    assert stopper.is_alive()  # waits for the request being handled
    release.set()
    stopper.join(5)
    client.join(5)
    assert finished == ["stored"] and result == [200]


# --- the evaluator's bound ---------------------------------------------------------------------


def _trace_request(n: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    req = _request()
    spans = req.resource_spans[0].scope_spans[0].spans
    template = list(spans)
    del spans[:]
    for i in range(n):
        for s in template:
            copy = type(s)()
            copy.CopyFrom(s)
            copy.trace_id = (i + 1).to_bytes(16, "big")
            spans.append(copy)
    out: bytes = trace_service_pb2.ExportTraceServiceRequest.SerializeToString(req)
    return out


def test_a_request_over_the_pending_bound_is_refused_whole(tmp_path: Path) -> None:
    from ragtrace_consumers.config import ConsumerConfig

    config = ConsumerConfig.defaults().replace(
        assembly={"quiet_s": 3600.0, "ttl_s": 10_000.0},
        judge={"name": "lexical"},
        serve={"port": 0, "state": tmp_path / "s.db", "metrics": False, "max_pending_traces": 3},
    )
    ev = EmbeddedEvaluator(config)
    ev.traces.claim = lambda *a, **k: []  # type: ignore[method-assign]  # nothing drains
    with ev:
        r = ev.receiver
        assert _post(r, _trace_request(2), PB)[0] == 200
        assert ev.traces.held().traces == 2
        status, headers, body = _post(r, _trace_request(2), PB)  # 2 + 2 > 3: none stored
        assert status == 503 and headers["retry-after"] == "1"
        assert ev.traces.held().traces == 2
        status, _, body = _post(r, _trace_request(5), PB)  # can never fit: do not retry
        assert status == 413
        assert status_pb2.Status.FromString(body).message.startswith(
            "the request alone exceeds the evaluator's bound"
        )
        held = ev.traces.held()
        assert held.traces == 2 and held == Held(2, held.bytes)


def test_bytes_in_flight_are_bounded_across_requests() -> None:
    """A request is refused (503, before its body is read) while the bodies in flight would
    pass ``max_inflight_bytes``; it is taken once they are done."""
    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow(spans: Sequence[SpanRecord]) -> Accepted | None:
        calls.append(len(spans))
        entered.set()
        release.wait(5)
        return None

    from opentelemetry.proto.common.v1 import common_pb2

    req = _request()
    req.resource_spans[0].scope_spans[0].spans[0].attributes.append(
        common_pb2.KeyValue(key="padding", value=common_pb2.AnyValue(string_value="p" * 50_000))
    )
    body = req.SerializeToString()
    with OtlpHttpReceiver(
        slow, port=0, max_body_bytes=64 * 1024, max_inflight_bytes=80_000
    ) as receiver:
        first: list[int] = []
        client = threading.Thread(target=lambda: first.append(_post(receiver, body, PB)[0]))
        client.start()
        assert entered.wait(5)
        status, headers, _ = _post(receiver, body, PB)
        assert (status, headers["retry-after"], calls) == (503, "1", [2])
        release.set()
        client.join(5)
        assert first == [200]
        assert _post(receiver, body, PB)[0] == 200 and calls == [2, 2]
