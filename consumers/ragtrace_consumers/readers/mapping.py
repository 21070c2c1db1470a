"""In-house instrumentation, read by configuration instead of code (the ``mapping`` section).

A span is the mapping's when ``role_attribute`` is set on it; its value names the role
(``retrieval_value`` / ``generation_value`` / ``pipeline_value``; anything else is ignored).
Every other field names where a value sits: an attribute key, optionally followed by a JSON
path into that attribute's JSON value — ``app.rag.result:$.hits[*].doc_key`` — where ``$``
is the parsed value, ``.name`` a key, ``[N]`` an index and ``[*]`` every item.

* ``query``, ``answer``: a string (an answer is unwrapped like any other answer);
* ``documents``: a JSON list of documents, read like every dialect's (ID field, metadata,
  content hash);
* ``chunk_ids`` / ``chunk_texts`` / ``chunk_scores``: parallel lists (a list attribute, or a
  JSON path ending in ``[*]``); they replace the IDs, texts and scores of ``documents``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtrace_consumers.model import AttributeValue, Chunk, SpanRecord
from ragtrace_consumers.readers import chunks as chunk_ids
from ragtrace_consumers.readers._reading import Role, SpanReading
from ragtrace_consumers.readers.answers import extract_answer

__all__ = ["MappingReader", "MappingRules", "resolve"]

_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+|\*)\]")


@dataclass(frozen=True)
class MappingRules:
    """Where an in-house span keeps each value (see the module docstring); None: nowhere."""

    role_attribute: str | None = None
    retrieval_value: str = "retrieval"
    generation_value: str = "generation"
    pipeline_value: str = "pipeline"
    query: str | None = None
    documents: str | None = None
    chunk_ids: str | None = None
    chunk_texts: str | None = None
    chunk_scores: str | None = None
    answer: str | None = None

    def __post_init__(self) -> None:
        for name in ("query", "documents", "chunk_ids", "chunk_texts", "chunk_scores", "answer"):
            spec = getattr(self, name)
            if spec is not None:
                _split(spec)  # raises ValueError for a bad path

    @property
    def enabled(self) -> bool:
        return bool(self.role_attribute)


def _split(spec: str) -> tuple[str, list[tuple[str | None, str | None]]]:
    key, sep, path = spec.partition(":")
    if not key.strip():
        raise ValueError(f"mapping {spec!r}: no attribute key")
    if not sep:
        return key.strip(), []
    path = path.strip()
    if not path.startswith("$"):
        raise ValueError(f"mapping {spec!r}: a JSON path starts with $")
    steps: list[tuple[str | None, str | None]] = []
    rest = path[1:]
    pos = 0
    while pos < len(rest):
        m = _STEP.match(rest, pos)
        if m is None:
            raise ValueError(f"mapping {spec!r}: cannot parse the path at {rest[pos:]!r}")
        steps.append((m.group(1), m.group(2)))
        pos = m.end()
    return key.strip(), steps


def _walk(value: object, steps: list[tuple[str | None, str | None]]) -> object:
    for i, (name, index) in enumerate(steps):
        if name is not None:
            if not isinstance(value, Mapping):
                return None
            value = value.get(name)
        elif index == "*":
            if not isinstance(value, list):
                return None
            return [_walk(item, steps[i + 1 :]) for item in value]
        else:
            if not isinstance(value, list) or int(str(index)) >= len(value):
                return None
            value = value[int(str(index))]
    return value


def resolve(attrs: Mapping[str, AttributeValue], spec: str | None) -> object:
    """The value ``spec`` names in ``attrs`` (None when absent)."""
    if spec is None:
        return None
    key, steps = _split(spec)
    raw = attrs.get(key)
    if not steps:
        return list(raw) if isinstance(raw, (list, tuple)) else raw
    if not isinstance(raw, str):
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    return _walk(parsed, steps)


def _as_list(value: object) -> list[object] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        return parsed if isinstance(parsed, list) else [value]
    return None


class MappingReader:
    name = "mapping"

    def __init__(
        self,
        rules: MappingRules,
        metadata_id_keys: Sequence[str] = chunk_ids.DEFAULT_METADATA_ID_KEYS,
    ) -> None:
        self.rules = rules
        self._keys = tuple(metadata_id_keys)
        self._roles = {
            rules.retrieval_value: Role.RETRIEVAL,
            rules.generation_value: Role.GENERATION,
            rules.pipeline_value: Role.PIPELINE,
        }

    def read(self, span: SpanRecord) -> SpanReading | None:
        r = self.rules
        if not r.role_attribute or r.role_attribute not in span.attributes:
            return None
        attrs = span.attributes
        role = self._roles.get(str(attrs[r.role_attribute]))
        query = resolve(attrs, r.query)
        query = query if isinstance(query, str) else None
        if role is Role.RETRIEVAL:
            return SpanReading(self.name, role, query=query, chunks=self._chunks(attrs))
        if role is Role.GENERATION:
            raw = resolve(attrs, r.answer)
            answer, problem = extract_answer(
                raw if isinstance(raw, str) else (None if raw is None else json.dumps(raw))
            )
            return SpanReading(self.name, role, query=query, answer=answer, answer_problem=problem)
        return SpanReading(self.name, role, query=query if role else None)

    def _chunks(self, attrs: Mapping[str, AttributeValue]) -> tuple[Chunk, ...]:
        r = self.rules
        docs = resolve(attrs, r.documents)
        if isinstance(docs, str):
            try:
                docs = json.loads(docs)
            except ValueError:
                docs = None
        base = list(chunk_ids.chunks_from_json(docs, self._keys)) if docs is not None else []
        ids = _as_list(resolve(attrs, r.chunk_ids))
        texts = _as_list(resolve(attrs, r.chunk_texts))
        scores = _as_list(resolve(attrs, r.chunk_scores))
        n = (
            max(len(base), *(len(x) for x in (ids, texts, scores) if x is not None), 0)
            if any(x is not None for x in (ids, texts, scores))
            else len(base)
        )
        out: list[Chunk] = []
        for i in range(n):
            b = base[i] if i < len(base) else None
            raw_id = (
                ids[i]
                if ids is not None and i < len(ids)
                else (None if b is None or b.hashed else b.id)
            )
            text = texts[i] if texts is not None and i < len(texts) else (b.text if b else None)
            score = (
                scores[i] if scores is not None and i < len(scores) else (b.score if b else None)
            )
            c = chunk_ids.chunk(raw_id, text, score)
            if c is not None:
                out.append(c)
        return tuple(out)
