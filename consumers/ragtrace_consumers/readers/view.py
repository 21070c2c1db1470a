"""The RAG view of one assembled trace, built from what the readers extracted per span.

* ``steps``: one per retrieval — a retriever span, or a tool call that returned documents
  (:mod:`~ragtrace_consumers.readers.tool_results`) — in start order, each with its own query
  and ranked documents; ``retrieved``: their documents, deduplicated by ID in first-appearance
  order; ``retrieval_span_id`` the first retrieval span that returned documents. Nested retrieval
  spans are one retrieval (DSPy's ``Retrieve.forward`` around the retriever's own call): the
  outermost keeps its place, and position by position its documents take the ID from the span
  that has a real one (not a content hash), the text and score from whichever has them. When a dialect's
  own span and ragtrace's describe the same step, ragtrace's spans of that role win.
* the generation: the last-ending generation span **with an answer** (LlamaIndex streaming
  records the answer on the inner ``stream_complete`` span, not on the outer one that ends
  last); else the last-ending one, whose ``answer_problem`` becomes ``answer_na_reason``.
* ``context`` — everything the model was given: the generation's listed documents, else
  ``retrieved``, with texts recovered by ID from ``retrieved`` and from the tool results in
  the generation's input messages. When a context document still has no text (the documents
  carry IDs only: GenAI makes content opt-in), the messages the generation was given instead
  (its ``prompt``). Then the tool results it was given that are not there yet, and, in a trace
  with retrieval (or with none when the readers say ``system_context``:
  ``mapping.system_context``), its system-message context (``instructions``: system/developer
  messages and ``gen_ai.system_instructions`` by paragraph, instruction-like paragraphs left
  out).
  ``context_sources`` names each source in that order — ``retrieved`` (retriever steps),
  ``tool_result`` (tool-call steps, tool results), ``generation`` (listed documents),
  ``generation_input`` (the prompt), ``system_instructions`` — and ``context_source`` the
  first. Input log events of the generation's operation add their instructions and tool
  results to the generation's.
* ``query`` — the user's question: the first retrieval's, else the generation's, else the
  pipeline's; when there are several steps, a step is a tool call or a generation
  ``continues`` (the model called tools: the steps' queries are then sub-queries, the agent's
  or the app's own rewrites), the pipeline's, else the generation's last user message, else
  the first step's (``query_sha256`` then is the pipeline span's recorded hash, else the
  question's own);
  ``question_id``: ``ragtrace.question.id`` on any span (the app's own root included), and
  ``reference_answer``: ``ragtrace.reference_answer`` likewise.
* ``data_source``: ``gen_ai.data_source.id`` of the first retrieval span that has one.
* ``session_id``: ``session.id`` (OpenInference) on any span, else ``gen_ai.conversation.id``,
  else the Vercel AI SDK's ``ai.telemetry.metadata.sessionId``; a JSON string literal is decoded
  (MLflow's ``span.set_attribute`` stores every value as JSON).
* ``recall_na_reason``: set when a retrieved chunk's ID is a content hash.
* ``target_span_id``: the outermost pipeline span, else the generation, else the retrieval.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ragtrace import semconv
from ragtrace.normalize import question_sha256
from ragtrace_consumers.model import AttributeValue, Chunk, RagTrace, RetrievalStep, SpanRecord
from ragtrace_consumers.readers import chunks as chunk_ids
from ragtrace_consumers.readers._reading import Role, SpanReading, json_or_none
from ragtrace_consumers.readers.genai_logs import EVENT_SPAN_ID
from ragtrace_consumers.readers.registry import SpanReaders, default_readers, is_evaluation_span
from ragtrace_consumers.readers.vercel import SESSION_ID as VERCEL_SESSION_ID

__all__ = ["RESERVED_PREFIXES", "attribute_text", "read_trace", "to_rag_trace", "user_attributes"]

# Attribute namespaces that describe the RAG step itself, not the user's request: everything
# else on the pipeline span is a user attribute (route, tenant, …) sampling rules can match.
RESERVED_PREFIXES = (
    "ragtrace.",
    "input.",
    "output.",
    "retrieval.",
    "llm.",
    "gen_ai.",
    "openinference.",
    "embedding.",
    "reranker.",
    "tool.",
    "message.",
    "metadata",
    "code.",
    "thread.",
    "traceloop.",
    "langfuse.",
    # the Vercel AI SDK's own (its ai.telemetry.metadata.* are the user's, kept)
    "ai.prompt",
    "ai.response",
    "ai.toolCall",
    "ai.model",
    "ai.settings",
    "ai.usage",
    "ai.request",
    "ai.operationId",
    "ai.telemetry.functionId",
    "mlflow.",
)

Read = tuple[SpanRecord, SpanReading]


def attribute_text(value: AttributeValue) -> str:
    """An attribute value as sampling rules see it: booleans as true/false, sequences joined
    with commas."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return ",".join(attribute_text(v) for v in value)


