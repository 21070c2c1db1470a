"""Every supported function kind, bare and with options: sync, async, generators, async generators."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

import ragtrace
from ragtrace import semconv as sc
from tests.unit.sdk.sdk_spans import by_name, finished, only_span

CHUNKS = [{"id": "a", "text": "alpha", "score": 1.0}, {"id": "b", "text": "beta", "score": 0.5}]


def retrieval_view(span: Any) -> tuple[Any, ...]:
    a = span.attributes
    return (
        a[sc.INPUT_VALUE],
        a[sc.RAGTRACE_RETRIEVAL_COUNT],
        a["retrieval.documents.0.document.id"],
        a["retrieval.documents.1.document.id"],
        a["retrieval.documents.1.document.content"],
    )


@pytest.mark.parametrize("bare", [True, False])
def test_sync(bare: bool) -> None:
    def fn(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    traced = ragtrace.retrieve(fn) if bare else ragtrace.retrieve(name="retrieve")(fn)
    assert traced("q") is CHUNKS
    assert retrieval_view(only_span()) == ("q", 2, "a", "b", "beta")
    assert traced.__name__ == "fn" and traced.__wrapped__ is fn  # type: ignore[attr-defined]


@pytest.mark.parametrize("bare", [True, False])
def test_async(bare: bool) -> None:
    async def fn(query: str) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return CHUNKS

    traced = ragtrace.retrieve(fn) if bare else ragtrace.retrieve(top_k=2)(fn)
    assert inspect.iscoroutinefunction(traced)
    assert asyncio.run(traced("q")) is CHUNKS
    assert retrieval_view(only_span()) == ("q", 2, "a", "b", "beta")


def test_generator_retrieval_records_when_exhausted() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> Iterator[dict[str, Any]]:
        yield from CHUNKS
        return None

    stream = retrieve("q")
    assert finished() == []  # nothing until it runs
    assert next(stream) is CHUNKS[0]
    assert finished() == []
    assert list(stream) == [CHUNKS[1]]
    span = only_span()
    assert retrieval_view(span) == ("q", 2, "a", "b", "beta")
    assert span.attributes[sc.RAGTRACE_STREAMED] is True  # type: ignore[index]


def test_streamed_answer_recorded_when_stream_finishes() -> None:
    @ragtrace.generate(model="m")
    def generate(query: str, chunks: list[str]) -> Iterator[str]:
        yield from ["Nine", "ty ", "days."]
        return None

    assert "".join(generate("q", ["a"])) == "Ninety days."
    a = only_span().attributes
    assert a is not None
    assert (
        a[sc.OUTPUT_VALUE],
        a[sc.RAGTRACE_STREAMED],
        a["ragtrace.context.documents.0.document.id"],
    ) == (
        "Ninety days.",
        True,
        "a",
    )


def test_async_generator_stream() -> None:
    @ragtrace.generate
    async def generate(query: str, chunks: list[str]) -> AsyncIterator[str]:
        for token in ["a", "b", "c"]:
            await asyncio.sleep(0)
            yield token

    async def consume() -> str:
        return "".join([t async for t in generate("q", ["x"])])

    assert asyncio.run(consume()) == "abc"
    a = only_span().attributes
    assert a is not None
    assert (a[sc.OUTPUT_VALUE], a[sc.RAGTRACE_STREAMED]) == ("abc", True)


def test_async_generator_retrieval_with_options() -> None:
    @ragtrace.retrieve(name="agen-search")
    async def retrieve(query: str) -> AsyncIterator[dict[str, Any]]:
        for c in CHUNKS:
            yield c

    async def consume() -> list[Any]:
        return [c async for c in retrieve("q")]

    assert asyncio.run(consume()) == CHUNKS
    assert retrieval_view(by_name("agen-search")) == ("q", 2, "a", "b", "beta")


def test_stream_closed_early_records_what_was_yielded() -> None:
    closed = []

    @ragtrace.generate
    def generate(query: str) -> Generator[str, None, None]:
        try:
            yield "one "
            yield "two "
            yield "three"
        finally:
            closed.append(True)

    stream = generate("q")
    assert next(stream) == "one "
    stream.close()
    assert closed == [True]
    span = only_span()
    assert span.attributes[sc.OUTPUT_VALUE] == "one "  # type: ignore[index]
    assert span.status.status_code is StatusCode.UNSET


def test_generator_send_throw_and_return_value_pass_through() -> None:
    @ragtrace.pipeline
    def echo(query: str) -> Generator[str, str, str]:
        received = yield "ready"
        try:
            yield f"got {received}"
        except KeyError:
            yield "handled"
        return "done"

    gen = echo("q")
    assert next(gen) == "ready"
    assert gen.send("x") == "got x"
    assert gen.throw(KeyError("k")) == "handled"
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "done"
    assert only_span().attributes[sc.OUTPUT_VALUE] == "readygot xhandled"  # type: ignore[index]


def test_generator_never_iterated_records_nothing() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> Iterator[str]:
        yield "a"

    retrieve("q")
    assert finished() == []


def test_generator_argument_errors_raise_at_call_time() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> Iterator[str]:
        yield "a"

    with pytest.raises(TypeError):
        retrieve()  # type: ignore[call-arg]


def test_streamed_pipeline_parents_children_created_during_iteration() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[str]:
        return ["c1"]

    @ragtrace.generate
    def generate(query: str, chunks: list[str]) -> Iterator[str]:
        yield "x"
        yield "y"

    @ragtrace.pipeline
    def answer(query: str) -> Iterator[str]:
        yield from generate(query, retrieve(query))

    assert list(answer("q")) == ["x", "y"]
    root, ret, gen = by_name("rag.pipeline"), by_name("retrieve"), by_name("generate")
    assert ret.parent.span_id == root.context.span_id  # type: ignore[union-attr]
    assert gen.parent.span_id == root.context.span_id  # type: ignore[union-attr]
    assert root.attributes[sc.OUTPUT_VALUE] == "xy"  # type: ignore[index]


def test_stream_returned_by_pipeline_and_consumed_later_stays_in_its_trace() -> None:
    @ragtrace.generate
    def generate(query: str) -> Iterator[str]:
        yield "late"

    @ragtrace.pipeline
    def answer(query: str) -> Iterator[str]:
        return generate(query)

    stream = answer("q")  # the pipeline span ends here, before the stream is consumed
    assert list(stream) == ["late"]
    root, gen = by_name("rag.pipeline"), by_name("generate")
    assert gen.parent.span_id == root.context.span_id  # type: ignore[union-attr]
    assert gen.context.trace_id == root.context.trace_id


def test_consumer_does_not_see_the_generator_span_as_current() -> None:
    from opentelemetry import trace

    @ragtrace.generate
    def generate(query: str) -> Iterator[str]:
        yield trace.get_current_span().get_span_context().span_id  # type: ignore[misc]

    outside = trace.get_current_span().get_span_context().span_id
    seen_inside = []
    for inner in generate("q"):
        seen_inside.append(inner)
        assert trace.get_current_span().get_span_context().span_id == outside
    # Inside the generator's code its own span was current.
    assert seen_inside == [only_span().context.span_id]


def test_methods_skip_self_when_finding_the_query() -> None:
    class Store:
        @ragtrace.retrieve
        def search(self, text: str) -> list[str]:
            return ["m1"]

        @ragtrace.generate
        async def answer(self, question: str, docs: list[str]) -> str:
            return "ok"

    store = Store()
    store.search("find me")
    asyncio.run(store.answer("why?", ["m1"]))
    assert by_name("retrieve").attributes[sc.INPUT_VALUE] == "find me"  # type: ignore[index]
    gen = by_name("generate").attributes
    assert gen is not None
    assert (gen[sc.INPUT_VALUE], gen["ragtrace.context.documents.0.document.id"]) == ("why?", "m1")
