"""The readers' memo: a span read at ingest is not read again when its trace is scored from a
copy loaded from the trace store, and a span whose content changed is always read afresh."""

from __future__ import annotations

import dataclasses

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers._reading import Role, SpanReading
from ragtrace_consumers.readers.registry import SpanReaders


class CountingReader:
    name = "counting"

    def __init__(self) -> None:
        self.reads = 0

    def read(self, span: SpanRecord) -> SpanReading | None:
        self.reads += 1
        query = span.attributes.get("q")
        return SpanReading(self.name, Role.RETRIEVAL, query=str(query)) if query else None


def _span(**attributes: str) -> SpanRecord:
    return SpanRecord("a" * 32, "b" * 16, None, "retrieve", "s", "svc", 1, 2, dict(attributes))


def test_an_equal_copy_of_a_span_is_not_read_again() -> None:
    reader = CountingReader()
    readers = SpanReaders([reader])
    first = readers.read(_span(q="logs?"))
    copy = readers.read(_span(q="logs?"))  # another object, as loaded from Redis
    assert first is copy and first is not None and first.query == "logs?"
    assert reader.reads == 1


def test_a_span_with_the_same_ids_but_other_content_is_read_afresh() -> None:
    reader = CountingReader()
    readers = SpanReaders([reader])
    span = _span(q="logs?")
    assert readers.read(span) is not None
    changed = readers.read(dataclasses.replace(span, attributes={"q": "other?"}))
    assert changed is not None and changed.query == "other?"
    assert readers.read(dataclasses.replace(span, attributes={})) is None
    assert reader.reads == 3
