"""The receiver's door: chunked bodies (how Node's OTLP exporters send) read under the same
bounds as sized ones, and every refused request answered and counted with its reason, over
real sockets."""

from __future__ import annotations

import gzip
import http.client
import socket
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace_consumers.errors import ReceiverBusy
from ragtrace_consumers.intake.http_server import AccessPolicy
from ragtrace_consumers.intake.otlp_receiver import REFUSAL_REASONS, Accepted, OtlpHttpReceiver
from tests.unit.consumers.intake.test_otlp_receiver import (
    EXPECTED,
    Sink,
    _json_body,
    _rejections,
    _request,
)

MAX_BODY = 64 * 1024
PB = b"Content-Type: application/x-protobuf\r\n"


@pytest.fixture()
def receiver(sink: Sink, reader: InMemoryMetricReader) -> Iterator[OtlpHttpReceiver]:
    provider = MeterProvider(metric_readers=[reader])
    with OtlpHttpReceiver(
        sink,
        port=0,
        max_body_bytes=MAX_BODY,
        timeout_s=0.5,
        meter_provider=provider,
        access=AccessPolicy("s3cret"),
    ) as r:
        yield r
    provider.shutdown()


AUTH = {"Authorization": "Bearer s3cret"}


def _chunked_post(
    receiver: OtlpHttpReceiver, body: bytes, content_type: str, **headers: str
) -> tuple[int, bytes]:
    """POST ``body`` with http.client's own chunked encoding (no Content-Length), in 1 KiB
    chunks, as Node's ``http`` module frames a body written in parts."""
    conn = http.client.HTTPConnection(receiver.host, receiver.port, timeout=10)
    parts = (body[i : i + 1024] for i in range(0, len(body), 1024))
    try:
        conn.request(
            "POST",
            "/v1/traces",
            body=parts,
            headers={"Content-Type": content_type, **AUTH, **headers},
            encode_chunked=True,
        )
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _raw(receiver: OtlpHttpReceiver, data: bytes) -> bytes:
    """Send ``data`` (the request line is the caller's, the token is added) and read the reply
    until the server closes."""
    line, _, rest = data.partition(b"\r\n")
    data = line + b"\r\nAuthorization: Bearer s3cret\r\n" + rest
    with socket.create_connection((receiver.host, receiver.port), timeout=5) as s:
        s.sendall(data)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


# --- chunked bodies are read -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "gzipped"),
    [("protobuf", False), ("json", False), ("protobuf", True), ("json", True)],
)
def test_a_chunked_request_is_read_like_a_sized_one(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader, fmt: str, gzipped: bool
) -> None:
    raw = _request().SerializeToString() if fmt == "protobuf" else _json_body()
    body = gzip.compress(raw) if gzipped else raw
    ctype = "application/x-protobuf" if fmt == "protobuf" else "application/json"
    extra = {"Content-Encoding": "gzip"} if gzipped else {}
    status, reply = _chunked_post(receiver, body, ctype, **extra)
    assert status == 200
    if fmt == "protobuf":
        response = trace_service_pb2.ExportTraceServiceResponse.FromString(reply)
        assert not response.HasField("partial_success")
    else:
        assert reply == b"{}"
    assert sink.batches == [EXPECTED]
    assert _rejections(reader) == {}


def test_chunk_extensions_and_trailers_are_ignored_and_the_connection_kept(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    raw = _request().SerializeToString()
    half = len(raw) // 2
    framed = (
        f"{half:x};name=value\r\n".encode()
        + raw[:half]
        + f"\r\n{len(raw) - half:X}\r\n".encode()
        + raw[half:]
        + b"\r\n0\r\nX-Checksum: none\r\n\r\n"
    )
    request = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + PB + b"Transfer-Encoding: chunked\r\n\r\n"
    )
    with socket.create_connection((receiver.host, receiver.port), timeout=5) as s:
        for _ in range(2):  # two requests on one keep-alive connection
            line, _, rest = request.partition(b"\r\n")
            s.sendall(line + b"\r\nAuthorization: Bearer s3cret\r\n" + rest + framed)
            response = http.client.HTTPResponse(s)
            response.begin()
            assert response.status == 200 and not response.will_close
            response.read()
    assert sink.batches == [EXPECTED, EXPECTED]


def test_a_chunked_body_over_the_bound_is_refused_before_it_is_all_sent(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader
) -> None:
    """The 413 comes as soon as the chunks pass ``max_body_bytes``: the client has not sent the
    rest (nor the last chunk) when the answer arrives."""
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
    chunk = b"%x\r\n" % 40_000 + b"\x00" * 40_000 + b"\r\n"
    with socket.create_connection((receiver.host, receiver.port), timeout=5) as s:
        s.sendall(head + PB + b"Transfer-Encoding: chunked\r\n\r\n" + chunk + chunk)
        # No last chunk sent: only a refusal can answer, and the server then closes.
        reply = b"".join(iter(lambda: s.recv(65536), b""))
    assert reply.startswith(b"HTTP/1.1 413 ") and f"exceeds {MAX_BODY}".encode() in reply
    assert b"Connection: close" in reply
    assert sink.batches == [] and _rejections(reader) == {"too_large": 1}


def test_a_chunked_gzip_bomb_is_413(
    receiver: OtlpHttpReceiver, reader: InMemoryMetricReader
) -> None:
    bomb = gzip.compress(b"\x00" * (MAX_BODY + 1))
    status, _ = _chunked_post(
        receiver, bomb, "application/x-protobuf", **{"Content-Encoding": "gzip"}
    )
    assert status == 413 and _rejections(reader) == {"too_large": 1}


