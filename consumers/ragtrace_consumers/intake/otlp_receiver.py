"""An OTLP/HTTP trace receiver: where the embedded evaluator's spans come from.

``POST /v1/traces`` with an ``ExportTraceServiceRequest`` as protobuf
(``application/x-protobuf``) or as OTLP/JSON (``application/json``), optionally
``Content-Encoding: gzip``. Responses follow the OTLP/HTTP specification:

* 200 with an ``ExportTraceServiceResponse`` in the request's encoding; its ``partial_success``
  carries the spans the sink rejected and why (the client must not retry those);
* 400 with a ``google.rpc.Status`` (code INVALID_ARGUMENT) naming what was wrong for a payload
  that cannot be decoded — the client must not retry it;
* a body framed by ``Content-Length`` or ``Transfer-Encoding: chunked`` (Node's exporters send
  the latter; :mod:`ragtrace_consumers.intake.request_body`); 411 with neither, 400 for a
  negative or malformed length, both headers at once or a malformed chunk, 501 for another
  transfer coding, 408 when the body does not arrive within ``timeout_s`` (a stalled upload);
* 413 for a body (or its decompressed form, every gzip member counted) over ``max_body_bytes``
  — a declared length before reading, a chunked body at the chunk crossing the bound — or when
  the sink raises :class:`RequestTooLarge` (the request could never fit);
* 400 as well for JSON nested deeper than the decoder's recursion limit;
* 415 for any other content type or content encoding;
* 503 with ``Retry-After`` when the sink raises :class:`ReceiverBusy` (backpressure: retryable),
  or before the body is read when the bytes of the requests in flight would pass
  ``max_inflight_bytes`` (default four maximum bodies; a chunked body counts as a maximum one,
  its size being unknown, and a gzip body counts its decompressed maximum too): memory per
  request times the worker pool stays bounded;
* ``POST /v1/metrics`` and ``/v1/logs``: 200 with an empty response, the body handed to
  ``other_signals`` (the embedded evaluator forwards it to its OTLP endpoint);
* 404 for other paths, 405 for other methods on ``/v1/traces``; with a ``web`` handler
  (:mod:`ragtrace_consumers.intake.web_seam`), a GET of any other path and a POST under
  ``/ui/`` go to it instead (the web view: its pages share this server and its gates);
* 401 for any other request, before its path is looked at, without ``Authorization: Bearer
  <token>`` when the receiver has a token (``access``); the web view's paths are let through to
  the web handler, which asks for the same token (a bearer header or its sign-in cookie) on
  every page but its sign-in form and stylesheet. Over HTTPS when it has a TLS context (``tls``).

The receiver only decodes and hands spans to a sink: assembly, sampling and scoring are the
Pipeline's, exactly as for spans read from Kafka. Every refused request (any status but 2xx,
the web view's pages aside) and every rejected span is counted on ``ragtrace.receiver.rejected``
by reason (:data:`REFUSAL_REASONS`). Connections are served by a bounded pool with a read
and idle timeout and a 1024-deep listen backlog (:mod:`ragtrace_consumers.intake.http_server`);
:meth:`OtlpHttpReceiver.stop` lets the requests in progress finish and answer first.
"""

from __future__ import annotations

import functools
import logging
import ssl
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Final

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from opentelemetry import metrics
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from typing_extensions import Self

from ragtrace import __version__, semconv
from ragtrace_consumers.errors import ReceiverBusy, RequestTooLarge
from ragtrace_consumers.intake.http_server import (
    DEFAULT_MAX_WORKERS,
    AccessPolicy,
    BoundedHTTPServer,
    GatedRequestHandler,
)
from ragtrace_consumers.intake.request_body import Framing, Refusal, body_framing, read_body
from ragtrace_consumers.intake.web_seam import (
    MAX_FORM_BYTES,
    WEB_PREFIX,
    WebHandler,
    WebRequest,
    WebResponse,
)
from ragtrace_consumers.model import Admission, SpanRecord

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "LOGS_PATH",
    "METRICS_PATH",
    "TRACES_PATH",
    "Accepted",
    "REFUSAL_REASONS",
    "RECEIVER_LISTENER",
    "OtlpHttpReceiver",
    "SpanSink",
]

