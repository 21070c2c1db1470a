"""The ordered set of readers every span is offered to, first taker wins.

Order: the configured in-house mapping (explicit configuration beats inference), ragtrace's
own scope, then the dialects whose marker attribute is the most specific: Langfuse
(``langfuse.observation.type``), MLflow (``mlflow.spanType``), OpenInference
(``openinference.span.kind``), OpenLLMetry (``traceloop.span.kind``), the Vercel AI SDK
(``ai.operationId``), and last the GenAI conventions (``gen_ai.operation.name``), which
the others' spans may also carry. Our own evaluation spans are never read.

The process-wide set (:func:`default_readers`) is replaced once at start-up by the wiring that
knows the configuration (:func:`use_readers`), so the pure assembly functions need no extra
argument; tests pass a :class:`SpanReaders` explicitly.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ragtrace import semconv
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers import chunks as chunk_ids
from ragtrace_consumers.readers._reading import Reader, SpanReading
from ragtrace_consumers.readers.genai import GenAIReader
from ragtrace_consumers.readers.langfuse import LangfuseReader
from ragtrace_consumers.readers.mapping import MappingReader, MappingRules
from ragtrace_consumers.readers.mlflow import MlflowReader
from ragtrace_consumers.readers.openinference import OpenInferenceReader
from ragtrace_consumers.readers.ragtrace import RagtraceReader
from ragtrace_consumers.readers.traceloop import TraceloopReader
from ragtrace_consumers.readers.vercel import VercelReader

__all__ = ["SpanReaders", "default_readers", "is_evaluation_span"]


def is_evaluation_span(span: SpanRecord) -> bool:
    """True for spans the consumers wrote back: never scored."""
    return (
        span.scope == semconv.EVALUATION_SCOPE or span.attributes.get(semconv.EVAL_MARKER) is True
    )


class SpanReaders:
    """Offers a span to each reader in turn; :meth:`read` is None for an unrecognised span.
    ``system_context`` is how the view built from these readings treats a system message
    (configuration: ``mapping.system_context``)."""

    def __init__(
        self, readers: Sequence[Reader], *, memo_size: int = 4096, system_context: bool = False
    ) -> None:
        self.readers = tuple(readers)
        self.system_context = system_context
        # The same span is read several times: at ingest (count unrecognised, select, schedule)
        # and again when its trace is scored, by then often a copy loaded from the trace store.
        # The latest readings are remembered by span ID; one is reused only for a span equal to
        # the one it was read from (a reading depends on the span's content alone).
        self._memo: dict[tuple[str, str], tuple[SpanRecord, SpanReading | None]] = {}
        self._memo_size = memo_size

    @classmethod
    def build(
        cls,
        mapping: MappingRules | None = None,
        metadata_id_keys: Sequence[str] = chunk_ids.DEFAULT_METADATA_ID_KEYS,
        retrieval_tools: Collection[str] = (),
        *,
        system_context: bool = False,
    ) -> SpanReaders:
        """The readers in order; ``retrieval_tools`` names the tools whose calls are retrieval
        steps whatever they return; ``system_context`` lets a system message be the context of
        an answer that has no other (``mapping.system_context``)."""
        keys = tuple(metadata_id_keys)
        readers: list[Reader] = []
        if mapping is not None and mapping.enabled:
            readers.append(MappingReader(mapping, keys))
        readers += [
            RagtraceReader(),
            LangfuseReader(keys),
            MlflowReader(keys, retrieval_tools),
            OpenInferenceReader(keys, retrieval_tools),
            TraceloopReader(keys),
            VercelReader(keys, retrieval_tools),
            GenAIReader(keys, retrieval_tools),
        ]
        return cls(readers, system_context=system_context)

    def read(self, span: SpanRecord) -> SpanReading | None:
        key = (span.trace_id, span.span_id)
        hit = self._memo.get(key)
        if hit is not None and (hit[0] is span or hit[0] == span):
            return hit[1]
        reading = self._read(span)
        if len(self._memo) >= self._memo_size:
            self._memo = {}
        self._memo[key] = (span, reading)
        return reading

    def _read(self, span: SpanRecord) -> SpanReading | None:
        if is_evaluation_span(span):
            return None
        for reader in self.readers:
            reading = reader.read(span)
            if reading is not None:
                return reading
        return None


_DEFAULT = SpanReaders.build()


def default_readers() -> SpanReaders:
    """The built-in readers with default settings (no mapping): what a caller given no
    :class:`SpanReaders` reads with. The service passes its configured readers explicitly."""
    return _DEFAULT