def user_attributes(span: SpanRecord) -> dict[str, str]:
    """The span's attributes outside the RAG namespaces, as strings (sampling rules match them)."""
    return {
        k: attribute_text(v)
        for k, v in span.attributes.items()
        if not k.startswith(RESERVED_PREFIXES)
    }


def read_trace(
    spans: Sequence[SpanRecord], readers: SpanReaders | None = None
) -> list[tuple[SpanRecord, SpanReading | None]]:
    """Every span with its reading (None: unrecognised or an evaluation span), input order."""
    readers = readers or default_readers()
    return [(s, readers.read(s)) for s in spans]


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
                c.hashed,
            )
    return tuple(by_id.values())


def _merge_at(outer: Chunk, inner: Chunk) -> Chunk:
    keep = inner if outer.hashed and not inner.hashed else outer
    return Chunk(
        keep.id,
        outer.text if outer.text is not None else inner.text,
        outer.score if outer.score is not None else inner.score,
        keep.hashed,
    )


def _merged(outer: tuple[Chunk, ...], inner: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Two readings of one retrieval's documents joined by position (the longer list's tail
    kept as is)."""
    joined = [_merge_at(o, i) for o, i in zip(outer, inner, strict=False)]
    longer = outer if len(outer) >= len(inner) else inner
    return (*joined, *longer[len(joined) :])


def _nested_merged(retrievals: list[Read]) -> list[Read]:
    """Retrieval spans nested in another retrieval span folded into their outermost one."""
    if len(retrievals) < 2:
        return retrievals
    by_id = {s.span_id: i for i, (s, _) in enumerate(retrievals)}
    parents = {s.span_id: s.parent_span_id for s, _ in retrievals}
    merged: dict[int, SpanReading] = {}
    folded: set[int] = set()
    for i, (s, r) in enumerate(retrievals):
        outer, up, hops = None, s.parent_span_id, 0
        while up is not None and up in parents and hops < 64:
            outer, up, hops = by_id[up], parents[up], hops + 1
        if outer is None:
            continue
        base = merged.get(outer, retrievals[outer][1])
        merged[outer] = replace(
            base, chunks=_merged(base.chunks, r.chunks), query=base.query or r.query
        )
        folded.add(i)
    if not folded:
        return retrievals
    return [(s, merged.get(i, r)) for i, (s, r) in enumerate(retrievals) if i not in folded]


def _order(items: Iterable[Read]) -> list[Read]:
    return sorted(items, key=lambda r: (r[0].start_ns, r[0].end_ns, r[0].span_id))


def _preferred(items: Sequence[Read]) -> list[Read]:
    """Ours when we have any for this role, else the dialect's; in start order."""
    ours = [r for r in items if r[1].reader == "ragtrace"]
    return _order(ours or items)


def _first_attr(spans: Iterable[SpanRecord], key: str) -> str | None:
    for s in spans:
        value = s.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _declared_top_k(span: SpanRecord) -> int | None:
    """The cut-off a retrieval span declares: GenAI's ``gen_ai.retrieval.top_k``, else
    ``gen_ai.request.top_k`` (where semantic-conventions 1.36 and the SDK's default put a
    retriever's k); None when neither is a positive integer."""
    for key in (semconv.GEN_AI_RETRIEVAL_TOP_K, semconv.GEN_AI_REQUEST_TOP_K):
        value = span.attributes.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON OTLP may carry an integer as a double
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None


def _unquoted(value: str | None) -> str | None:
    """A JSON string literal's text (``"s-1"`` with its quotes: MLflow's encoding), else
    ``value``."""
    if value is not None and len(value) > 1 and value[0] == '"' == value[-1]:
        decoded = json_or_none(value)
        if isinstance(decoded, str) and decoded:
            return decoded
    return value


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