TRACES_PATH = "/v1/traces"
METRICS_PATH = "/v1/metrics"
LOGS_PATH = "/v1/logs"
"""Acknowledged with an empty success response (an app exporting every signal to the
evaluator gets no 404); handed to ``other_signals`` when given (forwarding)."""
DEFAULT_PORT = 4318
RECEIVER_LISTENER = "the OTLP receiver"
"""How a bind failure (:class:`~ragtrace_consumers.errors.CannotListen`) names the receiver."""
DEFAULT_HOST = "127.0.0.1"
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024

REFUSAL_REASONS: Final = (
    "bad_framing",
    "bad_length",
    "bad_payload",
    "bad_request",
    "busy",
    "incomplete_body",
    "internal_error",
    "length_required",
    "method_not_allowed",
    "not_found",
    "rejected_spans",
    "too_large",
    "unauthorized",
    "unsupported_content_encoding",
    "unsupported_content_type",
    "unsupported_method",
    "unsupported_transfer_encoding",
)
"""Every ``reason`` counted on ``ragtrace.receiver.rejected`` (docs/semantic-conventions.md)."""

_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Accepted:
    """What a sink reports for one request: how many of its spans it refused, and why."""

    rejected_spans: int = 0
    error_message: str = ""

    def __post_init__(self) -> None:
        if self.rejected_spans < 0:
            raise ValueError(f"Accepted.rejected_spans must be >= 0, got {self.rejected_spans}")
        if self.rejected_spans and not self.error_message:
            raise ValueError("Accepted.error_message must say why spans were rejected")


SpanSink = Callable[[Sequence[SpanRecord]], "Accepted | None"]
Decoder = Callable[[bytes], list[SpanRecord]]


def _default_decoders(admission: Admission | None) -> tuple[Decoder, Decoder, type[Exception]]:
    from ragtrace_consumers.errors import DecodeError
    from ragtrace_consumers.intake.decode import decode_json_request, decode_request

    if admission is None:
        return decode_request, decode_json_request, DecodeError
    return (
        functools.partial(decode_request, admission=admission),
        functools.partial(decode_json_request, admission=admission),
        DecodeError,
    )


