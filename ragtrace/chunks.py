"""Turn whatever a retriever returns into chunk IDs, texts and scores.

The decorators and the offline tools both call :func:`extract_chunks`, so every rule lives here
once. For each item, in order:

1. **User extractors.** ``id_of``/``text_of``/``score_of`` (each optional) replace the built-in
   lookup for their field; the other fields still use the rules below.
2. **Plain IDs.** A ``str``, an ``int`` or a ``uuid.UUID`` is the chunk's ID (no text, no score).
3. **(item, score) pairs.** A 2-tuple whose second element is a real number (LangChain's
   ``similarity_search_with_score``) is the first element read by these rules, with that score.
4. **Wrappers.** An item with a non-``None`` ``node`` key or attribute (LlamaIndex
   ``NodeWithScore``, also in its ``dict`` form) takes its ID and text from the node and its score
   from the wrapper's ``score`` (falling back to the node's).
5. **Mappings and objects.** Keys of a mapping, attributes of anything else, first non-``None``
   wins:

   - ID: ``id``, ``chunk_id``, ``doc_id``, ``document_id``, ``node_id``, ``id_``, ``_id``; then the
     same names inside a ``metadata`` mapping (LangChain ``Document.metadata["id"]``).
   - text: ``text``, ``page_content``, ``content``; then, for objects only, the result of a
     ``get_content()`` method (LlamaIndex nodes).
   - score: ``score``, ``relevance_score``, ``similarity``, ``similarity_score``; then the same
     names inside ``metadata``.

Values are coerced strictly: an ID must be a non-empty ``str``, an ``int`` (not ``bool``) or a
``UUID``; a text ``str`` or ``bytes`` (decoded as UTF-8, bad bytes replaced) or ``None``; a score a
real number or a numeric string. Anything else, an item without an ID, a failing user extractor,
or ``items`` being a string or mapping rather than a sequence of chunks raises
:class:`ChunkExtractionError` naming the item's index and the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragtrace.errors import RagtraceError

__all__ = ["ChunkExtractionError", "ExtractedChunk", "Extractor", "extract_chunks"]

Extractor = Callable[[Any], object]
"""A user-supplied callable reading one field (ID, text or score) from one item. Its parameter is
``Any`` so an application's typed function (``def id_of(doc: Document) -> str``) or lambda
(``lambda r: r["id"]``) type-checks where it is passed."""

ID_KEYS: tuple[str, ...] = ("id", "chunk_id", "doc_id", "document_id", "node_id", "id_", "_id")
TEXT_KEYS: tuple[str, ...] = ("text", "page_content", "content")
SCORE_KEYS: tuple[str, ...] = ("score", "relevance_score", "similarity", "similarity_score")

_MISSING = object()


@dataclass(frozen=True, slots=True)
class ExtractedChunk:
    """One chunk as ragtrace records it: a non-empty ID, its text when known, its score when known."""

    id: str
    text: str | None = None
    score: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"ExtractedChunk.id must be a non-empty string, got {self.id!r}")
        if self.text is not None and not isinstance(self.text, str):
            raise ValueError(
                f"ExtractedChunk.text must be a string or None, got {type(self.text).__name__}"
            )
        if self.score is not None and (
            isinstance(self.score, bool) or not isinstance(self.score, (int, float))
        ):
            raise ValueError(f"ExtractedChunk.score must be a number or None, got {self.score!r}")


class ChunkExtractionError(RagtraceError, ValueError):
    """An item could not be read as a chunk. ``index`` is its position (``None``: the whole input)."""

    def __init__(self, index: int | None, reason: str) -> None:
        self.index = index
        self.reason = reason
        where = "chunks" if index is None else f"chunk {index}"
        super().__init__(f"{where}: {reason}")


def extract_chunks(
    items: Iterable[object],
    *,
    id_of: Extractor | None = None,
    text_of: Extractor | None = None,
    score_of: Extractor | None = None,
) -> tuple[ExtractedChunk, ...]:
    """Read every item of ``items`` as a chunk, in order, by the rules in this module's docstring."""
    if items is None or isinstance(items, (str, bytes, Mapping)):
        raise ChunkExtractionError(
            None, f"expected a sequence of chunks, got {type(items).__name__}"
        )
    try:
        iterator = iter(items)
    except TypeError:
        raise ChunkExtractionError(
            None, f"expected a sequence of chunks, got {type(items).__name__}"
        ) from None
    if id_of is not None or text_of is not None or score_of is not None:
        return tuple(_custom(i, item, id_of, text_of, score_of) for i, item in enumerate(iterator))
    out: list[ExtractedChunk] = []
    append = out.append
    for i, item in enumerate(iterator):
        # Fast paths, inline because this runs for every chunk of every call: a non-empty str,
        # and a plain dict holding only "id" (str) and optionally "text" (str) and "score" (float).
        kind = type(item)
        if kind is str and item:
            append(_trusted(item, None, None))  # type: ignore[arg-type]
            continue
        if kind is dict:
            cid = item.get("id")  # type: ignore[attr-defined]
            text = item.get("text")  # type: ignore[attr-defined]
            score = item.get("score")  # type: ignore[attr-defined]
            if (
                type(cid) is str
                and cid
                and (text is None or type(text) is str)
                and (score is None or type(score) is float)
                and len(item) == 1 + ("text" in item) + ("score" in item)  # type: ignore[arg-type,operator]
            ):
                append(_trusted(cid, text, score))
                continue
        append(_custom(i, item, None, None, None))
    return tuple(out)


