"""extract_chunks: every documented shape, alias and failure."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from ragtrace import ChunkExtractionError, ExtractedChunk, extract_chunks


@dataclass
class LCDocument:  # LangChain Document-like
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass
class LINode:  # LlamaIndex TextNode-like
    node_id: str
    text: str


@dataclass
class LINodeWithScore:
    node: Any
    score: float | None = None


class ContentOnlyNode:  # a node exposing its text only through get_content()
    def __init__(self, node_id: str, content: str) -> None:
        self.id_ = node_id
        self._content = content

    def get_content(self) -> str:
        return self._content


def test_plain_string_ids() -> None:
    assert extract_chunks(["a", "b"]) == (ExtractedChunk("a"), ExtractedChunk("b"))


def test_int_and_uuid_ids() -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert extract_chunks([7, u]) == (ExtractedChunk("7"), ExtractedChunk(str(u)))


def test_canonical_dicts() -> None:
    got = extract_chunks([{"id": "c1", "text": "hello", "score": 0.5}, {"id": "c2"}])
    assert got == (ExtractedChunk("c1", "hello", 0.5), ExtractedChunk("c2"))


@pytest.mark.parametrize(
    "id_key", ["id", "chunk_id", "doc_id", "document_id", "node_id", "id_", "_id"]
)
@pytest.mark.parametrize("text_key", ["text", "page_content", "content"])
@pytest.mark.parametrize(
    "score_key", ["score", "relevance_score", "similarity", "similarity_score"]
)
def test_dict_aliases(id_key: str, text_key: str, score_key: str) -> None:
    got = extract_chunks([{id_key: "x", text_key: "t", score_key: 2}])
    assert got == (ExtractedChunk("x", "t", 2.0),)


def test_dict_alias_order_first_non_none_wins() -> None:
    got = extract_chunks(
        [{"id": None, "chunk_id": "second", "doc_id": "third", "text": None, "content": "c"}]
    )
    assert got == (ExtractedChunk("second", "c"),)


def test_dict_metadata_fallback() -> None:
    got = extract_chunks(
        [{"page_content": "p", "metadata": {"chunk_id": "m1", "relevance_score": "0.25"}}]
    )
    assert got == (ExtractedChunk("m1", "p", 0.25),)


def test_langchain_document_like() -> None:
    docs = [
        LCDocument("first", {"id": "d1"}),
        LCDocument("second", {"doc_id": "d2", "score": 0.1}),
        LCDocument("x", {}, id="own"),
    ]
    assert extract_chunks(docs) == (
        ExtractedChunk("d1", "first"),
        ExtractedChunk("d2", "second", 0.1),
        ExtractedChunk("own", "x"),
    )


def test_langchain_with_score_pairs() -> None:
    got = extract_chunks([(LCDocument("t", {"id": "d1"}), 0.9), ("plain", 1)])
    assert got == (ExtractedChunk("d1", "t", 0.9), ExtractedChunk("plain", None, 1.0))


def test_llamaindex_node_with_score_like() -> None:
    got = extract_chunks(
        [
            LINodeWithScore(LINode("n1", "alpha"), 0.7),
            LINodeWithScore(ContentOnlyNode("n2", "beta")),
        ]
    )
    assert got == (ExtractedChunk("n1", "alpha", 0.7), ExtractedChunk("n2", "beta"))


def test_llamaindex_dict_form() -> None:
    got = extract_chunks(
        [
            {"node": {"id_": "n1", "text": "alpha", "score": 0.1}, "score": 0.8},
            {"node": {"id_": "n2"}},
        ]
    )
    assert got == (ExtractedChunk("n1", "alpha", 0.8), ExtractedChunk("n2"))


def test_bytes_text_decoded() -> None:
    assert extract_chunks([{"id": "a", "text": b"caf\xc3\xa9 \xff"}]) == (
        ExtractedChunk("a", "café \ufffd"),
    )


def test_user_extractors_override_per_field() -> None:
    rows = [("r1", "body one"), ("r2", "body two")]
    got = extract_chunks(rows, id_of=lambda r: r[0], text_of=lambda r: r[1])
    assert got == (ExtractedChunk("r1", "body one"), ExtractedChunk("r2", "body two"))
    got = extract_chunks(
        [{"id": "a", "text": "t", "rank_score": 3}], score_of=lambda d: d["rank_score"]
    )
    assert got == (ExtractedChunk("a", "t", 3.0),)


def test_empty_input() -> None:
    assert extract_chunks([]) == ()
    assert extract_chunks(iter(())) == ()


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("abc", "chunks: expected a sequence of chunks, got str"),
        ({"id": "a"}, "chunks: expected a sequence of chunks, got dict"),
        (None, "chunks: expected a sequence of chunks, got NoneType"),
        (5, "chunks: expected a sequence of chunks, got int"),
        (
            ["a", {"text": "no id"}],
            "chunk 1: no ID found in dict (looked for id, chunk_id, doc_id, document_id, node_id, id_, _id and metadata[...])",
        ),
        ([""], "chunk 0: empty string ID"),
        ([{"id": ["x"]}], "chunk 0: ID must be a string, integer or UUID, got list"),
        ([{"id": True}], "chunk 0: ID must be a string, integer or UUID, got bool"),
        ([{"id": "a", "text": 3}], "chunk 0: text must be a string or bytes, got int"),
        ([{"id": "a", "score": "high"}], "chunk 0: score must be a number, got 'high'"),
        ([{"id": "a", "score": True}], "chunk 0: score must be a number, got True"),
        (
            [object()],
            "chunk 0: no ID found in object (looked for id, chunk_id, doc_id, document_id, node_id, id_, _id and metadata[...])",
        ),
    ],
)
def test_errors_name_item_and_reason(items: Any, message: str) -> None:
    with pytest.raises(ChunkExtractionError) as info:
        extract_chunks(items)
    assert str(info.value) == message


def test_error_attributes_and_type() -> None:
    with pytest.raises(ValueError) as info:
        extract_chunks(["ok", "ok", 3.5])
    err = info.value
    assert isinstance(err, ChunkExtractionError)
    assert (err.index, err.reason) == (
        2,
        "no ID found in float (looked for id, chunk_id, doc_id, document_id, node_id, id_, _id and metadata[...])",
    )


def test_failing_user_extractor_is_wrapped() -> None:
    with pytest.raises(ChunkExtractionError) as info:
        extract_chunks([{"id": "a"}, {}], id_of=lambda d: d["id"])
    assert str(info.value) == "chunk 1: id_of raised KeyError: 'id'"
    assert isinstance(info.value.__cause__, KeyError)


def test_failing_property_is_wrapped() -> None:
    class Broken:
        @property
        def id(self) -> str:
            raise RuntimeError("db closed")

    with pytest.raises(ChunkExtractionError) as info:
        extract_chunks([Broken()])
    assert str(info.value) == "chunk 0: reading Broken raised RuntimeError: db closed"


def test_extracted_chunk_validates() -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        ExtractedChunk("")
    with pytest.raises(ValueError, match="score must be a number"):
        ExtractedChunk("a", None, "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="text must be a string"):
        ExtractedChunk("a", 1)  # type: ignore[arg-type]
