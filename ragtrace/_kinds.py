"""The three span kinds: what a retrieval, a generation and a pipeline span record, and when.

A :class:`Spec` is built once per decorated function; :meth:`Spec.start` opens the span of one call
and returns an :class:`Active` that the call drivers (``_decorators``) feed with the result, the
streamed items or the exception. Values are read from the arguments when the call starts and
written when it ends, in budget order: IDs and scores, the query, the answer, then chunk texts —
so under a tight size budget chunk texts give way first.

Nothing here raises into the host: every step that touches user data runs under ``try`` and a
failure is counted on the span (``ragtrace.instrumentation.errors``) and in the SDK counters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from ragtrace import semconv
from ragtrace._arguments import MISSING, ArgRef
from ragtrace._config import Redactor, Settings
from ragtrace._context import FRAME_KEY, PipelineFrame, current_frame, note_for
from ragtrace._recording import CONTEXT_KEYS, RETRIEVAL_KEYS, Recorder, answer_text
from ragtrace._stability import gen_ai_latest_experimental
from ragtrace._version import __version__
from ragtrace.chunks import ExtractedChunk, Extractor, extract_chunks

__all__ = ["GENERATE", "PIPELINE", "RETRIEVE", "Active", "Spec", "tracer"]

RETRIEVE, GENERATE, PIPELINE = (
    semconv.SpanKind.RETRIEVER,
    semconv.SpanKind.LLM,
    semconv.SpanKind.CHAIN,
)
_QUERY_ATTRS = ("query_str", "query", "text")  # LlamaIndex QueryBundle and the like

_tracer: trace.Tracer | None = None


def top_k_key() -> str:
    """The retrieval k's attribute in the conventions followed (ragtrace._stability)."""
    if gen_ai_latest_experimental():
        return semconv.GEN_AI_RETRIEVAL_TOP_K
    return semconv.GEN_AI_REQUEST_TOP_K


def tracer() -> trace.Tracer:
    """Our tracer from the global provider (a proxy until the app sets one, then the real one)."""
    global _tracer
    t = _tracer
    if t is None:
        schema = semconv.SCHEMA_URL if gen_ai_latest_experimental() else semconv.LEGACY_SCHEMA_URL
        t = _tracer = trace.get_tracer(
            semconv.INSTRUMENTATION_SCOPE, __version__, schema_url=schema
        )
    return t


class Spec:
    """How one decorated function is traced (fixed when decorating)."""

    __slots__ = (
        "answer_of",
        "capture",
        "context",
        "fixed",
        "id_of",
        "kind",
        "model",
        "model_static",
        "named",
        "query",
        "question_id",
        "redact",
        "score_of",
        "span_name",
        "static_user",
        "text_of",
        "top_k",
    )  # fmt: skip

    def __init__(
        self,
        kind: str,
        span_name: str,
        *,
        fixed: Mapping[str, Any],
        query: ArgRef | None,
        context: ArgRef | None = None,
        model: ArgRef | None = None,
        model_static: str | None = None,
        top_k: ArgRef | None = None,
        capture: bool | None = None,
        redact: Redactor | None = None,
        id_of: Extractor | None = None,
        text_of: Extractor | None = None,
        score_of: Extractor | None = None,
        answer_of: Extractor | None = None,
        question_id: str | None = None,
        static_user: Mapping[str, object] | None = None,
        named: bool = False,
    ) -> None:
        self.kind = kind
        self.span_name = span_name
        self.named = named
        """The user gave the span its name (never replaced by the conventions' name)."""
        self.fixed = dict(fixed)
        self.query, self.context, self.model, self.top_k = query, context, model, top_k
        self.model_static = model_static
        self.capture, self.redact = capture, redact
        self.id_of, self.text_of, self.score_of, self.answer_of = (
            id_of,
            text_of,
            score_of,
            answer_of,
        )
        self.question_id = question_id
        self.static_user = dict(static_user or {})

    def start(
        self,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        settings: Settings,
        parent: otel_context.Context | None = None,
    ) -> Active:
        """Open this call's span (child of ``parent``, default: the current context)."""
        latest = self.kind is RETRIEVE and gen_ai_latest_experimental()
        if latest:  # the GenAI retrieval span (ragtrace._stability)
            source = self.fixed.get(semconv.GEN_AI_DATA_SOURCE_ID)
            conventional = f"retrieval {source}" if source else "retrieval"
            span = tracer().start_span(
                self.span_name if self.named else conventional,
                context=parent,
                kind=trace.SpanKind.CLIENT,
            )
        else:
            span = tracer().start_span(self.span_name, context=parent)
        ctx = trace.set_span_in_context(span, parent)
        if not span.is_recording():
            return Active(self, span, ctx, None)
        capture = settings.capture_content if self.capture is None else self.capture
        rec = Recorder(settings, capture, settings.redact if self.redact is None else self.redact)
        rec.attrs.update(self.fixed)
        if latest and semconv.GEN_AI_REQUEST_TOP_K in rec.attrs:
            rec.attrs[semconv.GEN_AI_RETRIEVAL_TOP_K] = rec.attrs.pop(semconv.GEN_AI_REQUEST_TOP_K)
        active = Active(self, span, ctx, rec)
        try:
            active.begin(args, kwargs)
        except Exception as exc:  # noqa: BLE001
            rec.fail("reading arguments", exc)
        if self.kind is PIPELINE:
            frame = PipelineFrame(rec, span.get_span_context().trace_id, current_frame(parent))
            active.ctx = otel_context.set_value(FRAME_KEY, frame, ctx)
        return active


