"""Cost of reading a span: one span of each dialect through the reader registry, as ingestion
and assembly do it (first read, then the remembered reading for the same span object).

Spans are shaped like what each instrumentor emits (five 500-character documents on a
retrieval; a LangChain ``LLMResult`` JSON answer of 2,000 characters): reading them parses the
documents' metadata JSON and unwraps the answer envelope. Run: ``python bench/bench_readers.py
[--quick]``; writes the ``readers`` section of docs/benchmarks.md.

Also a 20-step agent trace (Pydantic AI's shape: 20 ``execute_tool`` searches of five documents
each, 21 ``chat`` spans, the last given every tool result in its input messages) assembled into
its RAG view, per span.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._report import machine_line, write_section
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers import SpanReaders, to_rag_trace

TEXT = "Audit logs are kept for ninety days on every plan. " * 10


def _span(name: str, scope: str, attrs: dict[str, object]) -> SpanRecord:
    return SpanRecord("a" * 32, "b" * 16, "c" * 16, name, scope, "bench", 0, 1, attrs)  # type: ignore[arg-type]


def _docs(step: int) -> list[dict[str, object]]:
    return [{"id": f"d-{step}-{i}", "text": TEXT[:500], "score": 0.5} for i in range(5)]


def _tool(step: int) -> dict[str, str]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search_docs",
        "gen_ai.tool.call.arguments": json.dumps({"query": f"sub-query {step}"}),
        "gen_ai.tool.call.result": json.dumps(_docs(step)),
    }


def agent_trace(steps: int = 20) -> list[SpanRecord]:
    """An agent that searched ``steps`` times (each search a model call answered with a tool
    call), then answered from every result."""
    out: list[SpanRecord] = []
    messages: list[dict[str, object]] = [
        {"role": "user", "parts": [{"type": "text", "content": "q"}]}
    ]
    for i in range(steps + 1):
        call = {"type": "tool_call", "id": f"call_{i}", "name": "search_docs", "arguments": {}}
        said = {"type": "text", "content": TEXT[:300]} if i == steps else call
        answer = [{"role": "assistant", "parts": [said]}]
        chat: dict[str, str] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(answer),
        }
        out.append(
            SpanRecord(
                "a" * 32,
                f"{2 * i + 1:016x}",
                "c" * 16,
                "chat",
                "pydantic-ai",
                "b",
                2 * i,
                2 * i + 1,
                chat,
            )
        )
        if i < steps:
            out.append(
                SpanRecord(
                    "a" * 32,
                    f"{2 * i + 2:016x}",
                    "c" * 16,
                    "execute_tool",
                    "pydantic-ai",
                    "b",
                    2 * i + 1,
                    2 * i + 2,
                    _tool(i),
                )
            )
            part = {"type": "tool_call_response", "id": f"call_{i}", "result": _docs(i)}
            messages = [*messages, {"role": "user", "parts": [part]}]
    return out


def spans() -> dict[str, SpanRecord]:
    rag: dict[str, object] = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
    lc: dict[str, object] = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
    for i in range(5):
        rag.update(
            {
                f"retrieval.documents.{i}.document.id": f"c-{i}",
                f"retrieval.documents.{i}.document.content": TEXT[:500],
                f"retrieval.documents.{i}.document.score": 0.5,
            }
        )
        lc.update(
            {
                f"retrieval.documents.{i}.document.content": TEXT[:500],
                f"retrieval.documents.{i}.document.metadata": json.dumps({"id": f"lc-{i}"}),
            }
        )
    docs = [{"id": f"d-{i}", "content": TEXT[:500], "score": 0.5} for i in range(5)]
    answer = (TEXT * 4)[:2000]
    return {
        "ragtrace retrieval (5 docs)": _span("retrieve", "ragtrace", rag),
        "LangChain retrieval (5 docs, metadata IDs)": _span(
            "R", "openinference.instrumentation.langchain", lc
        ),
        "LangChain LLM (LLMResult JSON)": _span(
            "FakeListLLM",
            "openinference.instrumentation.langchain",
            {
                "openinference.span.kind": "LLM",
                "output.mime_type": "application/json",
                "output.value": json.dumps({"generations": [[{"text": answer}]]}),
            },
        ),
        "GenAI retrieval (5 docs JSON)": _span(
            "retrieval",
            "app",
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "q",
                "gen_ai.retrieval.documents": json.dumps(docs),
            },
        ),
        "Langfuse retriever (5 docs JSON)": _span(
            "search",
            "langfuse-sdk",
            {
                "langfuse.observation.type": "retriever",
                "langfuse.observation.input": "q",
                "langfuse.observation.output": json.dumps(docs),
            },
        ),
        "GenAI execute_tool (5 docs JSON)": _span(
            "execute_tool search", "pydantic-ai", dict(_tool(0))
        ),
        "unrecognised HTTP span": _span(
            "POST /chat",
            "opentelemetry.instrumentation.fastapi",
            {"http.route": "/chat", "http.status_code": 200},
        ),
    }


def _best(fn: object, rounds: int, n: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()  # type: ignore[operator]
        best = min(best, (time.perf_counter() - start) / n)
    return best


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    rounds, n = (3, 300) if quick else (10, 3000)
    rows = []
    for label, span in spans().items():
        first = _best(lambda span=span: SpanReaders.build().read(span), rounds, n)
        readers = SpanReaders.build()
        readers.read(span)
        again = _best(lambda span=span, readers=readers: readers.read(span), rounds, n)
        rows.append(f"| {label} | {first * 1e6:.1f} µs | {again * 1e6:.2f} µs |")
        print(label, f"first {first * 1e6:.1f} us, again {again * 1e6:.2f} us")
    trace = agent_trace()
    assembled = _best(lambda: to_rag_trace(trace, SpanReaders.build()), rounds, max(1, n // 100))
    per_span = assembled / len(trace) * 1e6
    print(f"agent trace: {len(trace)} spans, {assembled * 1e3:.2f} ms, {per_span:.1f} us per span")
    write_section(
        "readers",
        "\n".join(
            [
                "## Span readers (`bench/bench_readers.py`)",
                "",
                (
                    "CPU time to read one span through the reader registry (recognise its dialect and role, "
                    "extract chunk IDs, texts and the answer): the first read (a fresh registry, including "
                    "building it) and a repeat read of the same span object (ingestion asks several times: "
                    f"count unrecognised, select, schedule). Best of {rounds} rounds of {n}; "
                    f"{machine_line()}."
                ),
                "",
                "| span | first read | same span again |",
                "|---|---|---|",
                *rows,
                "",
                (
                    f"A 20-step agent trace ({len(trace)} spans: 20 `execute_tool` searches of five "
                    "500-character documents, 21 `chat` spans — 20 answered with a "
                    "tool call, the last with the answer, given all 100 documents again as tool "
                    "results) read and assembled into its RAG view (20 retrieval "
                    f"steps, pooled documents, the judged context) with a fresh registry: "
                    f"{assembled * 1e3:.2f} ms, **{per_span:.1f} µs per span**."
                ),
                "",
            ]
        ),
    )
