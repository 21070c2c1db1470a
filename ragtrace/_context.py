"""Per-request state carried in the OpenTelemetry context: the active pipeline and the trace note.

The innermost ``@pipeline`` span travels as a value of the OTel context, so it follows the span
everywhere the span is current: into nested calls, into ``asyncio`` tasks (which copy the
context), and through the per-step context switches of generators. Threads started by the app do
not inherit it, exactly as they do not inherit the current span.

The *trace note* remembers, for one trace, which chunk texts a retrieval span recorded whole, so
the generation span of the same trace can record those chunks by ID only. It lives on the
pipeline frame when there is one (one mutable object, visible to every task of the request), else
in a context variable of the caller (visible to code that runs after the retrieval returns in the
same thread or task).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping

from opentelemetry import context as otel_context
from opentelemetry import trace

from ragtrace import _health, semconv
from ragtrace._recording import Recorder

__all__ = [
    "FRAME_KEY",
    "PipelineFrame",
    "TraceNote",
    "current_frame",
    "note_for",
    "set_attributes",
    "set_question_id",
]

FRAME_KEY = otel_context.create_key("ragtrace-pipeline")


class TraceNote:
    """Chunk ID -> text, for texts a retrieval span of trace ``trace_id`` recorded whole."""

    __slots__ = ("texts", "trace_id")

    def __init__(self, trace_id: int) -> None:
        self.trace_id = trace_id
        self.texts: dict[str, str] = {}


class PipelineFrame:
    """An active ``@pipeline`` span: its recorder (for set_question_id/set_attributes), its note."""

    __slots__ = ("note", "recorder")

    def __init__(
        self, recorder: Recorder | None, trace_id: int, parent: PipelineFrame | None
    ) -> None:
        self.recorder = recorder
        self.note: TraceNote = (
            parent.note
            if parent is not None and parent.note.trace_id == trace_id
            else TraceNote(trace_id)
        )


_loose_note: contextvars.ContextVar[TraceNote | None] = contextvars.ContextVar(
    "ragtrace_trace_note", default=None
)


def current_frame(ctx: otel_context.Context | None = None) -> PipelineFrame | None:
    frame = otel_context.get_value(FRAME_KEY, ctx)
    return frame if isinstance(frame, PipelineFrame) else None


def note_for(trace_id: int, create: bool) -> TraceNote | None:
    """The note of trace ``trace_id`` (made, outside a pipeline, when ``create``)."""
    frame = current_frame()
    if frame is not None and frame.note.trace_id == trace_id:
        return frame.note
    note = _loose_note.get()
    if note is not None and note.trace_id == trace_id:
        return note
    if create:
        note = TraceNote(trace_id)
        _loose_note.set(note)
        return note
    return None


def set_question_id(question_id: str | None) -> bool:
    """Record the labelled-question ID of the current request on its pipeline span.

    Applies to the innermost active ``@pipeline`` span, else to the current span if it is
    recording (an app's own root span). ``None`` does nothing. Returns whether it was recorded;
    never raises (a non-string is counted as an instrumentation error).
    """
    if question_id is None:
        return False
    if not isinstance(question_id, str) or not question_id:
        _health.report(
            "set_question_id",
            TypeError(f"question ID must be a non-empty str, got {question_id!r}"),
        )
        return False
    return _apply({semconv.RAGTRACE_QUESTION_ID: question_id})


def set_attributes(attributes: Mapping[str, object] | None = None, /, **more: object) -> bool:
    """Record user attributes (route, tenant, release…) on the current pipeline span, keys as given.

    Same target as :func:`set_question_id`. Values: ``str``/``bool``/``int``/``float`` or a list of
    one of those; anything else is recorded as ``str(value)``. Strings count against the span's
    size budget. Returns whether they were recorded; never raises.
    """
    merged: dict[str, object] = dict(attributes) if attributes else {}
    merged.update(more)
    return _apply(merged) if merged else False


def _apply(attributes: Mapping[str, object]) -> bool:
    try:
        frame = current_frame()
        if frame is not None:
            if frame.recorder is None:  # pipeline span not recording: nothing to do
                return False
            for key, value in attributes.items():
                frame.recorder.user_attribute(key, value)
            return True
        span = trace.get_current_span()
        if not span.is_recording():
            return False
        from ragtrace import _config

        settings = _config.current()
        recorder = Recorder(settings, settings.capture_content, None)
        recorder.attrs.clear()
        for key, value in attributes.items():
            recorder.user_attribute(key, value)
        recorder.flush(span)
        return True
    except Exception as exc:  # noqa: BLE001
        _health.report("set_attributes", exc)
        return False