class OtlpHttpReceiver:
    """A threaded OTLP/HTTP server feeding decoded spans to ``sink``.

    Binds ``host:port`` (loopback and 4318 by default; ``port=0`` picks a free port, read it
    back from :attr:`port`). :meth:`start` serves in a background thread; :meth:`stop` shuts the
    server down and waits for it. ``access`` (a bearer token) is checked on every request before
    routing; ``tls`` serves HTTPS (:func:`~ragtrace_consumers.intake.http_server.server_tls`). ``decode_protobuf``/``decode_json`` default to the consumers'
    ``decode_request``/``decode_json_request`` and must raise ``decode_error`` on bad input;
    the default decoders apply ``admission`` (the sampling at decode, as the Kafka intake
    does), so ``sink`` gets only the spans of admitted traces.
    """

    def __init__(
        self,
        sink: SpanSink,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        decode_protobuf: Decoder | None = None,
        decode_json: Decoder | None = None,
        decode_error: type[Exception] | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        timeout_s: float = 10.0,
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_inflight_bytes: int | None = None,
        other_signals: Callable[[str, str, str, bytes], None] | None = None,
        admission: Admission | None = None,
        access: AccessPolicy | None = None,
        tls: ssl.SSLContext | None = None,
        web: WebHandler | None = None,
    ) -> None:
        self._web = web
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be within 0..65535, got {port}")
        if max_body_bytes <= 0:
            raise ValueError(f"max_body_bytes must be > 0, got {max_body_bytes}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self._timeout_s = timeout_s
        # Default: four bodies of the largest size (a gzip one counts its decompressed size too).
        self._inflight = _Budget(max_inflight_bytes or 4 * max_body_bytes)
        if decode_protobuf is None or decode_json is None or decode_error is None:
            dp, dj, de = _default_decoders(admission)
            decode_protobuf = decode_protobuf or dp
            decode_json = decode_json or dj
            decode_error = decode_error or de
        self._sink = sink
        self._other_signals = other_signals
        self._decoders = {_PROTOBUF: decode_protobuf, _JSON: decode_json}
        self._decode_error: type[Exception] = decode_error
        self._max_body = max_body_bytes
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(
            semconv.EVALUATION_SCOPE, __version__, schema_url=semconv.SCHEMA_URL
        )
        self._rejected = meter.create_counter(
            semconv.METRIC_RECEIVER_REJECTED,
            unit="{request}",
            description="OTLP/HTTP requests (or spans, for partial success) the receiver refused",
        )
        self._access = access
        self._server = BoundedHTTPServer(
            (host, port),
            self._make_handler(),
            max_workers=max_workers,
            tls=tls,
            listener=RECEIVER_LISTENER,
        )
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """Base URL for an OTLP/HTTP exporter (``OTEL_EXPORTER_OTLP_ENDPOINT`` style)."""
        host = self.host
        scheme = "https" if self._server.tls is not None else "http"
        return (
            f"{scheme}://[{host}]:{self.port}" if ":" in host else f"{scheme}://{host}:{self.port}"
        )

    @property
    def traces_url(self) -> str:
        return self.endpoint + TRACES_PATH

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="ragtrace-otlp-http",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop accepting; requests in progress finish and answer (up to ``grace_s``)."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.stop(grace_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- request handling -------------------------------------------------------------------------
    def _handle(
        self, content_type: str, encoding: str, body: bytes
    ) -> tuple[int, str, bytes, dict[str, str]]:
        """Return (status, content type, body, extra headers) for one POST /v1/traces."""
        media = content_type.split(";", 1)[0].strip().lower()
        decoder = self._decoders.get(media)
        if decoder is None:
            self._count("unsupported_content_type")
            msg = f"unsupported content type {content_type!r}: send {_PROTOBUF} or {_JSON}"
            return 415, "text/plain; charset=utf-8", msg.encode(), {}
        encoding = encoding.strip().lower()
        if encoding == "gzip":
            try:
                body = _gunzip(body, self._max_body)
            except _TooLarge:
                self._count("too_large")
                return self._status(
                    media,
                    413,
                    code_pb2.RESOURCE_EXHAUSTED,
                    f"decompressed body exceeds {self._max_body} bytes",
                )
            except (OSError, EOFError, zlib.error, ValueError) as exc:
                self._count("bad_payload")
                return self._status(
                    media, 400, code_pb2.INVALID_ARGUMENT, f"body is not valid gzip: {exc}"
                )
        elif encoding not in ("", "identity"):
            self._count("unsupported_content_encoding")
            msg = f"unsupported content encoding {encoding!r}: send gzip or identity"
            return 415, "text/plain; charset=utf-8", msg.encode(), {}
        try:
            # A protobuf ExportTraceServiceRequest with nothing in it serializes to zero bytes.
            spans = [] if media == _PROTOBUF and not body else decoder(body)
        except (self._decode_error, RecursionError) as exc:
            self._count("bad_payload")
            why = _nesting_location(body, media) if isinstance(exc, RecursionError) else exc
            return self._status(
                media,
                400,
                code_pb2.INVALID_ARGUMENT,
                f"cannot decode OTLP {'JSON' if media == _JSON else 'protobuf'} "
                f"trace request: {why}",
            )
        try:
            outcome = self._sink(spans) if spans else None
        except RequestTooLarge as exc:
            self._count("too_large")
            return self._status(media, 413, code_pb2.RESOURCE_EXHAUSTED, str(exc))
        except ReceiverBusy as exc:
            self._count("busy")
            status, ctype, payload, _ = self._status(media, 503, code_pb2.UNAVAILABLE, str(exc))
            return status, ctype, payload, {"Retry-After": str(max(1, round(exc.retry_after)))}
        response = trace_service_pb2.ExportTraceServiceResponse()
        if outcome is not None and outcome.rejected_spans:
            self._count("rejected_spans", outcome.rejected_spans)
            response.partial_success.rejected_spans = outcome.rejected_spans
            response.partial_success.error_message = outcome.error_message
        return 200, media, _encode(response, media), {}

    def _status(
        self, media: str, http_status: int, code: int, message: str
    ) -> tuple[int, str, bytes, dict[str, str]]:
        return http_status, media, _encode(status_pb2.Status(code=code, message=message), media), {}

    def _count(self, reason: str, n: int = 1) -> None:
        assert reason in REFUSAL_REASONS, reason
        self._rejected.add(n, {semconv.ATTR_REASON: reason})

    def _make_handler(self) -> type[GatedRequestHandler]:
        receiver = self

        class Handler(GatedRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "ragtrace-otlp"
            access = receiver._access  # checked before any route (GatedRequestHandler)
            timeout = receiver._timeout_s  # read and idle timeout of the connection
            # Headers and body leave in two writes: without TCP_NODELAY the body waits for the
            # client's delayed ACK (~40 ms per keep-alive response).
            disable_nagle_algorithm = True

            def checks_access_itself(self) -> bool:
                if receiver._web is None:
                    return False
                path = self.path.split("?", 1)[0]
                if self.command == "GET":
                    return path != TRACES_PATH
                return self.command == "POST" and path.startswith(WEB_PREFIX)

            def do_POST(self) -> None:
                if receiver._web is not None and self.path.startswith(WEB_PREFIX):
                    self._web_post()
                    return
                if self.path.split("?", 1)[0] in (METRICS_PATH, LOGS_PATH):
                    self._other_signal(self.path.split("?", 1)[0])
                    return
                if self.path.split("?", 1)[0] != TRACES_PATH:
                    self._drain()
                    receiver._count("not_found")
                    self._reply(404, "text/plain; charset=utf-8", b"not found: POST /v1/traces")
                    return
                framing = body_framing(self.headers, receiver._max_body)
                if isinstance(framing, Refusal):
                    self._refuse(framing)
                    return
                # Bytes in flight (the body, plus its decompressed form at most) are bounded
                # across all requests: past the bound a request is refused before it is read. A
                # chunked body's size is known only once read: it reserves the largest.
                gzipped = "gzip" in self.headers.get("Content-Encoding", "").lower()
                size = receiver._max_body if framing.chunked else framing.length
                reserve = size + (receiver._max_body if gzipped else 0)
                if not receiver._inflight.acquire(reserve):
                    receiver._count("busy")
                    self._reply(
                        503,
                        "text/plain; charset=utf-8",
                        b"too many request bytes in flight; retry later",
                        {"Retry-After": "1"},
                        close=True,
                    )
                    return
                try:
                    self._read_and_handle(framing)
                finally:
                    receiver._inflight.release(reserve)

            def _read_and_handle(self, framing: Framing) -> None:
                body = read_body(self.rfile, framing, receiver._max_body, receiver._timeout_s)
                if isinstance(body, Refusal):
                    self._refuse(body)
                    return
                if receiver._server.stopping:
                    self.close_connection = True
                try:
                    status, ctype, payload, headers = receiver._handle(
                        self.headers.get("Content-Type", ""),
                        self.headers.get("Content-Encoding", ""),
                        body,
                    )
                except Exception:  # noqa: BLE001 - a bug in the sink must not kill the server
                    _log.exception("OTLP/HTTP receiver: the span sink failed")
                    receiver._count("internal_error")
                    status, ctype, payload, headers = (
                        500,
                        "text/plain; charset=utf-8",
                        b"internal error",
                        {},
                    )
                self._reply(status, ctype, payload, headers)

            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] == TRACES_PATH:
                    receiver._count("method_not_allowed")
                    self._reply(405, "text/plain; charset=utf-8", b"use POST", {"Allow": "POST"})
                elif receiver._web is not None:
                    self._web_reply("GET", b"")
                else:
                    receiver._count("not_found")
                    self._reply(404, "text/plain; charset=utf-8", b"not found: POST /v1/traces")

            def _web_post(self) -> None:
                """A web view form: framed and bounded as the OTLP bodies are (a chunked one
                too), under :data:`MAX_FORM_BYTES`; refused, not counted (no OTLP request)."""
                framing = body_framing(self.headers, MAX_FORM_BYTES, length_required=False)
                body = (
                    framing
                    if isinstance(framing, Refusal)
                    else read_body(self.rfile, framing, MAX_FORM_BYTES, receiver._timeout_s)
                )
                if isinstance(body, Refusal):
                    message = body.message.encode()
                    self._reply(body.status, "text/plain; charset=utf-8", message, close=True)
                    return
                self._web_reply("POST", body)

            def _web_reply(self, method: str, body: bytes) -> None:
                web = receiver._web
                assert web is not None
                path, _, query = self.path.partition("?")
                if not path.startswith("/"):
                    self._reply(400, "text/plain; charset=utf-8", b"bad request target")
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    response = web.handle(WebRequest(method, path or "/", query, headers, body))
                except Exception:  # noqa: BLE001 - a bug in a page must not kill the server
                    _log.exception("web view: %s %s failed", method, path)
                    response = WebResponse(500, "text/plain; charset=utf-8", b"internal error")
                if response is None:
                    response = WebResponse(404, "text/plain; charset=utf-8", b"not found")
                self._reply(
                    response.status, response.content_type, response.body, dict(response.headers)
                )

            def _other_signal(self, path: str) -> None:
                framing = body_framing(self.headers, receiver._max_body)
                body = (
                    framing
                    if isinstance(framing, Refusal)
                    else read_body(self.rfile, framing, receiver._max_body, receiver._timeout_s)
                )
                if isinstance(body, Refusal):
                    self._refuse(body)
                    return
                ctype = self.headers.get("Content-Type", "")
                if receiver._other_signals is not None:
                    try:
                        receiver._other_signals(
                            path, ctype, self.headers.get("Content-Encoding", ""), body
                        )
                    except Exception:  # noqa: BLE001 - forwarding must not fail the client
                        _log.warning("forwarding %s failed", path, exc_info=True)
                # An empty Export*ServiceResponse: zero bytes in protobuf, {} in JSON.
                json_reply = ctype.split(";", 1)[0].strip().lower() == _JSON
                self._reply(200, _JSON if json_reply else _PROTOBUF, b"{}" if json_reply else b"")

            def _drain(self) -> None:
                if "Transfer-Encoding" in self.headers:  # not worth reading: close instead
                    self.close_connection = True
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = 0
                if 0 < length <= receiver._max_body:
                    self.rfile.read(length)
                else:
                    self.close_connection = True

            def refused(self, reason: str) -> None:
                receiver._count(reason)

            def send_error(
                self, code: int, message: str | None = None, explain: str | None = None
            ) -> None:
                # http.server's own refusals: a bad request line, headers too large, a method
                # without a do_<METHOD> (501).
                receiver._count("unsupported_method" if code == 501 else "bad_request")
                super().send_error(code, message, explain)

            def _refuse(self, refusal: Refusal) -> None:
                """Answer and count a request whose body is not read (whole): its connection
                is closed, the bytes left on it being unknown."""
                receiver._count(refusal.reason)
                self._reply(
                    refusal.status,
                    "text/plain; charset=utf-8",
                    refusal.message.encode(),
                    close=True,
                )

            def _reply(
                self,
                status: int,
                ctype: str,
                payload: bytes,
                headers: dict[str, str] | None = None,
                *,
                close: bool = False,
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                _log.debug("otlp-http %s - " + format, self.address_string(), *args)

        return Handler


class _TooLarge(Exception):
    pass


class _Budget:
    """A count of bytes shared by the request threads: ``acquire`` succeeds only within the
    limit (a single reservation larger than the limit succeeds when nothing else is held)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"max_inflight_bytes must be >= 1, got {limit}")
        self._limit = limit
        self._held = 0
        self._lock = threading.Lock()

    def acquire(self, n: int) -> bool:
        with self._lock:
            if self._held and self._held + n > self._limit:
                return False
            self._held += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self._held -= n


def _gunzip(body: bytes, limit: int) -> bytes:
    """Decompress a gzip body — every member, as RFC 1952 and ``gzip.decompress`` read it —
    refusing output beyond ``limit`` bytes in all (a gzip bomb)."""
    parts: list[bytes] = []
    size = 0
    rest = body
    while True:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        out = d.decompress(rest, limit - size + 1)
        size += len(out)
        if size > limit or d.unconsumed_tail:
            raise _TooLarge()
        tail = d.flush()
        size += len(tail)
        if size > limit:
            raise _TooLarge()
        if not d.eof:
            raise EOFError("truncated gzip stream")
        parts += [out, tail]
        rest = d.unused_data
        if not rest.strip(b"\x00"):  # trailing zero padding is allowed, as gzip allows it
            return b"".join(parts)


def _nesting_location(body: bytes, media: str) -> str:
    """Where a payload first nests deeper than the decoder can follow."""
    if media != _JSON:
        return "the message is nested deeper than the protobuf decoder allows"
    from ragtrace._nesting import too_deep_at

    where = too_deep_at(body)
    at = f" at byte {where.offset} (line {where.line}, column {where.column})" if where else ""
    return f"JSON nested deeper than {_JSON_DEPTH} levels{at}"


_JSON_DEPTH = 100


def _encode(message: Message, media: str) -> bytes:
    if media == _JSON:
        return str(json_format.MessageToJson(message, indent=None)).encode()
    return bytes(message.SerializeToString())
