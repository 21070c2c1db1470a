"""Finding the query and the context by name, by position and explicitly; chunk shapes end to end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import ragtrace
from ragtrace import semconv as sc
from ragtrace._arguments import MISSING, QUERY_NAMES, ArgRef, locate
from tests.unit.sdk.sdk_spans import only_span


def test_query_by_name_anywhere_in_the_signature() -> None:
    def fn(index: object, question: str, limit: int = 5) -> None: ...

    ref = locate(fn, "query", None, QUERY_NAMES)
    assert ref == ArgRef("question", 1)
    assert ref.get(("idx", "from position"), {}) == "from position"
    assert ref.get(("idx",), {"question": "from keyword"}) == "from keyword"
    assert ref.get(("idx",), {}) is MISSING


def test_query_by_position_skips_self() -> None:
    class C:
        def fn(self, needle: str) -> None: ...

    assert locate(C.fn, "query", None, QUERY_NAMES) == ArgRef("needle", 1)


def test_defaults_are_used_when_not_passed() -> None:
    def fn(search_text: str = "default q") -> None: ...

    assert locate(fn, "query", None, QUERY_NAMES).get((), {}) == "default q"  # type: ignore[union-attr]


def test_var_positional_and_keyword_only() -> None:
    def star(*args: Any) -> None: ...

    def kwonly(*, query: str) -> None: ...

    assert locate(star, "query", None, QUERY_NAMES) == ArgRef(None, 0)
    assert locate(kwonly, "query", None, QUERY_NAMES) == ArgRef("query", None)


def test_explicit_name_and_position() -> None:
    def fn(a: str, b: str, **kw: Any) -> None: ...

    assert locate(fn, "query", "b", QUERY_NAMES) == ArgRef("b", 1)
    assert locate(fn, "query", 0, QUERY_NAMES) == ArgRef("a", 0)
    assert locate(fn, "query", "via_kwargs", QUERY_NAMES) == ArgRef("via_kwargs", None)


def test_builtins_without_signature_fall_back_to_positions() -> None:
    assert locate(max, "query", None, QUERY_NAMES) == ArgRef(None, 0)
    assert locate(max, "context", None, ("chunks",), after=ArgRef(None, 0)) == ArgRef(None, 1)


def test_decorated_positional_rules_for_query_and_context() -> None:
    @ragtrace.generate
    def respond(user_input: str, retrieved_docs: list[str], temperature: float = 0.0) -> str:
        return "r"

    respond("what?", ["d1", "d2"])
    a = only_span().attributes or {}
    assert (
        a[sc.INPUT_VALUE],
        a[sc.RAGTRACE_CONTEXT_COUNT],
        a["ragtrace.context.documents.1.document.id"],
    ) == (
        "what?",
        2,
        "d2",
    )


def test_decorated_explicit_query_and_context_args() -> None:
    @ragtrace.generate(query_arg="rewritten", context_arg="evidence", model_arg="llm")
    def respond(
        original: str, rewritten: str, history: list[str], evidence: list[str], llm: str
    ) -> str:
        return "r"

    respond("orig", "the rewrite", ["h1"], evidence=["e1"], llm="model-z")
    a = only_span().attributes or {}
    assert (
        a[sc.INPUT_VALUE],
        a[sc.RAGTRACE_CONTEXT_COUNT],
        a["ragtrace.context.documents.0.document.id"],
        a[sc.LLM_MODEL_NAME],
    ) == ("the rewrite", 1, "e1", "model-z")


@dataclass
class LCDocument:
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Node:
    node_id: str
    text: str


@dataclass
class NodeWithScore:
    node: Node
    score: float


class Row:
    def __init__(self, pk: int, body: str) -> None:
        self.pk, self.body = pk, body


@pytest.mark.parametrize(
    ("items", "options", "expected"),
    [
        (["a", "b"], {}, [("a", None, None), ("b", None, None)]),
        (
            [{"chunk_id": "a", "content": "A", "relevance_score": 0.5}],
            {},
            [("a", 0.5, "A")],
        ),
        ([LCDocument("A", {"id": "a"})], {}, [("a", None, "A")]),
        (
            [(LCDocument("A", {"source_id": "s"}), 0.25)],
            {"id_of": lambda d: d[0].metadata["source_id"]},
            [("s", 0.25, "A")],
        ),
        ([NodeWithScore(Node("n", "N"), 0.75)], {}, [("n", 0.75, "N")]),
        (
            [Row(7, "body")],
            {"id_of": lambda r: r.pk, "text_of": lambda r: r.body, "score_of": lambda r: 1},
            [("7", 1.0, "body")],
        ),
    ],
)
def test_decorated_retrieval_reads_every_chunk_shape(
    items: list[Any], options: dict[str, Any], expected: list[tuple[str, float | None, str | None]]
) -> None:
    @ragtrace.retrieve(**options)
    def retrieve(query: str) -> list[Any]:
        return items

    assert retrieve("q") is items
    a = only_span().attributes or {}
    got = [
        (
            a[sc.retrieval_document_id(i)],
            a.get(sc.retrieval_document_score(i)),
            a.get(sc.retrieval_document_content(i)),
        )
        for i in range(a[sc.RAGTRACE_RETRIEVAL_COUNT])  # type: ignore[arg-type]
    ]
    assert got == expected
    assert sc.RAGTRACE_INSTRUMENTATION_ERRORS not in a
