"""Cost of a decorated call, against a bare call and a hand-written span recording the same attributes.

All three run in the same process against the same SDK tracer provider (a ``BatchSpanProcessor``
with an exporter that discards, as in production minus the network). Each call retrieves (or is
given) five chunks of 200 bytes with content capture on; queries rotate over 1,000 distinct
strings so no cache of ours sees the same query twice in a row. The hand-written version is what
a careful developer would write with ``tracer.start_as_current_span`` to record exactly the
attributes ragtrace records; the script checks that the two attribute sets are identical before
timing anything. Figures are the best of several rounds (least disturbed by other processes).

Run: ``python bench/bench_instrumentation.py [--quick]``; writes the ``instrumentation`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from bench._report import machine_line, write_section
from ragtrace import semconv as sc
from ragtrace.normalize import question_sha256

CHUNKS = [
    {
        "id": f"kb-{i:04d}",
        "text": (f"chunk {i} " + "lorem ipsum dolor sit amet " * 8)[:200],
        "score": 0.9 - i / 10,
    }
    for i in range(5)
]
QUERIES = [f"How long are audit logs kept on plan {i}?" for i in range(1000)]
ANSWER = "Audit logs are kept for 90 days on the Team plan and for one year on Enterprise."


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


# -- the three contestants -----------------------------------------------------------------------
def bare_retrieve(query: str) -> list[dict[str, Any]]:
    return CHUNKS


def bare_generate(query: str, chunks: list[dict[str, Any]]) -> str:
    return ANSWER


decorated_retrieve = ragtrace.retrieve(bare_retrieve)
decorated_generate = ragtrace.generate(bare_generate)
tracer = trace.get_tracer("handwritten")


def handwritten_retrieve(query: str) -> list[dict[str, Any]]:
    with tracer.start_as_current_span("retrieve") as span:
        chunks = bare_retrieve(query)
        attrs: dict[str, Any] = {
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.OPENINFERENCE_SPAN_KIND: sc.SpanKind.RETRIEVER,
            sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OPERATION_RETRIEVAL,
            sc.RAGTRACE_RETRIEVAL_COUNT: len(chunks),
            sc.RAGTRACE_QUERY_SHA256: question_sha256(query),
            sc.INPUT_VALUE: query,
            sc.GEN_AI_RETRIEVAL_QUERY_TEXT: query,
        }
        for i, c in enumerate(chunks):
            attrs[f"retrieval.documents.{i}.document.id"] = c["id"]
            attrs[f"retrieval.documents.{i}.document.score"] = c["score"]
            attrs[f"retrieval.documents.{i}.document.content"] = c["text"]
        attrs[sc.GEN_AI_RETRIEVAL_DOCUMENTS] = json.dumps(
            [{"id": c["id"], "score": c["score"]} for c in chunks], separators=(",", ":")
        )
        span.set_attributes(attrs)
        return chunks


def handwritten_generate(query: str, chunks: list[dict[str, Any]]) -> str:
    with tracer.start_as_current_span("generate") as span:
        answer = bare_generate(query, chunks)
        attrs: dict[str, Any] = {
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.OPENINFERENCE_SPAN_KIND: sc.SpanKind.LLM,
            sc.RAGTRACE_CONTEXT_COUNT: len(chunks),
            sc.RAGTRACE_QUERY_SHA256: question_sha256(query),
            sc.INPUT_VALUE: query,
            sc.OUTPUT_VALUE: answer,
        }
        for i, c in enumerate(chunks):
            attrs[f"ragtrace.context.documents.{i}.document.id"] = c["id"]
            attrs[f"ragtrace.context.documents.{i}.document.content"] = c["text"]
        span.set_attributes(attrs)
        return answer


# -- measurement ---------------------------------------------------------------------------------
def _check_same_attributes() -> None:
    """Fail loudly if the hand-written spans do not record exactly what the decorators record."""
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from ragtrace import _kinds

    real = (_kinds._tracer, globals()["tracer"])
    _kinds._tracer = provider.get_tracer(sc.INSTRUMENTATION_SCOPE)
    globals()["tracer"] = provider.get_tracer("handwritten")
    try:
        calls: tuple[tuple[Callable[[], object], Callable[[], object]], ...] = (
            (lambda: decorated_retrieve(QUERIES[0]), lambda: handwritten_retrieve(QUERIES[0])),
            (
                lambda: decorated_generate(QUERIES[0], CHUNKS),
                lambda: handwritten_generate(QUERIES[0], CHUNKS),
            ),
        )
        for pair in calls:
            exporter.clear()
            for call in pair:
                call()
            a, b = exporter.get_finished_spans()
            assert dict(a.attributes or {}) == dict(b.attributes or {}), (
                a.attributes,
                b.attributes,
            )
    finally:
        _kinds._tracer, globals()["tracer"] = real


def _per_call_us(call: Callable[[str], Any], n: int) -> float:
    queries = QUERIES
    m = len(queries)
    start = time.thread_time()  # CPU time of this thread: the request path, not the export thread
    for i in range(n):
        call(queries[i % m])
    return (time.thread_time() - start) / n * 1e6


def measure(rounds: int, n: int) -> dict[str, dict[str, float]]:
    cases: dict[str, dict[str, Callable[[str], Any]]] = {
        "retrieve": {
            "bare": bare_retrieve,
            "handwritten": handwritten_retrieve,
            "decorated": decorated_retrieve,
        },
        "generate": {
            "bare": lambda q: bare_generate(q, CHUNKS),
            "handwritten": lambda q: handwritten_generate(q, CHUNKS),
            "decorated": lambda q: decorated_generate(q, CHUNKS),
        },
    }
    best: dict[str, dict[str, float]] = {c: {k: float("inf") for k in v} for c, v in cases.items()}
    for contestants in cases.values():
        for call in contestants.values():
            _per_call_us(call, n)  # warm-up
    # Many short rounds, the three contestants interleaved within each: on a shared machine a
    # burst of load then hits all three alike, and the best round of each is the least disturbed.
    for _ in range(rounds):
        for case, contestants in cases.items():
            for name, call in contestants.items():
                best[case][name] = min(best[case][name], _per_call_us(call, n))
    return best


def main(argv: Sequence[str]) -> int:
    quick = "--quick" in argv
    _check_same_attributes()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard(), max_queue_size=8192))
    trace.set_tracer_provider(provider)
    rounds = 5 if quick else 40
    results = measure(rounds=rounds, n=1000)
    provider.shutdown()
    assert ragtrace.error_counts() == {}, ragtrace.error_counts()

    lines = [
        "## Instrumentation overhead",
        "",
        "`bench/bench_instrumentation.py`: cost of one call with five 200-byte chunks, content capture",
        "on, spans going through a `BatchSpanProcessor` to an exporter that discards them. *Bare* is",
        "the undecorated function; *hand-written* opens `tracer.start_as_current_span` and records",
        "exactly the attributes the decorator records (checked attribute for attribute before timing).",
        (
            f"Best of {rounds} interleaved rounds of 1,000 calls (CPU time of the calling thread); "
            f"{machine_line()}."
        ),
        "",
        "| call | bare | hand-written | decorated | decorated − bare | ratio decorated / hand-written |",
        "|---|---|---|---|---|---|",
    ]
    for case, r in results.items():
        lines.append(
            f"| `{case}` | {r['bare']:.2f} µs | {r['handwritten']:.2f} µs | {r['decorated']:.2f} µs "
            f"| {r['decorated'] - r['bare']:.2f} µs | **{r['decorated'] / r['handwritten']:.2f}** |"
        )
    text = "\n".join(lines)
    print(text)
    if not quick:
        write_section("instrumentation", text + "\n\n" + _EXPLANATION)
    return 0


_EXPLANATION = """\
Goal: ratio ≤ 1.3. Where the decorator costs more than the hand-written span, the extra is work
the hand-written code skips because it knows its data: locating the query among the arguments,
reading chunks of unknown shape through `extract_chunks` (validated `ExtractedChunk` values),
charging every string against the span's size budget (per-value cap, UTF-8 byte count), the
never-raise guards around each step, and the per-trace note that lets the generation span leave
out texts its retrieval span already recorded. Both versions compute the same SHA-256 of the
normalised query; the decorator caches it per query (one query is hashed by up to three spans),
which this benchmark defeats by rotating 1,000 queries."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
