"""One stored span as bytes: the encoding the Redis and SQLite trace stores share, so a span
reads back the same from either."""

from __future__ import annotations

import orjson

from ragtrace_consumers.model import SpanRecord

__all__ = ["decode_span", "encode_span"]


def encode_span(span: SpanRecord) -> bytes:
    """Compact UTF-8 JSON of one span (attribute tuples become lists), by orjson. JSON has no
    NaN or infinity: such a double attribute is stored as null and comes back absent."""
    attrs = span.attributes
    return orjson.dumps(
        [
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            span.name,
            span.scope,
            span.service,
            span.start_ns,
            span.end_ns,
            attrs if type(attrs) is dict else dict(attrs),
            span.status_error,
            span.scope_version,
        ],
    )


def decode_span(raw: str | bytes) -> SpanRecord:
    # A span stored before the scope's version was kept has ten fields.
    t, s, p, name, scope, service, start, end, attrs, error, *version = orjson.loads(raw)
    return SpanRecord(
        trace_id=t,
        span_id=s,
        parent_span_id=p,
        name=name,
        scope=scope,
        service=service,
        start_ns=start,
        end_ns=end,
        attributes={
            k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items() if v is not None
        },
        status_error=bool(error),
        scope_version=version[0] if version else "",
    )
