"""Nested pipelines, threads and asyncio tasks each keep their own trace and their own attributes."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from typing import Any

import ragtrace
from ragtrace import semconv as sc
from tests.unit.sdk.sdk_spans import by_name, finished


def test_nested_pipelines_form_one_trace_and_target_the_innermost() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, str]]:
        return [{"id": "k1", "text": "kept"}]

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, str]]) -> str:
        return "inner answer"

    @ragtrace.pipeline(name="inner")
    def inner(query: str) -> str:
        ragtrace.set_question_id("q-inner")
        return generate(query, retrieve(query))

    @ragtrace.pipeline(name="outer", question_id="q-outer")
    def outer(query: str) -> str:
        ragtrace.set_attributes(level="outer")
        result = inner(query)
        ragtrace.set_attributes(after="inner")  # back on the outer pipeline
        return result.upper()

    assert outer("q") == "INNER ANSWER"
    o, i, r, g = by_name("outer"), by_name("inner"), by_name("retrieve"), by_name("generate")
    assert len({s.context.trace_id for s in (o, i, r, g)}) == 1
    assert o.parent is None
    assert i.parent.span_id == o.context.span_id  # type: ignore[union-attr]
    assert r.parent.span_id == i.context.span_id  # type: ignore[union-attr]
    assert g.parent.span_id == i.context.span_id  # type: ignore[union-attr]
    oa, ia = o.attributes or {}, i.attributes or {}
    assert (oa[sc.RAGTRACE_QUESTION_ID], oa["level"], oa["after"], oa[sc.OUTPUT_VALUE]) == (
        "q-outer",
        "outer",
        "inner",
        "INNER ANSWER",
    )
    assert (ia[sc.RAGTRACE_QUESTION_ID], ia[sc.OUTPUT_VALUE]) == ("q-inner", "inner answer")
    assert "level" not in ia and "after" not in ia
    assert "ragtrace.context.documents.0.document.content" not in (g.attributes or {})


def _app() -> tuple[Any, Any]:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, str]]:
        return [{"id": f"{query}-doc", "text": f"text of {query}"}]

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, str]]) -> str:
        return f"answer to {query}"

    @ragtrace.pipeline
    def answer(query: str) -> str:
        ragtrace.set_question_id(f"qid-{query}")
        return generate(query, retrieve(query))

    return answer, (retrieve, generate)


def _check_traces_apart(queries: list[str]) -> None:
    spans = finished()
    assert len(spans) == 3 * len(queries)
    traces: dict[int, list[Any]] = defaultdict(list)
    for span in spans:
        traces[span.context.trace_id].append(span)
    assert len(traces) == len(queries)
    seen = set()
    for members in traces.values():
        root = next(s for s in members if s.name == "rag.pipeline")
        query = root.attributes[sc.INPUT_VALUE]
        seen.add(query)
        assert root.attributes[sc.RAGTRACE_QUESTION_ID] == f"qid-{query}"
        assert root.attributes[sc.OUTPUT_VALUE] == f"answer to {query}"
        for span in members:
            assert span.attributes[sc.INPUT_VALUE] == query
            if span.name != "rag.pipeline":
                assert span.parent.span_id == root.context.span_id
        gen = next(s for s in members if s.name == "generate").attributes or {}
        assert gen["ragtrace.context.documents.0.document.id"] == f"{query}-doc"
        assert (
            "ragtrace.context.documents.0.document.content" not in gen
        )  # its own retrieval's note
    assert seen == set(queries)


def test_threads_keep_their_traces_apart() -> None:
    answer, _ = _app()
    queries = [f"t{i}" for i in range(16)]
    barrier = threading.Barrier(8)

    def worker(batch: list[str]) -> None:
        barrier.wait()
        for q in batch:
            assert answer(q) == f"answer to {q}"

    threads = [threading.Thread(target=worker, args=(queries[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check_traces_apart(queries)


def test_asyncio_tasks_keep_their_traces_apart() -> None:
    @ragtrace.retrieve
    async def retrieve(query: str) -> list[dict[str, str]]:
        await asyncio.sleep(0)
        return [{"id": f"{query}-doc", "text": f"text of {query}"}]

    @ragtrace.generate
    async def generate(query: str, chunks: list[dict[str, str]]) -> str:
        await asyncio.sleep(0)
        return f"answer to {query}"

    @ragtrace.pipeline
    async def answer(query: str) -> str:
        ragtrace.set_question_id(f"qid-{query}")
        await asyncio.sleep(0)
        chunks = await retrieve(query)
        await asyncio.sleep(0)
        return await generate(query, chunks)

    queries = [f"a{i}" for i in range(20)]

    async def main() -> list[str]:
        return await asyncio.gather(*(answer(q) for q in queries))

    assert asyncio.run(main()) == [f"answer to {q}" for q in queries]
    _check_traces_apart(queries)


def test_retrieval_in_a_child_task_still_lets_generation_skip_texts() -> None:
    @ragtrace.retrieve
    async def retrieve(query: str) -> list[dict[str, str]]:
        return [{"id": f"{query}-doc", "text": "shared"}]

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, str]]) -> str:
        return "ok"

    @ragtrace.pipeline
    async def answer(query: str) -> str:
        (a,), (b,) = await asyncio.gather(retrieve("x"), retrieve("y"))  # each in its own task
        return generate(query, [a, b])

    asyncio.run(answer("q"))
    gen = by_name("generate").attributes or {}
    assert "ragtrace.context.documents.0.document.content" not in gen
    assert "ragtrace.context.documents.1.document.content" not in gen
