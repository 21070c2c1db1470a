"""Writing one span's attributes within the size limits, with redaction and hashing.

A :class:`Recorder` collects a span's attributes in a dict and sets them in one call when the span
ends. Every string that comes from user data (IDs, query, answer, chunk texts, user attribute
values) is cut to ``max_attribute_length`` characters and then charged, in UTF-8 bytes, against
the span's ``max_span_content_bytes`` budget; a value that does not fit is cut to what is left (or
left out when nothing is) and its key is listed in ``ragtrace.truncated``. IDs are written first,
so a span runs out of room for chunk texts long before it runs out of room for chunk IDs.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ragtrace import _health, semconv
from ragtrace._config import Redactor, Settings
from ragtrace.chunks import ExtractedChunk
from ragtrace.normalize import question_sha256

__all__ = [
    "CONTEXT_KEYS",
    "CUT",
    "OMITTED",
    "RETRIEVAL_KEYS",
    "REWRITTEN",
    "VERBATIM",
    "DocumentKeys",
    "Recorder",
    "answer_text",
    "attribute_value",
    "query_sha256",
    "text_sha256",
]

# What became of a text handed to Recorder.content (ordered: higher is more complete).
OMITTED, CUT, REWRITTEN, VERBATIM = 0, 1, 2, 3

query_sha256 = lru_cache(maxsize=256)(question_sha256)
"""``ragtrace.normalize.question_sha256``, cached: one query is hashed by up to three spans."""


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_keys_lock = threading.Lock()


class DocumentKeys:
    """The attribute keys of one list of documents (retrieved or supplied as context)."""

    def __init__(
        self,
        list_name: str,
        count: str,
        id_key: Callable[[int], str],
        score_key: Callable[[int], str] | None,
        content_key: Callable[[int], str],
        sha_key: Callable[[int], str],
        length_key: Callable[[int], str],
    ) -> None:
        self.list_name = list_name
        self.count = count
        self._makers = (id_key, score_key, content_key, sha_key, length_key)
        self._keys: list[tuple[str, str | None, str, str, str]] = []

    def table(self, n: int) -> list[tuple[str, str | None, str, str, str]]:
        """The keys of documents ``0..n-1`` (and possibly more), indexable by position."""
        keys = self._keys
        if n > len(keys):
            self.at(n - 1)
        return keys

    def at(self, i: int) -> tuple[str, str | None, str, str, str]:
        keys = self._keys
        if i >= len(keys):
            with _keys_lock:  # built once per index, then reused by every span
                while len(keys) <= i:
                    n = len(keys)
                    ids, scores, contents, shas, lengths = self._makers
                    keys.append(
                        (ids(n), scores(n) if scores else None, contents(n), shas(n), lengths(n))
                    )
        return keys[i]


RETRIEVAL_KEYS = DocumentKeys(
    "retrieval.documents",
    semconv.RAGTRACE_RETRIEVAL_COUNT,
    semconv.retrieval_document_id,
    semconv.retrieval_document_score,
    semconv.retrieval_document_content,
    semconv.retrieval_document_sha256,
    semconv.retrieval_document_length,
)
CONTEXT_KEYS = DocumentKeys(
    "ragtrace.context.documents",
    semconv.RAGTRACE_CONTEXT_COUNT,
    semconv.context_document_id,
    None,
    semconv.context_document_content,
    semconv.context_document_sha256,
    semconv.context_document_length,
)


class Recorder:
    """The attributes of one span being recorded, and what is left of its size budget."""

    __slots__ = (
        "attrs",
        "capture",
        "errors",
        "max_documents",
        "max_len",
        "redact",
        "remaining",
        "truncated",
    )

    def __init__(self, settings: Settings, capture: bool, redact: Redactor | None) -> None:
        self.attrs: dict[str, Any] = {semconv.RAGTRACE_CONTENT_CAPTURED: capture}
        self.capture = capture
        self.redact = redact
        self.remaining = settings.max_span_content_bytes
        self.max_len = settings.max_attribute_length
        self.max_documents = settings.max_documents
        self.truncated: list[str] = []
        self.errors = 0

    def fail(self, reason: str, exc: BaseException | None = None) -> None:
        """Count an instrumentation failure on this span and in the SDK's counters."""
        self.errors += 1
        _health.report(reason, exc)

    def text(self, key: str, value: str) -> bool:
        """Record ``value`` under ``key`` within the limits; True if it was recorded whole."""
        whole = True
        if len(value) > self.max_len:
            value = value[: self.max_len]
            whole = False
        size = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
        if size > self.remaining:
            whole = False
            if self.remaining <= 0:
                self.truncated.append(key)
                return False
            value = value.encode("utf-8", "surrogatepass")[: self.remaining].decode(
                "utf-8", "ignore"
            )
            size = self.remaining
        self.remaining -= size
        self.attrs[key] = value
        if not whole:
            self.truncated.append(key)
        return whole

    def content(self, key: str, value: str) -> int:
        """Record a text of user content (redacted first); returns OMITTED/CUT/REWRITTEN/VERBATIM."""
        if not self.capture:
            return OMITTED
        recorded = value
        if self.redact is not None:
            try:
                rewritten = self.redact(value)
            except Exception as exc:  # noqa: BLE001 - fail closed: unredacted text is never recorded
                self.fail("redact", exc)
                return OMITTED
            if rewritten is None:
                return OMITTED
            if not isinstance(rewritten, str):
                self.fail(
                    "redact", TypeError(f"redact returned {type(rewritten).__name__}, not str")
                )
                return OMITTED
            recorded = rewritten
        if not self.text(key, recorded):
            return CUT
        return VERBATIM if recorded is value or recorded == value else REWRITTEN

    def query(self, query: str) -> None:
        self.attrs[semconv.RAGTRACE_QUERY_SHA256] = query_sha256(query)
        self.content(semconv.INPUT_VALUE, query)

    def whole(self, key: str, value: str) -> bool:
        """Record ``value`` only if it fits whole (for values that are useless cut, like JSON)."""
        size = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
        if len(value) > self.max_len or size > self.remaining:
            self.truncated.append(key)
            return False
        self.remaining -= size
        self.attrs[key] = value
        return True

    def ids(self, chunks: Sequence[ExtractedChunk], keys: DocumentKeys) -> None:
        """Record the count, then each recorded chunk's ID and score (the first ``max_documents``)."""
        attrs = self.attrs
        attrs[keys.count] = len(chunks)
        shown = chunks[: self.max_documents]
        table = keys.table(len(shown))
        max_len = self.max_len
        for i, chunk in enumerate(shown):
            id_key, score_key, _, _, _ = table[i]
            cid = chunk.id
            n = len(cid)
            if n <= max_len and n <= self.remaining and cid.isascii():  # the common case, inline
                attrs[id_key] = cid
                self.remaining -= n
            else:
                self.text(id_key, cid)
            if chunk.score is not None and score_key is not None:
                attrs[score_key] = chunk.score
        if len(chunks) > self.max_documents:
            self.truncated.append(keys.list_name)

    def texts(
        self,
        chunks: Sequence[ExtractedChunk],
        keys: DocumentKeys,
        known: Mapping[str, str] | None = None,
        recorded: dict[str, str] | None = None,
    ) -> None:
        """Record chunk texts; where a text is not recorded verbatim and whole, its SHA-256 and length.

        A chunk whose text equals ``known[id]`` (recorded by the trace's retrieval span) is left
        at its ID. Texts recorded whole (possibly redacted) are added to ``recorded``.
        """
        attrs = self.attrs
        shown = chunks[: self.max_documents]
        table = keys.table(len(shown))
        plain = self.capture and self.redact is None
        max_len = self.max_len
        for i, chunk in enumerate(shown):
            text = chunk.text
            if text is None:
                continue
            if known is not None:
                seen = known.get(chunk.id)
                if seen is not None and (seen is text or seen == text):
                    continue
            _, _, content_key, sha_key, length_key = table[i]
            n = len(text)
            if plain and n <= max_len and n <= self.remaining and text.isascii():
                attrs[content_key] = text  # the common case, inline: recorded verbatim and whole
                self.remaining -= n
                if recorded is not None:
                    recorded[chunk.id] = text
                continue
            outcome = self.content(content_key, text)
            if outcome != VERBATIM:
                attrs[sha_key] = text_sha256(text)
                attrs[length_key] = len(text)
            if outcome >= REWRITTEN and recorded is not None:
                recorded[chunk.id] = text

    def user_attribute(self, key: object, value: object) -> None:
        """Record a user-given attribute under the user's key (values as by attribute_value)."""
        if not isinstance(key, str) or not key:
            self.fail(
                "user attribute", TypeError(f"attribute key must be a non-empty str, got {key!r}")
            )
            return
        try:
            coerced = attribute_value(value)
        except Exception as exc:  # noqa: BLE001
            self.fail("user attribute", exc)
            return
        if isinstance(coerced, str):
            self.text(key, coerced)
        elif isinstance(coerced, tuple) and coerced and isinstance(coerced[0], str):
            kept = []
            for item in coerced:
                cut = item[: self.max_len]
                size = len(cut.encode("utf-8", "surrogatepass"))
                if size > self.remaining:
                    break
                self.remaining -= size
                kept.append(cut)
            self.attrs[key] = tuple(kept)
            if len(kept) < len(coerced) or any(len(v) > self.max_len for v in coerced):
                self.truncated.append(key)
        else:
            self.attrs[key] = coerced

    def flush(self, span: Any) -> None:
        """Set every collected attribute on ``span`` in one call."""
        if self.truncated:
            self.attrs[semconv.RAGTRACE_TRUNCATED] = tuple(self.truncated)
        if self.errors:
            self.attrs[semconv.RAGTRACE_INSTRUMENTATION_ERRORS] = self.errors
        span.set_attributes(self.attrs)


_ANSWER_KEYS = ("answer", "content", "text", "output")


def answer_text(value: object) -> tuple[str, bool] | None:
    """The text of a function's answer and whether it is JSON; ``None`` when there is nothing.

    A ``str`` is the answer; else the first ``str`` found under ``answer``, ``content``, ``text``
    or ``output`` (mapping key or attribute: LangChain ``AIMessage.content``, a ``{"answer": …}``
    dict); else the value as JSON (``default=str``). Raises when it cannot be serialised.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value, False
    for name in _ANSWER_KEYS:
        found = value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
        if isinstance(found, str):
            return found, False
    return json.dumps(value, default=str, ensure_ascii=False), True


_SCALARS = (str, bool, int, float)


def attribute_value(value: object) -> object:
    """``value`` as an OTel attribute value: scalars and homogeneous sequences of them as they
    are, anything else as ``str(value)`` (which may raise: the caller counts that)."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)) and value:
        kind = type(value[0])
        if kind in _SCALARS and all(type(v) is kind for v in value):
            return tuple(value)
    return str(value)