def _hash_reason(retrieved: Sequence[Chunk]) -> str | None:
    hashed = sum(1 for c in retrieved if c.hashed)
    if not hashed:
        return None
    tools = sum(1 for c in retrieved if c.hashed and chunk_ids.is_tool_hash(c.id))
    if tools:
        return (
            f"{tools} of {len(retrieved)} retrieved chunks carry only a tool's content hash "
            "as their ID (a 64-hex SHA-256, e.g. Haystack's Document.id) and no metadata key "
            f"among {', '.join(chunk_ids.DEFAULT_METADATA_ID_KEYS)}: set the document's own "
            "ID in its metadata (e.g. meta doc_id) so recall can match gold chunk IDs"
        )
    return (
        f"{hashed} of {len(retrieved)} retrieved chunks carry no ID (no ID field and no "
        f"metadata key among {', '.join(chunk_ids.DEFAULT_METADATA_ID_KEYS)}, source): "
        "their IDs are content hashes, which cannot match gold chunk IDs"
    )


def _evaluated(span: SpanRecord) -> str:
    """The span an answer's evaluation belongs under: the operation span of a log event."""
    owner = span.attributes.get(EVENT_SPAN_ID)
    return owner if isinstance(owner, str) and len(owner) == 16 else span.span_id


def _filled(chunks: Iterable[Chunk], texts: dict[str, str]) -> tuple[Chunk, ...]:
    return tuple(
        c if c.text is not None or c.id not in texts else replace(c, text=texts[c.id])
        for c in chunks
    )


def _given(generation: Read, read: Sequence[Read]) -> tuple[tuple[Chunk, ...], tuple[Chunk, ...]]:
    """The generation's instructions and tool results, with those of the input log events of
    its operation."""
    owner = _evaluated(generation[0])
    found = [generation[1]]
    found += [
        r for s, r in read if r.role is None and s is not generation[0] and _evaluated(s) == owner
    ]
    return (
        tuple(c for r in found for c in r.instructions),
        _dedupe(c for r in found for c in r.tool_results),
    )


def _context(
    steps: Sequence[RetrievalStep],
    retrieved: tuple[Chunk, ...],
    generation: Read | None,
    read: Sequence[Read],
    system_context: bool = False,
) -> tuple[tuple[Chunk, ...], tuple[str, ...]]:
    """The context the answer is judged against and its sources (the module rules)."""
    instructions, tool_results = _given(generation, read) if generation else ((), ())
    texts = {c.id: c.text for c in (*retrieved, *tool_results) if c.text is not None}
    listed = generation[1].context if generation is not None else None
    if listed is None:
        context = _filled(retrieved, texts)
        kinds = {s.kind for s in steps if s.chunks}
        sources = [
            n for k, n in (("retriever", "retrieved"), ("tool", "tool_result")) if k in kinds
        ]
    else:
        context, sources = _filled(listed, texts), ["generation"]
    prompt = generation[1].prompt if generation is not None else ()
    if any(c.text is None for c in context) and (prompt or tool_results or instructions):
        context, extra = prompt, tool_results
        sources = ["generation_input"] if prompt else []
    else:
        have = {c.id for c in context}
        extra = tuple(c for c in tool_results if c.id not in have)
    if extra:
        context = (*context, *extra)
        sources += [] if "tool_result" in sources else ["tool_result"]
    if instructions and (steps or listed is not None or tool_results or system_context):
        context = (*context, *instructions)
        sources.append("system_instructions")
    return context, tuple(sources)


def _question(
    retrievals: Sequence[Read],
    generations: Sequence[Read],
    generation: Read | None,
    pipeline: Read | None,
) -> str | None:
    """The user's question: the first retrieval's query, else the generation's, else the
    pipeline's; when a step is a tool call, there are several steps or a generation continues
    with tool calls (each query then is the agent's or the app's own sub-query), the
    pipeline's, else the generation's user message, else the first step's."""
    first = next((r.query for _, r in retrievals if r.query), None)
    from_generation = generation[1].query if generation is not None else None
    from_pipeline = pipeline[1].query if pipeline is not None else None
    if _sub_queries(retrievals, generations):
        return from_pipeline or from_generation or first
    return first or from_generation or from_pipeline


def _sub_queries(retrievals: Sequence[Read], generations: Sequence[Read]) -> bool:
    """True when the steps' queries are sub-queries, not the user's question: several steps, a
    tool call (the agent wrote its arguments), or a model call that asked for tools (a
    retriever it called searched its arguments)."""
    return (
        len(retrievals) > 1
        or any(r.tool is not None for _, r in retrievals)
        or any(g.continues for _, g in generations)
    )


