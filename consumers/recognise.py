"""Recognise RAG spans and build the RAG view of one assembled trace.

Two producers are understood:

* ragtrace's decorators (instrumentation scope :data:`semconv.INSTRUMENTATION_SCOPE`), whose
  spans carry ``openinference.span.kind`` plus the ``ragtrace.*`` attributes;
* OpenInference instrumentors (LlamaIndex, LangChain, …): ``openinference.span.kind``
  ``RETRIEVER`` / ``LLM`` / ``CHAIN``, ``retrieval.documents.N.document.*``, ``input.value``,
  ``output.value``, ``llm.model_name``.

Our own evaluation spans (scope :data:`semconv.EVALUATION_SCOPE` or attribute
:data:`semconv.EVAL_MARKER`) are never RAG spans, so scores can never be scored again.

When both producers describe the same step (an app using our decorators *and* an OpenInference
instrumentor), the ragtrace spans of that role win and the others are ignored for it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum

from ragtrace import semconv
from ragtrace.consumers.model import AttributeValue, Chunk, RagTrace, SpanRecord
from ragtrace.normalize import question_sha256

__all__ = [
    "Role",
    "context_chunks",
    "is_evaluation_span",
    "is_rag_span",
    "retrieved_chunks",
    "role_of",
    "to_rag_trace",
    "user_attributes",
]


class Role(str, Enum):
    """What a span does in a RAG request."""

    RETRIEVAL = "retrieval"
    GENERATION = "generation"
    PIPELINE = "pipeline"


_KIND_ROLE = {
    semconv.SpanKind.RETRIEVER: Role.RETRIEVAL,
    semconv.SpanKind.LLM: Role.GENERATION,
    semconv.SpanKind.CHAIN: Role.PIPELINE,
}
_NAME_ROLE = {
    semconv.SPAN_RETRIEVE: Role.RETRIEVAL,
    semconv.SPAN_GENERATE: Role.GENERATION,
    semconv.SPAN_PIPELINE: Role.PIPELINE,
}
_RETRIEVAL_KEY = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content|score)$")
_CONTEXT_KEY = re.compile(r"^ragtrace\.context\.documents\.(\d+)\.document\.(id|content|score)$")
# Attribute namespaces that describe the RAG step itself, not the user's request: everything
# else on the pipeline span is a user attribute (route, tenant, …) sampling rules can match.
_RESERVED_PREFIXES = (
    "ragtrace.", "input.", "output.", "retrieval.", "llm.", "gen_ai.", "openinference.",
    "embedding.", "reranker.", "tool.", "message.", "metadata", "code.", "thread.",
)


def is_evaluation_span(span: SpanRecord) -> bool:
    """True for spans the consumers wrote back: never scored."""
    return span.scope == semconv.EVALUATION_SCOPE or span.attributes.get(semconv.EVAL_MARKER) is True


def role_of(span: SpanRecord) -> Role | None:
    """The span's RAG role, or None for a span that is not part of the RAG view."""
    if is_evaluation_span(span):
        return None
    kind = span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    if isinstance(kind, str) and kind.upper() in _KIND_ROLE:
        return _KIND_ROLE[kind.upper()]
    if span.attributes.get(semconv.GEN_AI_OPERATION_NAME) == semconv.GEN_AI_OPERATION_RETRIEVAL:
        return Role.RETRIEVAL
    if span.scope == semconv.INSTRUMENTATION_SCOPE:
        # Our decorators always set the kind; names and attributes are the fallback for spans
        # from an older SDK or with the kind attribute dropped by a collector processor.
        if span.name in _NAME_ROLE:
            return _NAME_ROLE[span.name]
        if semconv.RAGTRACE_CONTEXT_COUNT in span.attributes:
            return Role.GENERATION
        if semconv.RAGTRACE_RETRIEVAL_COUNT in span.attributes:
            return Role.RETRIEVAL
        return Role.PIPELINE
    return None


def is_rag_span(span: SpanRecord) -> bool:
    return role_of(span) is not None


def _str(value: AttributeValue | None) -> str | None:
    return value if isinstance(value, str) else None


