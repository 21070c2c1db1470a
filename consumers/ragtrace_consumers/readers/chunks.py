"""Chunk IDs and documents from whatever shape a dialect records them in.

An ID comes from the dialect's own ID field; else from the document's metadata, trying
:data:`DEFAULT_METADATA_ID_KEYS` in order (then ``source`` plus a position key:
``source#position``, else ``source`` alone — unless ``source`` is a file path or a URL, which
loaders put there for every chunk of a file: never a chunk ID, unless ``source`` is one of the
configured keys); only then from the SHA-256 of the text, marked ``hashed`` so recall against
gold IDs is reported n/a, never a silent 0.0.

A tool's own content hash in the ID field — a 64-hex SHA-256, Haystack's auto-generated
``Document.id`` — is no ID the user knows: the metadata ID is preferred over it, and without
one the chunk keeps the hash marked ``hashed`` (recall n/a, never a silent 0.0).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace_consumers.model import Chunk

__all__ = [
    "DEFAULT_METADATA_ID_KEYS",
    "HASH_PREFIX",
    "chunk",
    "chunks_from_json",
    "content_id",
    "is_location",
    "is_tool_hash",
    "looks_like_chunks",
    "metadata_id",
]

DEFAULT_METADATA_ID_KEYS: tuple[str, ...] = (
    "id",
    "doc_id",
    "document_id",
    "chunk_id",
    "node_id",
    "_id",
    "uuid",
)
"""Metadata keys tried, in order, for a document's ID (configurable: ``mapping.metadata_id_keys``)."""
_POSITION_KEYS = ("chunk_index", "start_index", "position", "page", "row")
HASH_PREFIX = "sha256:"

_TEXT_KEYS = ("content", "page_content", "text", "document", "chunk")
_ID_KEYS = ("id", "doc_id", "chunk_id", "node_id", "id_")
_SCORE_KEYS = ("score", "relevance_score", "similarity", "distance_score")


def content_id(text: str) -> str:
    """The stable ID of a document known only by its text."""
    return HASH_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def is_tool_hash(chunk_id: str) -> bool:
    """True for an ID that is a tool's content hash (64 lower-case hex digits: SHA-256)."""
    return len(chunk_id) == 64 and _SHA256_HEX.fullmatch(chunk_id) is not None


_FILE_NAME = re.compile(r"[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}")


def is_location(value: str) -> bool:
    """True for a file path or URL (``docs/a.md``, ``C:\\a.md``, ``a.md``, ``s3://b/k``,
    ``https://…``): where a document came from, shared by all its chunks."""
    return (
        "/" in value or "\\" in value or "://" in value or _FILE_NAME.fullmatch(value) is not None
    )


def _scalar_id(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        text = str(value).strip()
        return text or None
    return None


def metadata_id(
    metadata: Mapping[str, object] | None, keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS
) -> str | None:
    """A document's ID from its metadata, or None."""
    if not metadata:
        return None
    for key in keys:
        found = _scalar_id(metadata.get(key))
        if found:
            return found
    source = _scalar_id(metadata.get("source"))
    if source and not is_location(source):
        for key in _POSITION_KEYS:
            position = _scalar_id(metadata.get(key))
            if position is not None:
                return f"{source}#{position}"
        return source
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _metadata(value: object) -> Mapping[str, object] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, Mapping) else None
    return None


def chunk(
    raw_id: object,
    text: object,
    score: object,
    metadata: object = None,
    keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS,
) -> Chunk | None:
    """One chunk: ID field, else metadata ID, else a hashed content ID; None with neither an ID
    nor a text."""
    body = text if isinstance(text, str) else None
    own = _scalar_id(raw_id)
    number = _number(score)
    if own is not None and is_tool_hash(own):
        found = metadata_id(_metadata(metadata), keys)
        if found:
            return Chunk(id=found, text=body, score=number)
        return Chunk(id=own, text=body, score=number, hashed=True)
    found = own or metadata_id(_metadata(metadata), keys)
    if found:
        return Chunk(id=found, text=body, score=number)
    if body is not None:
        return Chunk(id=content_id(body), text=body, score=number, hashed=True)
    return None


def _document(item: object, keys: Sequence[str]) -> Chunk | None:
    if isinstance(item, str):
        return chunk(None, item, None)
    if not isinstance(item, Mapping):
        return None
    doc: Mapping[str, Any] = item
    # LangChain's serialised form: {"lc": 1, "kwargs": {"page_content": ..., "metadata": ...}}
    kwargs = doc.get("kwargs")
    if isinstance(kwargs, Mapping) and "page_content" in kwargs:
        doc = kwargs
    # {"document": {...}} wrappers (OpenInference's JSON form) and {"node": {...}} (LlamaIndex).
    for wrapper in ("document", "node"):
        inner = doc.get(wrapper)
        if isinstance(inner, Mapping):
            doc = {**inner, **{k: v for k, v in doc.items() if k != wrapper}}
    text = next((doc[k] for k in _TEXT_KEYS if isinstance(doc.get(k), str)), None)
    score = next((doc[k] for k in _SCORE_KEYS if k in doc), None)
    raw_id = next(
        (doc[k] for k in _ID_KEYS if _scalar_id(doc.get(k))),
        None,
    )
    return chunk(raw_id, text, score, doc.get("metadata"), keys)


def looks_like_chunks(value: object) -> bool:
    """True for a non-empty list whose every item is a document: a mapping with a text field
    and an ID, score or metadata field (a function returning other records is not a
    retrieval)."""
    if not isinstance(value, list) or not value:
        return False
    for item in value:
        if not isinstance(item, Mapping):
            return False
        kwargs = item.get("kwargs")
        doc = kwargs if isinstance(kwargs, Mapping) and "page_content" in kwargs else item
        if not any(isinstance(doc.get(k), str) for k in _TEXT_KEYS):
            return False
        if not any(k in doc for k in (*_ID_KEYS, *_SCORE_KEYS, "metadata")):
            return False
    return True


def chunks_from_json(
    value: object, keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS
) -> tuple[Chunk, ...]:
    """Documents from parsed JSON: a list of documents (dicts or strings), or a mapping holding
    one under ``documents``/``docs``/``results``/``nodes``/``source_nodes``/``outputs``."""
    if isinstance(value, Mapping):
        for key in ("documents", "docs", "results", "nodes", "source_nodes", "outputs", "output"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            return ()
    if not isinstance(value, list):
        return ()
    found = (_document(item, keys) for item in value)
    return tuple(c for c in found if c is not None)