def test_metrics_and_logs_accept_chunked_bodies_too(sink: Sink) -> None:
    forwarded: list[tuple[str, bytes]] = []
    with OtlpHttpReceiver(
        sink, port=0, other_signals=lambda path, _c, _e, body: forwarded.append((path, body))
    ) as receiver:
        for path in ("/v1/metrics", "/v1/logs"):
            conn = http.client.HTTPConnection(receiver.host, receiver.port, timeout=10)
            conn.request(
                "POST",
                path,
                body=iter([b"abc", b"def"]),
                headers={"Content-Type": "application/x-protobuf"},
                encode_chunked=True,
            )
            assert conn.getresponse().status == 200
            conn.close()
    assert forwarded == [("/v1/metrics", b"abcdef"), ("/v1/logs", b"abcdef")]


# --- every refusal is counted with its reason --------------------------------------------------

_REQ = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n"

REFUSALS = {
    "length_required": (_REQ + PB + b"\r\n", 411),
    "bad_length": (_REQ + PB + b"Content-Length: -1\r\n\r\n", 400),
    "bad_framing": (
        _REQ
        + PB
        + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    "unsupported_transfer_encoding": (
        _REQ + PB + b"Transfer-Encoding: gzip, chunked\r\n\r\n",
        501,
    ),
    "too_large": (_REQ + PB + b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1), 413),
    "incomplete_body": (_REQ + PB + b"Transfer-Encoding: chunked\r\n\r\n10\r\nshort", 408),
    "unsupported_content_type": (
        _REQ + b"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi",
        415,
    ),
    "unsupported_content_encoding": (
        _REQ + PB + b"Content-Encoding: br\r\nContent-Length: 2\r\n\r\nhi",
        415,
    ),
    "bad_payload": (_REQ + PB + b"Content-Length: 3\r\n\r\n\xff\xff\xff", 400),
    "not_found": (b"POST /v1/other HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 404),
    "method_not_allowed": (b"GET /v1/traces HTTP/1.1\r\nHost: x\r\n\r\n", 405),
    "unsupported_method": (b"PUT /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 501),
}


@pytest.mark.parametrize("reason", sorted(REFUSALS))
def test_each_refusal_is_answered_and_counted(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader, reason: str
) -> None:
    request, status = REFUSALS[reason]
    reply = _raw(receiver, request)
    assert reply.startswith(b"HTTP/1.1 %d " % status), reply[:80]
    assert sink.batches == []
    assert _rejections(reader) == {reason: 1}


def test_a_malformed_chunk_size_is_bad_framing(
    receiver: OtlpHttpReceiver, reader: InMemoryMetricReader
) -> None:
    reply = _raw(
        receiver, _REQ + PB + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
    )
    assert reply.startswith(b"HTTP/1.1 400 ") and b"bad chunk-size line" in reply
    assert _rejections(reader) == {"bad_framing": 1}


def test_a_bad_request_line_is_counted(
    receiver: OtlpHttpReceiver, reader: InMemoryMetricReader
) -> None:
    with socket.create_connection((receiver.host, receiver.port), timeout=5) as s:
        s.sendall(b"NONSENSE\r\n\r\n")  # no version: http.server answers as HTTP/0.9
        assert b"Error code: 400" in s.recv(65536)
    assert _rejections(reader) == {"bad_request": 1}


def test_without_the_token_is_unauthorized(
    receiver: OtlpHttpReceiver, reader: InMemoryMetricReader
) -> None:
    with socket.create_connection((receiver.host, receiver.port), timeout=5) as s:
        s.sendall(_REQ + PB + b"Content-Length: 0\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 401 ")
    assert _rejections(reader) == {"unauthorized": 1}


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (ReceiverBusy("full", retry_after=2.0), 503, "busy"),
        (RuntimeError("a bug"), 500, "internal_error"),
    ],
)
def test_sink_refusals_are_counted(
    receiver: OtlpHttpReceiver,
    sink: Sink,
    reader: InMemoryMetricReader,
    error: Exception,
    status: int,
    reason: str,
) -> None:
    sink.error = error
    got, _ = _chunked_post(receiver, _request().SerializeToString(), "application/x-protobuf")
    assert got == status and _rejections(reader) == {reason: 1}


def test_rejected_spans_are_counted_per_span(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader
) -> None:
    sink.outcome = Accepted(rejected_spans=2, error_message="no room")
    status, reply = _chunked_post(
        receiver, _request().SerializeToString(), "application/x-protobuf"
    )
    response = trace_service_pb2.ExportTraceServiceResponse.FromString(reply)
    assert status == 200 and response.partial_success.rejected_spans == 2
    assert _rejections(reader) == {"rejected_spans": 2}


def test_every_counted_reason_is_tested_here() -> None:
    tested = set(REFUSALS) | {
        "bad_framing",
        "bad_request",
        "unauthorized",
        "busy",
        "internal_error",
        "rejected_spans",
    }
    assert tested == set(REFUSAL_REASONS)


def test_a_refusal_before_the_body_says_why_in_plain_text(
    receiver: OtlpHttpReceiver,
) -> None:
    reply = _raw(receiver, REFUSALS["length_required"][0])
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"Content-Type: text/plain" in head
    assert body == b"Content-Length or Transfer-Encoding: chunked required"