def _indexed(
    attributes: Mapping[str, AttributeValue], pattern: re.Pattern[str]
) -> list[dict[str, AttributeValue]]:
    found: dict[int, dict[str, AttributeValue]] = {}
    for key, value in attributes.items():
        m = pattern.match(key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [found[i] for i in sorted(found)]


def _chunk(fields: Mapping[str, AttributeValue]) -> Chunk | None:
    text = _str(fields.get("content"))
    raw_id = fields.get("id")
    if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) and str(raw_id):
        chunk_id = str(raw_id)
    elif text is not None:
        # OpenInference documents without an ID (some LangChain retrievers): a stable content ID
        # so groundedness still works; such chunks can never match a label's gold IDs.
        chunk_id = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    else:
        return None
    score = fields.get("score")
    number = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) \
        else None
    return Chunk(id=chunk_id, text=text, score=number)


def retrieved_chunks(span: SpanRecord) -> list[Chunk]:
    """The ranked documents of one retrieval span: ``retrieval.documents.N.document.*``, else
    the GenAI ``gen_ai.retrieval.documents`` JSON list (IDs and scores only)."""
    chunks = [c for c in map(_chunk, _indexed(span.attributes, _RETRIEVAL_KEY)) if c is not None]
    if chunks:
        return chunks
    raw = span.attributes.get(semconv.GEN_AI_RETRIEVAL_DOCUMENTS)
    if not isinstance(raw, str):
        return []
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    fields = [
        {k: v for k, v in item.items() if k in ("id", "score", "content")}
        for item in items if isinstance(item, dict)
    ]
    return [c for c in map(_chunk, fields) if c is not None]


def context_chunks(span: SpanRecord) -> list[Chunk] | None:
    """The documents a generation span says it supplied, or None when it says nothing."""
    chunks = [c for c in map(_chunk, _indexed(span.attributes, _CONTEXT_KEY)) if c is not None]
    if chunks:
        return chunks
    count = span.attributes.get(semconv.RAGTRACE_CONTEXT_COUNT)
    if isinstance(count, int) and not isinstance(count, bool) and count == 0:
        return []
    return None


def user_attributes(span: SpanRecord) -> dict[str, str]:
    """The span's attributes outside the RAG namespaces, as strings (sampling rules match them)."""
    out: dict[str, str] = {}
    for key, value in span.attributes.items():
        if key.startswith(_RESERVED_PREFIXES):
            continue
        out[key] = _as_str(value)
    return out


