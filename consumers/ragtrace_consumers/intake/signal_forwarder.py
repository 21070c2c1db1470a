"""Forwards the metrics and logs an app sends to ``ragtrace serve`` on to its OTLP endpoint.

An app that exports every signal to the evaluator (one ``OTEL_EXPORTER_OTLP_ENDPOINT``) keeps
its metrics and logs: each request body is re-posted unchanged (same content type and
encoding) to ``endpoint`` + its path, on a daemon thread, so the app's request is answered at
once. Bounded: beyond ``max_queue`` waiting requests, new ones are dropped with a warning
(never block the receiver). A failed forward is logged once per path; a signal the endpoint
refuses (404/405/415/501, :mod:`~ragtrace_consumers.writeback.refused_signals`) is not forwarded
again, and the warning about it is shared with the evaluator's own exporters.
"""

from __future__ import annotations

import logging
import queue
import threading
import urllib.error
import urllib.request

from ragtrace.masking import mask_url
from ragtrace_consumers.model import Admission, SpanRecord
from ragtrace_consumers.writeback.refused_signals import RefusedSignals, signal_of_path

__all__ = ["SignalForwarder", "decode_log_events"]

_log = logging.getLogger(__name__)


class SignalForwarder:
    """``forwarder(path, content_type, content_encoding, body)``: queue one request."""

    def __init__(
        self,
        endpoint: str,
        *,
        timeout_s: float = 10.0,
        max_queue: int = 256,
        refusals: RefusedSignals | None = None,
    ) -> None:
        self._endpoint = endpoint.rstrip("/")
        self._refusals = refusals or RefusedSignals(endpoint, {})
        self._timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, str, str, bytes]] = queue.Queue(max_queue)
        self._warned: set[str] = set()
        self.forwarded = 0
        self._thread = threading.Thread(target=self._run, name="ragtrace-forward", daemon=True)
        self._thread.start()

    def __call__(self, path: str, content_type: str, encoding: str, body: bytes) -> None:
        signal = signal_of_path(path)
        if signal is not None and self._refusals.is_off(signal):
            return
        try:
            self._queue.put_nowait((path, content_type, encoding, body))
        except queue.Full:
            self._warn(path, "forwarding queue full: request dropped")

    def _warn(self, path: str, message: str) -> None:
        if path not in self._warned:
            self._warned.add(path)
            _log.warning("%s %s (logged once)", path, message)

    def _run(self) -> None:
        while True:
            path, ctype, encoding, body = self._queue.get()
            headers = {"Content-Type": ctype or "application/x-protobuf"}
            if encoding:
                headers["Content-Encoding"] = encoding
            request = urllib.request.Request(
                self._endpoint + path, data=body, headers=headers, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=self._timeout_s):
                    self.forwarded += 1
            except urllib.error.HTTPError as exc:
                signal = signal_of_path(path)
                if signal is None or not self._refusals.refused(signal, exc.code):
                    self._warn(path, f"not forwarded to {mask_url(self._endpoint)}: {exc}")
            except (urllib.error.URLError, OSError) as exc:
                self._warn(path, f"not forwarded to {mask_url(self._endpoint)}: {exc}")


def decode_log_events(
    content_type: str, encoding: str, body: bytes, admission: Admission | None = None
) -> list[SpanRecord]:
    """The GenAI content events of an OTLP logs request (protobuf or JSON, optionally gzip) as
    spans (:func:`~ragtrace_consumers.readers.genai_logs.spans_from_logs`); [] for a request
    that cannot be decoded (logged once). With ``admission``, only those of the traces it
    admits (the same decision as for the traces' own spans)."""
    import gzip
    import json

    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

    from ragtrace_consumers.intake.decode import _convert_ids
    from ragtrace_consumers.readers.genai_logs import spans_from_logs

    request = logs_service_pb2.ExportLogsServiceRequest()
    try:
        if encoding.strip().lower() == "gzip":
            body = gzip.decompress(body)
        if "json" in content_type.lower():
            document = json.loads(body)
            # OTLP/JSON IDs are hex; the generic protobuf JSON parser expects base64.
            for rl in document.get("resourceLogs") or document.get("resource_logs") or []:
                for sl in rl.get("scopeLogs") or rl.get("scope_logs") or []:
                    for record in sl.get("logRecords") or sl.get("log_records") or []:
                        _convert_ids(record, "logRecord")
            json_format.ParseDict(document, request, ignore_unknown_fields=True)
        else:
            request.ParseFromString(body)
        spans = spans_from_logs(request)
    except Exception:  # noqa: BLE001 - a bad logs request never fails the receiver
        _log.warning("cannot decode an OTLP logs request", exc_info=True)
        return []
    return spans if admission is None else admission.admit_records(spans)