def to_rag_trace(
    spans: Sequence[SpanRecord], readers: SpanReaders | None = None
) -> RagTrace | None:
    """The RAG view of one trace's spans (see the module rules); None when they hold no
    retrieval and no generation."""
    if not spans or all(is_evaluation_span(s) for s in spans):
        return None
    read: list[Read] = []
    seen: dict[str, SpanRecord] = {}
    for s, r in read_trace(spans, readers):
        if r is None or seen.get(s.span_id) == s:  # a span delivered twice is one step
            continue
        seen.setdefault(s.span_id, s)
        read.append((s, r))
    by_role: dict[Role, list[Read]] = {role: [] for role in Role}
    for s, r in read:
        if r.role is not None:
            by_role[r.role].append((s, r))
    retrievals = _nested_merged(_preferred(by_role[Role.RETRIEVAL]))
    generations = _preferred(by_role[Role.GENERATION])
    if not retrievals and not generations:
        return None
    span_ids = {s.span_id for s in spans}
    pipeline_ids = {s.span_id for s, _ in by_role[Role.PIPELINE]}
    pipelines = sorted(
        (p for p in _preferred(by_role[Role.PIPELINE]) if p[0].parent_span_id not in pipeline_ids),
        key=lambda p: (p[0].parent_span_id in span_ids, p[0].start_ns),
    )
    pipeline = pipelines[0] if pipelines else None
    answered = [g for g in generations if g[1].answer]
    generation = (
        max(answered or generations, key=lambda g: (g[0].end_ns, g[0].start_ns))
        if generations
        else None
    )

    steps = tuple(
        RetrievalStep(s.span_id, r.query, r.chunks, r.tool, _declared_top_k(s))
        for s, r in retrievals
    )
    retrieved = _dedupe(c for _, r in retrievals for c in r.chunks)
    system_context = readers.system_context if readers is not None else False
    context, sources = _context(steps, retrieved, generation, read, system_context)
    query = _question(retrievals, generations, generation, pipeline)
    used = [
        s
        for s, _ in [
            *retrievals,
            *([generation] if generation else []),
            *([pipeline] if pipeline else []),
        ]
    ]
    ordered = [*used, *spans]
    recorded_sha = _first_attr(ordered, semconv.RAGTRACE_QUERY_SHA256)
    if pipeline is not None and _sub_queries(retrievals, generations):
        # A step's recorded hash is its sub-query's: only the pipeline's is the question's.
        recorded_sha = _first_attr([pipeline[0]], semconv.RAGTRACE_QUERY_SHA256) or (
            None if query is not None else recorded_sha
        )
    target = pipeline or generation or retrievals[0]
    answer = answer_na = model = response_id = None
    if generation is not None:
        g = generation[1]
        answer, model, response_id = g.answer, g.model, g.response_id
        if not answer:
            answer_na = g.answer_problem or "the generation span recorded no answer"
    pipeline_name = _first_attr(ordered, semconv.RAGTRACE_PIPELINE_NAME) or (
        pipeline[0].name if pipeline is not None else None
    )
    with_docs = next((s for s, r in retrievals if r.chunks), None)
    live_ends = [s.end_ns for s in spans if not is_evaluation_span(s)]
    return RagTrace(
        trace_id=target[0].trace_id,
        service=target[0].service,
        target_span_id=target[0].span_id,
        pipeline=pipeline_name,
        query=query,
        query_sha256=recorded_sha or (question_sha256(query) if query is not None else None),
        question_id=_first_attr(ordered, semconv.RAGTRACE_QUESTION_ID),
        retrieved=retrieved,
        context=context,
        answer=answer,
        model=model,
        data_source=_first_attr([s for s, _ in retrievals], semconv.GEN_AI_DATA_SOURCE_ID),
        attributes={k: v for s in used for k, v in user_attributes(s).items()},
        context_truncated=_truncated_content(used),
        has_retrieval=bool(retrievals),
        has_generation=generation is not None,
        ended_ns=max(live_ends),
        retrieval_span_id=with_docs.span_id
        if with_docs is not None
        else (retrievals[0][0].span_id if retrievals else None),
        generation_span_id=_evaluated(generation[0]) if generation is not None else None,
        response_id=response_id,
        recall_na_reason=_hash_reason(retrieved),
        answer_na_reason=answer_na,
        reference_answer=_first_attr(ordered, semconv.RAGTRACE_REFERENCE_ANSWER),
        root_span_id=min(
            (s for s in spans if not s.parent_span_id and not is_evaluation_span(s)),
            key=lambda s: s.start_ns,
            default=target[0],
        ).span_id,
        context_source=sources[0] if context else None,
        context_sources=sources if context else (),
        steps=steps,
        session_id=_unquoted(
            _first_attr(spans, semconv.SESSION_ID)
            or _first_attr(spans, semconv.GEN_AI_CONVERSATION_ID)
            or _first_attr(spans, VERCEL_SESSION_ID)
        ),
    )