def _as_str(value: AttributeValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return ",".join(_as_str(v) for v in value)


def _dedupe(chunks: Iterable[Chunk]) -> tuple[Chunk, ...]:
    """First occurrence keeps its rank; a later duplicate may fill in a missing text or score."""
    by_id: dict[str, Chunk] = {}
    for c in chunks:
        first = by_id.get(c.id)
        if first is None:
            by_id[c.id] = c
        elif (first.text is None and c.text is not None) or (
            first.score is None and c.score is not None
        ):
            by_id[c.id] = Chunk(
                c.id,
                first.text if first.text is not None else c.text,
                first.score if first.score is not None else c.score,
            )
    return tuple(by_id.values())


def _preferred(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """Ours when we have any for this role, else the OpenInference ones; in start order."""
    ours = [s for s in spans if s.scope == semconv.INSTRUMENTATION_SCOPE]
    chosen = ours or list(spans)
    return sorted(chosen, key=lambda s: (s.start_ns, s.end_ns, s.span_id))


def _first(spans: Iterable[SpanRecord], key: str) -> str | None:
    for s in spans:
        value = _str(s.attributes.get(key))
        if value:
            return value
    return None


def _is_json(span: SpanRecord) -> bool:
    mime = _str(span.attributes.get(semconv.INPUT_MIME_TYPE)) or ""
    return "json" in mime


def _truncated_content(spans: Iterable[SpanRecord]) -> bool:
    for s in spans:
        keys = s.attributes.get(semconv.RAGTRACE_TRUNCATED)
        if isinstance(keys, str):
            keys = (keys,)
        if isinstance(keys, (tuple, list)) and any(
            isinstance(k, str) and k.endswith(".document.content") for k in keys
        ):
            return True
    return False


def to_rag_trace(spans: Sequence[SpanRecord]) -> RagTrace | None:
    """The RAG view of one trace's spans; None when they hold no retrieval and no generation.

    * ``query``: the first retrieval span's ``input.value`` (else the pipeline span's, unless JSON);
      ``query_sha256``: the recorded ``ragtrace.query.sha256``, else computed from ``query``;
      ``question_id``: ``ragtrace.question.id`` on any span.
    * ``retrieved``: every retrieval span's documents, spans in start order, deduplicated by ID.
    * ``context``: the last generation span's ``ragtrace.context.documents.*`` with texts the
      SDK omitted (it never repeats a text the retrieval span carries) recovered by ID from
      ``retrieved``; ``retrieved`` when the generation span lists nothing (OpenInference LLM).
    * ``answer``/``model``: ``output.value`` and ``llm.model_name`` / ``gen_ai.response.model`` /
      ``gen_ai.request.model`` of the last-ending generation span (the final answer).
    * ``data_source``: ``gen_ai.data_source.id`` of the first retrieval span that has one.
    * ``target_span_id``: the pipeline span (outermost), else generation, else retrieval.
    * ``attributes``: user attributes of the pipeline, generation and retrieval spans used (in
      that order of precedence), as strings.
    * ``context_truncated``: a used span's ``ragtrace.truncated`` names a document content key.
    """
    rag = [(s, role_of(s)) for s in spans]
    if not rag or all(is_evaluation_span(s) for s in spans):
        return None
    by_role: dict[Role, list[SpanRecord]] = {r: [] for r in Role}
    for s, r in rag:
        if r is not None:
            by_role[r].append(s)
    retrievals = _preferred(by_role[Role.RETRIEVAL])
    generations = _preferred(by_role[Role.GENERATION])
    if not retrievals and not generations:
        return None
    span_ids = {s.span_id for s in spans}
    # Outermost pipeline span: one whose parent is not itself a pipeline span in this trace.
    pipeline_ids = {s.span_id for s in by_role[Role.PIPELINE]}
    pipelines = sorted(
        (s for s in _preferred(by_role[Role.PIPELINE]) if s.parent_span_id not in pipeline_ids),
        key=lambda s: (s.parent_span_id in span_ids, s.start_ns),
    )
    pipeline = pipelines[0] if pipelines else None
    generation = max(generations, key=lambda s: (s.end_ns, s.start_ns)) if generations else None
    used = [*retrievals, *([generation] if generation else []), *([pipeline] if pipeline else [])]

    retrieved = _dedupe(c for s in retrievals for c in retrieved_chunks(s))
    texts = {c.id: c.text for c in retrieved if c.text is not None}
    listed = context_chunks(generation) if generation is not None else None
    if listed is None:
        context = retrieved
    else:
        context = tuple(
            c if c.text is not None or c.id not in texts else Chunk(c.id, texts[c.id], c.score)
            for c in listed
        )

    query = _first(retrievals, semconv.INPUT_VALUE) or _first(
        retrievals, semconv.GEN_AI_RETRIEVAL_QUERY_TEXT
    )
    if query is None and pipeline is not None and not _is_json(pipeline):
        query = _str(pipeline.attributes.get(semconv.INPUT_VALUE))
    ordered = [*used, *spans]
    recorded_sha = _first(ordered, semconv.RAGTRACE_QUERY_SHA256)
    target = pipeline or generation or retrievals[0]
    model = None
    answer = None
    if generation is not None:
        answer = _str(generation.attributes.get(semconv.OUTPUT_VALUE))
        model = _first(
            [generation], semconv.LLM_MODEL_NAME
        ) or _first([generation], semconv.GEN_AI_RESPONSE_MODEL) or _first(
            [generation], semconv.GEN_AI_REQUEST_MODEL
        )
    pipeline_name = _first(ordered, semconv.RAGTRACE_PIPELINE_NAME) or (
        pipeline.name if pipeline is not None else None
    )
    return RagTrace(
        trace_id=target.trace_id,
        service=target.service,
        target_span_id=target.span_id,
        pipeline=pipeline_name,
        query=query,
        query_sha256=recorded_sha or (question_sha256(query) if query is not None else None),
        question_id=_first(ordered, semconv.RAGTRACE_QUESTION_ID),
        retrieved=retrieved,
        context=context,
        answer=answer,
        model=model,
        data_source=_first(retrievals, semconv.GEN_AI_DATA_SOURCE_ID),
        attributes={k: v for s in used for k, v in user_attributes(s).items()},
        context_truncated=_truncated_content(used),
        has_retrieval=bool(retrievals),
        has_generation=generation is not None,
        ended_ns=max(s.end_ns for s in spans if not is_evaluation_span(s)),
    )
