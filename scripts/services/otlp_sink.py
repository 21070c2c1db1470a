"""A small OTLP/HTTP receiver that records every span: stands in for the user's trace backend.

It accepts ``POST /v1/traces`` (protobuf, optionally gzip-encoded, as the collector's
``otlphttp`` exporter sends it), decodes each ``ExportTraceServiceRequest`` with
``opentelemetry-proto`` and keeps the spans as flat :class:`ReceivedSpan` values, each with the
time it arrived (:meth:`OtlpSink.spans_since`); ``/v1/logs`` likewise as :class:`ReceivedLog`
values. ``/v1/metrics`` is accepted and counted only. ``refuse`` makes it a backend that does
not take some signals (``{"logs": 405}``: a trace backend such as Phoenix): those requests are
answered with that status and counted in ``refused`` (:meth:`OtlpSink.set_refusal` changes it
while running). Tests wait with
:meth:`OtlpSink.wait_for_spans` and :meth:`OtlpSink.wait_for_logs`.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from .process import free_port

__all__ = [
    "OtlpSink",
    "ReceivedLog",
    "ReceivedSpan",
    "any_value",
    "logs_of_request",
    "spans_of_request",
]

_Item = TypeVar("_Item")


def any_value(value: Any) -> object:
    """An OTLP ``AnyValue`` as a Python value (arrays become tuples, kvlists dicts)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(any_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _attributes(kvs: Any) -> dict[str, object]:
    return {kv.key: any_value(kv.value) for kv in kvs}


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the backend received it. IDs are lowercase hex ('' for no parent)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    attributes: Mapping[str, object]
    resource: Mapping[str, object]
    scope: str
    status_code: int
    events: tuple[tuple[str, Mapping[str, object]], ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    start_ns: int = 0
    end_ns: int = 0
    raw: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ReceivedLog:
    """One log record as the backend received it. IDs are lowercase hex ('' when absent)."""

    trace_id: str
    span_id: str
    event_name: str
    attributes: Mapping[str, object]
    resource: Mapping[str, object]
    scope: str
    scope_version: str
    schema_url: str
    time_ns: int = 0


def logs_of_request(body: bytes) -> list[ReceivedLog]:
    """Decode a serialized ``ExportLogsServiceRequest`` into flat log records."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    return [
        ReceivedLog(
            trace_id=r.trace_id.hex(),
            span_id=r.span_id.hex(),
            event_name=r.event_name,
            attributes=_attributes(r.attributes),
            resource=_attributes(rl.resource.attributes),
            scope=sl.scope.name,
            scope_version=sl.scope.version,
            schema_url=sl.schema_url,
            time_ns=int(r.time_unix_nano),
        )
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    ]


def spans_of_request(body: bytes) -> list[ReceivedSpan]:
    """Decode a serialized ``ExportTraceServiceRequest`` into flat spans."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return _flatten(request)


def _flatten(request: Any) -> list[ReceivedSpan]:
    out: list[ReceivedSpan] = []
    for rs in request.resource_spans:
        resource = _attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    ReceivedSpan(
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        name=s.name,
                        kind=int(s.kind),
                        attributes=_attributes(s.attributes),
                        resource=resource,
                        scope=ss.scope.name,
                        status_code=int(s.status.code),
                        events=tuple((e.name, _attributes(e.attributes)) for e in s.events),
                        links=tuple((ln.trace_id.hex(), ln.span_id.hex()) for ln in s.links),
                        start_ns=int(s.start_time_unix_nano),
                        end_ns=int(s.end_time_unix_nano),
                        raw=s,
                    )
                )
    return out


class OtlpSink:
    """An in-process OTLP/HTTP trace receiver on 127.0.0.1; use as a context manager or
    ``start()``/``stop()``. ``endpoint`` is the base URL to give an ``otlphttp`` exporter."""

    def __init__(self, port: int | None = None, *, refuse: Mapping[str, int] | None = None) -> None:
        self._port = port or 0
        self._refuse = dict(refuse or {})
        self.refused: dict[str, int] = {"traces": 0, "metrics": 0, "logs": 0}
        self._lock = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self._logs: list[ReceivedLog] = []
        self._arrived: list[float] = []  # time.monotonic() each span arrived, as _spans
        self.requests: dict[str, int] = {"traces": 0, "metrics": 0, "logs": 0}
        self.errors: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> OtlpSink:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, and no ~40 ms Nagle/delayed-ACK stall between the reply's header and
            # body writes: exporters see the latency of a real collector.
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                sink._handle(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port or free_port()), Handler)
        self._server.daemon_threads = True
        self._port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="otlp-sink", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OtlpSink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_refusal(self, signal: str, status: int | None) -> None:
        """From now on answer ``signal``'s requests with ``status`` (None: take them again): an
        outage (503) that ends while the test runs."""
        with self._lock:
            if status is None:
                self._refuse.pop(signal, None)
            else:
                self._refuse[signal] = status

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    # -- reading ---------------------------------------------------------------------------
    def spans(self, predicate: Callable[[ReceivedSpan], bool] | None = None) -> list[ReceivedSpan]:
        """Every span received so far (in arrival order) that matches ``predicate``."""
        with self._lock:
            return [s for s in self._spans if predicate is None or predicate(s)]

    def wait_for_spans(
        self,
        predicate: Callable[[ReceivedSpan], bool] | None = None,
        count: int = 1,
        timeout: float = 15.0,
    ) -> list[ReceivedSpan]:
        """Block until at least ``count`` matching spans arrived; return all matching ones.

        Raises TimeoutError naming how many matched and how many spans arrived in total."""
        return self._wait(self._spans, "spans", predicate, count, timeout)

    def wait_for_logs(
        self,
        predicate: Callable[[ReceivedLog], bool] | None = None,
        count: int = 1,
        timeout: float = 15.0,
    ) -> list[ReceivedLog]:
        """Block until at least ``count`` matching log records arrived; return all matching
        ones. Raises TimeoutError naming how many matched."""
        return self._wait(self._logs, "log records", predicate, count, timeout)

    def _wait(
        self,
        received: list[_Item],
        what: str,
        predicate: Callable[[_Item], bool] | None,
        count: int,
        timeout: float,
    ) -> list[_Item]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = [r for r in received if predicate is None or predicate(r)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"OTLP sink: {len(found)} of {count} expected {what} after {timeout} s "
                        f"({len(received)} {what} received in total; errors: {self.errors})"
                    )
                self._lock.wait(left)

    def spans_since(self, cursor: int) -> tuple[list[tuple[float, ReceivedSpan]], int]:
        """The spans that arrived after the first ``cursor`` ones, each with its arrival time
        (``time.monotonic()``), and the cursor to pass next time."""
        with self._lock:
            end = len(self._spans)
            return list(zip(self._arrived[cursor:end], self._spans[cursor:end], strict=True)), end

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        """Every span received for one trace (hex ID)."""
        return self.spans(lambda s: s.trace_id == trace_id)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()
            self._logs.clear()
            self._arrived.clear()

    # -- HTTP ------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        signal = h.path.rstrip("/").rsplit("/", 1)[-1]
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length)
        try:
            encoding = (h.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            elif encoding not in ("", "identity"):
                raise ValueError(f"unsupported Content-Encoding {encoding!r}")
            if signal not in self.requests:
                h.send_error(404, f"no such OTLP signal: {h.path}")
                return
            with self._lock:
                status = self._refuse.get(signal)
                if status is not None:
                    self.refused[signal] += 1
            if status is not None:
                h.send_error(status, f"{h.path} not served here")
                return
            if signal == "traces":
                received = self._decode_traces(body, h.headers.get("Content-Type") or "")
                with self._lock:
                    self._spans.extend(received)
                    self._arrived.extend([time.monotonic()] * len(received))
                    self.requests["traces"] += 1
                    self._lock.notify_all()
            elif signal == "logs":
                if "protobuf" not in (h.headers.get("Content-Type") or ""):
                    raise ValueError("only application/x-protobuf is accepted")
                records = logs_of_request(body)
                with self._lock:
                    self._logs.extend(records)
                    self.requests["logs"] += 1
                    self._lock.notify_all()
            else:
                with self._lock:
                    self.requests[signal] += 1
        except Exception as exc:  # noqa: BLE001 (a bad request is recorded for the test)
            with self._lock:
                self.errors.append(f"{h.path}: {exc!r}")
            h.send_error(400, str(exc))
            return
        h.send_response(200)  # an empty Export*ServiceResponse: everything accepted
        h.send_header("Content-Type", "application/x-protobuf")
        h.send_header("Content-Length", "0")
        h.end_headers()

    @staticmethod
    def _decode_traces(body: bytes, content_type: str) -> list[ReceivedSpan]:
        if "protobuf" not in content_type:
            raise ValueError(f"only application/x-protobuf is accepted, not {content_type!r}")
        return spans_of_request(body)


def main(argv: list[str] | None = None) -> None:
    """``python -m scripts.services.otlp_sink --port N``: a stand-in trace backend that prints
    one line per received span (the dev stack runs it when no real backend is configured)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    sink = OtlpSink(args.port).start()
    print(f"OTLP/HTTP trace sink listening on {sink.endpoint}", flush=True)
    shown = 0
    try:
        while True:
            try:
                spans = sink.wait_for_spans(count=shown + 1, timeout=3600)
            except TimeoutError:
                continue
            for s in spans[shown:]:
                print(
                    f"trace={s.trace_id} span={s.span_id} parent={s.parent_span_id or '-'} "
                    f"service={s.resource.get('service.name')} name={s.name} "
                    f"attributes={len(s.attributes)}",
                    flush=True,
                )
            shown = len(spans)
    except KeyboardInterrupt:
        pass
    finally:
        sink.stop()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