class Active:
    """One traced call in progress. ``ctx`` is the context to make current while its code runs."""

    __slots__ = (
        "chunks",
        "ctx",
        "model",
        "query",
        "rec",
        "span",
        "spec",
        "stream",
        "stream_chars",
        "top_k"
    )  # fmt: skip

    def __init__(
        self, spec: Spec, span: Span, ctx: otel_context.Context, rec: Recorder | None
    ) -> None:
        self.spec, self.span, self.ctx, self.rec = spec, span, ctx, rec
        self.query: str | None = None
        self.chunks: tuple[ExtractedChunk, ...] | None = None
        self.model: str | None = None
        self.top_k: int | None = None
        self.stream: list[Any] | None = None
        self.stream_chars = 0

    # -- reading the arguments (call start) ------------------------------------------------
    def begin(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        spec, rec = self.spec, self.rec
        assert rec is not None
        if spec.question_id is not None:
            rec.text(semconv.RAGTRACE_QUESTION_ID, spec.question_id)
        for key, value in spec.static_user.items():
            rec.user_attribute(key, value)
        if spec.query is not None:
            self.query = self._query(spec.query.get(args, kwargs))
        if spec.model_static is not None:
            self.model = spec.model_static
        elif spec.model is not None:
            value = spec.model.get(args, kwargs)
            self.model = value if isinstance(value, str) and value else None
        if spec.top_k is not None:
            value = spec.top_k.get(args, kwargs)
            if isinstance(value, int) and not isinstance(value, bool):
                self.top_k = value
        if spec.kind is GENERATE and spec.context is not None:
            value = spec.context.get(args, kwargs)
            if value is not MISSING and value is not None:
                self.chunks = self._extract(value)

    def _query(self, value: Any) -> str | None:
        if isinstance(value, str):
            return value
        if value is MISSING or value is None:
            return None
        for name in _QUERY_ATTRS:
            found = getattr(value, name, None)
            if isinstance(found, str):
                return found
        if self.spec.kind is not PIPELINE:  # a pipeline's first argument need not be a query
            assert self.rec is not None
            self.rec.fail(
                "finding the query", TypeError(f"query is a {type(value).__name__}, not str")
            )
        return None

    def _extract(self, items: Any) -> tuple[ExtractedChunk, ...] | None:
        spec = self.spec
        try:
            return extract_chunks(
                items, id_of=spec.id_of, text_of=spec.text_of, score_of=spec.score_of
            )
        except Exception as exc:  # noqa: BLE001
            assert self.rec is not None
            self.rec.fail("chunk extraction", exc)
            return None

    # -- results -----------------------------------------------------------------------------
    def observe(self, item: Any) -> None:
        """One item yielded by a generator function (a chunk, or a piece of the answer)."""
        if self.rec is None:
            return
        stream = self.stream
        if stream is None:
            stream = self.stream = []
        if self.spec.kind is RETRIEVE:
            stream.append(item)
        elif self.stream_chars <= self.rec.max_len:
            # Keep one character past the cap, so recording it cuts and marks it truncated.
            stream.append(item)
            self.stream_chars += len(item) if isinstance(item, str) else 1

    def succeed(self, result: Any) -> None:
        try:
            if self.rec is not None:
                self._record(result)
        finally:
            self._end()

    def finish_stream(self) -> None:
        """The generator finished or was closed: record what it yielded."""
        try:
            if self.rec is not None:
                self.rec.attrs[semconv.RAGTRACE_STREAMED] = True
                self._record(self.stream or [], streamed=True)
        finally:
            self._end()

    def fail(self, exc: BaseException) -> None:
        """The user's function raised ``exc``: record it (and what is known so far), end the span."""
        try:
            if self.rec is not None:
                if self.stream is not None:
                    self.rec.attrs[semconv.RAGTRACE_STREAMED] = True
                    self._record(self.stream, streamed=True)  # what was yielded before the error
                else:
                    self._write(None, None)
                self.span.record_exception(exc, escaped=True)
                self.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        except Exception as inner:  # noqa: BLE001
            self.rec.fail("recording the exception", inner)  # type: ignore[union-attr]
        finally:
            self._end()

    def _record(self, result: Any, streamed: bool = False) -> None:
        rec = self.rec
        assert rec is not None
        answer: tuple[str, bool] | None = None
        retrieved: tuple[ExtractedChunk, ...] | None = None
        try:
            if self.spec.kind is RETRIEVE:
                retrieved = self._extract(result)
            elif streamed:
                answer = _join(self.spec, result)
            else:
                answer = (
                    answer_text(self.spec.answer_of(result))
                    if self.spec.answer_of is not None
                    else answer_text(result)
                )
        except Exception as exc:  # noqa: BLE001
            rec.fail("reading the result", exc)
        self._write(retrieved, answer)

    def _write(
        self, retrieved: tuple[ExtractedChunk, ...] | None, answer: tuple[str, bool] | None
    ) -> None:
        rec, spec = self.rec, self.spec
        assert rec is not None
        try:
            trace_id = self.span.get_span_context().trace_id
            if self.model is not None:
                rec.text(semconv.LLM_MODEL_NAME, self.model)
                rec.attrs[semconv.GEN_AI_REQUEST_MODEL] = rec.attrs[semconv.LLM_MODEL_NAME]
            if self.top_k is not None:
                rec.attrs[top_k_key()] = self.top_k
            if retrieved is not None:
                rec.ids(retrieved, RETRIEVAL_KEYS)
            if self.chunks is not None:
                rec.ids(self.chunks, CONTEXT_KEYS)
            if self.query is not None:
                rec.query(self.query)
                if spec.kind is RETRIEVE and rec.capture:
                    rec.content(semconv.GEN_AI_RETRIEVAL_QUERY_TEXT, self.query)
            if answer is not None:
                outcome = rec.content(semconv.OUTPUT_VALUE, answer[0])
                if answer[1] and outcome:
                    rec.attrs[semconv.OUTPUT_MIME_TYPE] = "application/json"
            if retrieved is not None:
                rec.whole(
                    semconv.GEN_AI_RETRIEVAL_DOCUMENTS,
                    _documents_json(retrieved, rec.max_documents),
                )
                note = note_for(trace_id, create=rec.capture)
                rec.texts(
                    retrieved, RETRIEVAL_KEYS, recorded=note.texts if note is not None else None
                )
            if self.chunks is not None:
                note = note_for(trace_id, create=False)
                rec.texts(self.chunks, CONTEXT_KEYS, known=note.texts if note is not None else None)
        except Exception as exc:  # noqa: BLE001
            rec.fail("recording attributes", exc)

    def _end(self) -> None:
        try:
            if self.rec is not None:
                self.rec.flush(self.span)
        except Exception as exc:  # noqa: BLE001
            self.rec.fail("setting attributes", exc)  # type: ignore[union-attr]
        finally:
            self.span.end()


def _join(spec: Spec, pieces: list[Any]) -> tuple[str, bool] | None:
    parts: list[str] = []
    for piece in pieces:
        got = answer_text(spec.answer_of(piece) if spec.answer_of is not None else piece)
        if got is not None:
            parts.append(got[0])
    return ("".join(parts), False) if parts else None


_json_str: Any = json.encoder.encode_basestring


def _documents_json(chunks: tuple[ExtractedChunk, ...], limit: int) -> str:
    """``[{"id": …, "score": …}, …]`` as compact JSON, built directly (this runs on every call)."""
    parts = []
    for c in chunks[:limit]:
        score = c.score
        if score is None:
            parts.append(f'{{"id":{_json_str(c.id)}}}')
        elif math.isfinite(score):
            parts.append(f'{{"id":{_json_str(c.id)},"score":{float.__repr__(score)}}}')
        else:
            parts.append(f'{{"id":{_json_str(c.id)},"score":{json.dumps(score)}}}')
    return "[" + ",".join(parts) + "]"
