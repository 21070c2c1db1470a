"""Reading one HTTP/1.1 request body under a size bound, framed either way a client may frame it.

The standard OTLP exporters frame their bodies in two ways: with ``Content-Length`` (Python's,
the Collector's) or with ``Transfer-Encoding: chunked`` and no length (Node's ``http`` module,
used by ``@opentelemetry/exporter-trace-otlp-proto`` and ``-http``). :func:`body_framing` says
which a request uses, or why it is refused; :func:`read_body` reads it, refusing a body over
``limit`` as soon as its size is known to pass it (a declared length before anything is read, a
chunked body at the chunk that crosses the bound), so no more than ``limit`` bytes are ever held.

A refusal is a value (:class:`Refusal`: status, counted reason, message), never an exception
that crosses the module; the caller answers and counts it. After any refusal the connection's
remaining bytes are unknown, so the caller closes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["CHUNKED", "BodyStream", "Framing", "Headers", "Refusal", "body_framing", "read_body"]


class Headers(Protocol):
    """A request's headers, looked up case-insensitively (``http.client``'s message)."""

    def get(self, name: str, /) -> str | None: ...


class BodyStream(Protocol):
    """The connection's buffered input (``rfile``)."""

    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


CHUNKED = -1
"""The :class:`Framing` length of a chunked body (its size is known only once read)."""

_MAX_LINE = 8 * 1024
"""Longest chunk-size line or trailer line accepted (extensions included); http.server's own
bound on a header line is 64 KiB, a chunk line needs far less."""
_MAX_TRAILERS = 100


@dataclass(frozen=True)
class Refusal:
    """Why a request body is not read: the HTTP status, the reason counted on
    ``ragtrace.receiver.rejected``, and the message for the client."""

    status: int
    reason: str
    message: str


@dataclass(frozen=True)
class Framing:
    """How a request's body is delimited: ``length`` bytes, or :data:`CHUNKED`."""

    length: int

    @property
    def chunked(self) -> bool:
        return self.length == CHUNKED


def body_framing(
    headers: Headers, limit: int, *, length_required: bool = True
) -> Framing | Refusal:
    """The framing of a request with ``headers``, or its refusal: 411 with neither header (with
    ``length_required`` false such a request has an empty body, RFC 9112 §6.3), 400 for a
    malformed or negative length or both headers at once (RFC 9112 §6.1: a request-smuggling
    shape), 501 for a transfer coding other than ``chunked``, 413 for a declared length over
    ``limit``."""
    transfer = headers.get("Transfer-Encoding")
    declared = headers.get("Content-Length")
    if transfer is not None:
        if declared is not None:
            return Refusal(400, "bad_framing", "both Transfer-Encoding and Content-Length given")
        if transfer.strip().lower() != "chunked":
            return Refusal(
                501,
                "unsupported_transfer_encoding",
                f"unsupported Transfer-Encoding {transfer!r}: send chunked or a Content-Length",
            )
        return Framing(CHUNKED)
    if declared is None:
        if not length_required:
            return Framing(0)
        return Refusal(
            411, "length_required", "Content-Length or Transfer-Encoding: chunked required"
        )
    try:
        length = int(declared)
    except ValueError:
        length = -1
    if length < 0:
        return Refusal(400, "bad_length", "bad Content-Length")
    if length > limit:
        return Refusal(413, "too_large", f"body exceeds {limit} bytes")
    return Framing(length)


def read_body(rfile: BodyStream, framing: Framing, limit: int, timeout_s: float) -> bytes | Refusal:
    """The body of ``framing`` read from ``rfile``, or its refusal: 413 past ``limit`` (a chunked
    body stops being read at the chunk that crosses it), 400 for malformed chunk framing, 408
    when the connection ends or stalls (``timeout_s``, the socket's) before the body is whole."""
    incomplete = Refusal(408, "incomplete_body", f"body incomplete after {timeout_s:g} s")
    try:
        if not framing.chunked:
            body = rfile.read(framing.length)
            return body if len(body) == framing.length else incomplete
        return _read_chunks(rfile, limit, incomplete)
    except TimeoutError:
        return incomplete


def _read_chunks(rfile: BodyStream, limit: int, incomplete: Refusal) -> bytes | Refusal:
    parts: list[bytes] = []
    size = 0
    while True:
        line = rfile.readline(_MAX_LINE + 1)
        if not line.endswith(b"\n"):
            return incomplete if len(line) <= _MAX_LINE else _bad("chunk-size line too long")
        try:
            chunk = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            return _bad(f"bad chunk-size line {line[:40]!r}")
        if chunk < 0:
            return _bad(f"bad chunk-size line {line[:40]!r}")
        if chunk == 0:
            break
        size += chunk
        if size > limit:
            return Refusal(413, "too_large", f"body exceeds {limit} bytes")
        data = rfile.read(chunk)
        if len(data) != chunk:
            return incomplete
        parts.append(data)
        crlf = rfile.readline(3)
        if crlf not in (b"\r\n", b"\n"):
            return incomplete if not crlf else _bad("chunk data not followed by CRLF")
    for _ in range(_MAX_TRAILERS):  # trailer fields, ignored, up to the empty line
        trailer = rfile.readline(_MAX_LINE + 1)
        if trailer in (b"\r\n", b"\n"):
            return b"".join(parts)
        if not trailer.endswith(b"\n"):
            return incomplete if len(trailer) <= _MAX_LINE else _bad("trailer line too long")
    return _bad("too many trailer fields")


def _bad(message: str) -> Refusal:
    return Refusal(400, "bad_framing", f"bad chunked body: {message}")