_new = object.__new__
_set = object.__setattr__


def _trusted(cid: str, text: str | None, score: float | None) -> ExtractedChunk:
    """An ExtractedChunk from values already checked by the caller (the hot path skips validation)."""
    chunk: ExtractedChunk = _new(ExtractedChunk)
    _set(chunk, "id", cid)
    _set(chunk, "text", text)
    _set(chunk, "score", score)
    return chunk


def _custom(
    index: int,
    item: object,
    id_of: Extractor | None,
    text_of: Extractor | None,
    score_of: Extractor | None,
) -> ExtractedChunk:
    """Item ``index`` read through the extractors given, else by the module's rules; whatever
    reading it raises leaves as a :class:`ChunkExtractionError` naming the index."""
    try:
        source, pair_score = _unwrap_pair(item)
        holder, outer = _unwrap_node(source)
        raw_id = _call(index, "id_of", id_of, item) if id_of is not None else _read_id(holder)
        raw_text = (
            _call(index, "text_of", text_of, item) if text_of is not None else _read_text(holder)
        )
        if score_of is not None:
            raw_score = _call(index, "score_of", score_of, item)
        elif pair_score is not _MISSING:
            raw_score = pair_score
        else:
            raw_score = _first(outer, SCORE_KEYS) if outer is not None else _MISSING
            if raw_score is _MISSING or raw_score is None:
                raw_score = _read_score(holder)
        return ExtractedChunk(
            _coerce_id(index, raw_id, item),
            _coerce_text(index, raw_text),
            _coerce_score(index, raw_score),
        )
    except ChunkExtractionError:
        raise
    except Exception as exc:  # a property or get_content() of the item itself raised
        raise ChunkExtractionError(
            index, f"reading {type(item).__name__} raised {type(exc).__name__}: {exc}"
        ) from exc


def _unwrap_pair(item: object) -> tuple[object, object]:
    if type(item) is tuple and len(item) == 2:
        first, second = item
        if _is_number(second) and not _is_number(first):
            return first, second
    return item, _MISSING


def _unwrap_node(item: object) -> tuple[object, object | None]:
    if _is_plain_id(item):
        return item, None
    node = _get(item, "node")
    if node is _MISSING or node is None or _is_plain_id(node):
        return item, None
    return node, item


def _read_id(holder: object) -> object:
    if _is_plain_id(holder):
        return holder
    return _field_or_metadata(holder, ID_KEYS)


def _read_text(holder: object) -> object:
    if _is_plain_id(holder):
        return None
    value = _first(holder, TEXT_KEYS)
    if (value is _MISSING or value is None) and not isinstance(holder, Mapping):
        getter = getattr(holder, "get_content", None)
        if callable(getter):
            value = getter()
    return None if value is _MISSING else value


def _read_score(holder: object) -> object:
    if _is_plain_id(holder):
        return None
    value = _field_or_metadata(holder, SCORE_KEYS)
    return None if value is _MISSING else value


def _field_or_metadata(holder: object, names: tuple[str, ...]) -> object:
    """The first of ``names`` on ``holder``, else in its ``metadata`` mapping (LangChain keeps
    IDs and scores there)."""
    value = _first(holder, names)
    if value is _MISSING or value is None:
        meta = _get(holder, "metadata")
        if isinstance(meta, Mapping):
            value = _first(meta, names)
    return value


def _first(holder: object, names: tuple[str, ...]) -> object:
    for name in names:
        value = _get(holder, name)
        if value is not _MISSING and value is not None:
            return value
    return _MISSING


def _get(holder: object, name: str) -> object:
    if isinstance(holder, Mapping):
        return holder.get(name, _MISSING)
    return getattr(holder, name, _MISSING)


def _call(index: int, what: str, fn: Extractor, item: object) -> object:
    try:
        return fn(item)
    except Exception as exc:  # the user's extractor: report which item and what it raised
        raise ChunkExtractionError(index, f"{what} raised {type(exc).__name__}: {exc}") from exc


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_plain_id(value: object) -> bool:
    return isinstance(value, (str, uuid.UUID)) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


def _coerce_id(index: int, value: object, item: object) -> str:
    if value is _MISSING or value is None:
        raise ChunkExtractionError(
            index,
            f"no ID found in {type(item).__name__} (looked for {', '.join(ID_KEYS)} and metadata[...])",
        )
    if isinstance(value, str):
        if not value:
            raise ChunkExtractionError(index, "empty string ID")
        return value
    if isinstance(value, uuid.UUID) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise ChunkExtractionError(
        index, f"ID must be a string, integer or UUID, got {type(value).__name__}"
    )


def _coerce_text(index: int, value: object) -> str | None:
    if value is None or value is _MISSING or isinstance(value, str):
        return None if value is _MISSING else value  # type: ignore[return-value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    raise ChunkExtractionError(index, f"text must be a string or bytes, got {type(value).__name__}")


def _coerce_score(index: int, value: object) -> float | None:
    if value is None or value is _MISSING:
        return None
    if _is_number(value):
        return float(value)  # type: ignore[arg-type]
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ChunkExtractionError(index, f"score must be a number, got {value!r}"[:200])
