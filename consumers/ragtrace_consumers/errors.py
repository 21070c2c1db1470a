"""The service's exceptions that cross a seam, all under :class:`ragtrace.errors.RagtraceError`.

Each keeps its former standard-library base as a second base, so an ``except ValueError`` (or
``RuntimeError``) written before keeps catching it. Where each is raised and who catches it:

* :class:`DecodeError` — intake (:mod:`~ragtrace_consumers.intake.decode`): a payload that cannot
  become spans; the Kafka runner dead-letters the message, the receiver answers 400.
* :class:`ReceiverBusy`, :class:`RequestTooLarge` — a span sink of the OTLP/HTTP receiver
  refuses a request (503 with ``Retry-After``, or 413).
* :class:`StoreFull` — the SQLite trace store refuses an append that would cross its bound.
* :class:`WriteBackError` — a score sink could not deliver; the trace is parked and retried.
* :class:`LabelConflict` — a label store refuses to replace a labelled question that changed
  since the caller read it (the web view answers 409 and shows the label as it is now).
* :class:`DependencyUnavailable` — start-up gave up waiting for Redis or Kafka.
* :class:`CannotListen` — a listener (``serve``'s OTLP receiver and metrics endpoint,
  ``consume``'s health endpoint) could not bind its address; the commands print its message and
  exit 2 (:mod:`ragtrace_consumers.commands.listen_errors`).
* :class:`ConfigError` — a bad setting: the settings (:mod:`ragtrace_consumers.config`, which
  re-exports it) and the checks of the rooms that refuse a configuration at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.errors import RagtraceError

__all__ = [
    "DECODE_REASONS",
    "CannotListen",
    "ConfigError",
    "DependencyUnavailable",
    "DecodeError",
    "Held",
    "LabelConflict",
    "NotRecorded",
    "ReceiverBusy",
    "RequestTooLarge",
    "StoreFull",
    "WriteBackError",
]

REASON_EMPTY = "empty_payload"
REASON_PROTOBUF = "protobuf_parse_error"
REASON_JSON = "json_parse_error"
REASON_JSON_SCHEMA = "json_schema_error"
REASON_TRACE_ID = "bad_trace_id"
REASON_SPAN_ID = "bad_span_id"
REASON_PARENT_ID = "bad_parent_span_id"
DECODE_REASONS: frozenset[str] = frozenset(
    {
        REASON_EMPTY,
        REASON_PROTOBUF,
        REASON_JSON,
        REASON_JSON_SCHEMA,
        REASON_TRACE_ID,
        REASON_SPAN_ID,
        REASON_PARENT_ID,
    }
)
"""Every value :attr:`DecodeError.reason` takes (bounded: safe as a metric attribute)."""

DLQ_HEADER_REASON = "ragtrace.dlq.reason"
DLQ_HEADER_DETAIL = "ragtrace.dlq.detail"
_DETAIL_MAX = 1000


class DecodeError(RagtraceError, ValueError):
    """A payload that cannot be decoded: ``reason`` (one of :data:`DECODE_REASONS`) and
    ``detail``, which says exactly what and where."""

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in DECODE_REASONS:
            raise ValueError(f"unknown decode error reason {reason!r}")
        self.reason = reason
        self.detail = detail[:_DETAIL_MAX]
        super().__init__(f"{reason}: {self.detail}" if self.detail else reason)

    def headers(self) -> list[tuple[str, bytes]]:
        """Kafka headers for the dead-letter copy of the message."""
        return [
            (DLQ_HEADER_REASON, self.reason.encode()),
            (DLQ_HEADER_DETAIL, self.detail.encode("utf-8", "replace")),
        ]


class ReceiverBusy(RagtraceError):
    """Raised by a sink that cannot take more spans now; the client retries after a delay."""

    def __init__(self, message: str = "evaluator busy", retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RequestTooLarge(RagtraceError):
    """Raised by a sink for a request that can never be taken whole (413: do not retry)."""


@dataclass(frozen=True)
class Held:
    """What a bounded store holds (or a request would add): traces and span bytes."""

    traces: int
    bytes: int


class StoreFull(RagtraceError):
    """An append refused whole because it would cross the store's bound."""

    def __init__(self, held: Held, adding: Held, limit: Held) -> None:
        super().__init__(
            f"holding {held.traces} traces ({held.bytes} bytes); this request adds "
            f"up to {adding.traces} traces ({adding.bytes} bytes); the bound is "
            f"{limit.traces} traces, {limit.bytes} bytes"
        )
        self.held = held
        self.adding = adding


class WriteBackError(RagtraceError):
    """The evaluation span could not be delivered; the trace is parked and retried."""


class NotRecorded(WriteBackError):
    """The scores could not even be recorded (the embedded evaluator's results table): unlike
    a failed delivery, their metrics are not counted until a retry records them."""


class LabelConflict(RagtraceError):
    """A labelled question changed since the caller read it: ``qid``, the ``expected`` version
    (``""``: not labelled) and the ``current`` one (``""``: not labelled any more; None: other
    saves kept changing the set, so none could be checked against it)."""

    def __init__(self, qid: str, expected: str, current: str | None) -> None:
        was = f"version {expected}" if expected else "no label"
        if current is None:
            message = f"the label set kept changing under other saves; question {qid} not saved"
        else:
            now = f"version {current}" if current else "no label"
            message = (
                f"the label of question {qid} changed since it was read ({was} then, {now} now)"
            )
        super().__init__(message)
        self.qid = qid
        self.expected = expected
        self.current = current


class DependencyUnavailable(RagtraceError, RuntimeError):
    """A dependency did not answer within the start-up wait."""

    def __init__(self, name: str, address: str, waited_s: float, error: BaseException) -> None:
        kind = type(error).__name__
        detail = " ".join(str(error).split())
        if not detail.startswith(kind):  # kafka-python's errors already start with their name
            detail = f"{kind}: {detail}" if detail else kind
        super().__init__(f"{name} at {address} unavailable after {waited_s:.0f} s: {detail[:200]}")
        self.name = name
        self.address = address


class CannotListen(RagtraceError, OSError):
    """A listener could not bind its address (busy, not local, not permitted); the message names
    the listener and the address, e.g. ``the OTLP receiver cannot listen on 127.0.0.1:4318:
    address already in use``."""

    def __init__(self, listener: str, host: str, port: int, error: OSError) -> None:
        reason = (error.strerror or str(error)).lower()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        super().__init__(error.errno, f"{listener} cannot listen on {where}: {reason}")
        self.listener = listener
        self.host = host
        self.port = port

    def __str__(self) -> str:
        return str(self.strerror)


class ConfigError(RagtraceError, ValueError):
    """A configuration value is invalid; the message names the key, the value and its source."""
