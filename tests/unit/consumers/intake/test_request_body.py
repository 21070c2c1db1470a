"""A request body read under its bound, by ``Content-Length`` or chunked, from a byte stream."""

from __future__ import annotations

import io
from email.message import Message

import pytest

from ragtrace_consumers.intake.request_body import (
    CHUNKED,
    Framing,
    Refusal,
    body_framing,
    read_body,
)


def headers(**values: str) -> Message:
    message = Message()
    for key, value in values.items():
        message[key.replace("_", "-")] = value
    return message


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"Content_Length": "12"}, Framing(12)),
        ({"Transfer_Encoding": "Chunked"}, Framing(CHUNKED)),
        ({}, Refusal(411, "length_required", "")),
        ({"Content_Length": "x"}, Refusal(400, "bad_length", "")),
        ({"Content_Length": "-3"}, Refusal(400, "bad_length", "")),
        ({"Content_Length": "101"}, Refusal(413, "too_large", "")),
        ({"Transfer_Encoding": "chunked", "Content_Length": "5"}, Refusal(400, "bad_framing", "")),
        ({"Transfer_Encoding": "gzip, chunked"}, Refusal(501, "unsupported_transfer_encoding", "")),
    ],
)
def test_framing(given: dict[str, str], expected: Framing | Refusal) -> None:
    got = body_framing(headers(**given), limit=100)
    if isinstance(expected, Refusal):
        assert isinstance(got, Refusal) and (got.status, got.reason) == (
            expected.status,
            expected.reason,
        )
    else:
        assert got == expected


def test_a_chunked_body_with_extensions_and_trailers() -> None:
    stream = io.BytesIO(b"5;a=b\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT")
    assert read_body(stream, Framing(CHUNKED), limit=100, timeout_s=1) == b"hello world"
    assert stream.read() == b"NEXT"  # the next request on the connection is left unread


def test_a_chunked_body_stops_at_the_chunk_that_crosses_the_bound() -> None:
    stream = io.BytesIO(b"40\r\n" + b"a" * 64 + b"\r\n40\r\n" + b"b" * 64 + b"\r\n0\r\n\r\n")
    got = read_body(stream, Framing(CHUNKED), limit=100, timeout_s=1)
    assert isinstance(got, Refusal) and (got.status, got.reason) == (413, "too_large")
    assert stream.read() == b"b" * 64 + b"\r\n0\r\n\r\n"  # the crossing chunk is never read


@pytest.mark.parametrize(
    ("raw", "status", "reason"),
    [
        (b"zz\r\nhello\r\n0\r\n\r\n", 400, "bad_framing"),
        (b"-5\r\nhello\r\n0\r\n\r\n", 400, "bad_framing"),
        (b"5\r\nhelloXX0\r\n\r\n", 400, "bad_framing"),
        (b"5" + b"0" * 9000 + b"\r\n", 400, "bad_framing"),
        (b"5\r\nhel", 408, "incomplete_body"),
        (b"5\r\nhello\r\n", 408, "incomplete_body"),
        (b"5\r\nhello\r\n0\r\nX-T: 1\r\n", 408, "incomplete_body"),
    ],
)
def test_bad_or_cut_chunked_bodies(raw: bytes, status: int, reason: str) -> None:
    got = read_body(io.BytesIO(raw), Framing(CHUNKED), limit=100, timeout_s=1)
    assert isinstance(got, Refusal) and (got.status, got.reason) == (status, reason)


def test_a_sized_body_is_read_whole_or_refused_as_incomplete() -> None:
    assert read_body(io.BytesIO(b"hello!"), Framing(5), limit=100, timeout_s=1) == b"hello"
    got = read_body(io.BytesIO(b"hel"), Framing(5), limit=100, timeout_s=1)
    assert isinstance(got, Refusal) and got.reason == "incomplete_body"
