"""Batched calls on the consumer seams: one round trip for many traces where the store can.

The seams in :mod:`ragtrace_consumers.model` are per item; the Redis and in-memory stores also
offer batched methods (``load_many``, ``release_many``, ``written_many``, ``mark_written_many``,
``get_many``, ``put_many``) and the OTLP sink ``write_many``. These helpers call the batched
method when an implementation has it and fall back to one call per item otherwise (e.g. the
SQLite stores of the embedded evaluator), so the pipeline batches without widening the seams.
Results come back in input order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.score import TraceScores
from ragtrace_consumers.writeback import WriteBackError

__all__ = [
    "cache_get_many",
    "cache_put_many",
    "load_many",
    "mark_written_many",
    "release_many",
    "write_many",
    "written_many",
]


def load_many(store: Any, trace_ids: Sequence[str]) -> list[list[SpanRecord]]:
    if not trace_ids:
        return []
    batched = getattr(store, "load_many", None)
    if batched is not None:
        return list(batched(trace_ids))
    return [store.load(t) for t in trace_ids]


def release_many(store: Any, leases: Sequence[tuple[str, str | None]]) -> list[bool]:
    if not leases:
        return []
    batched = getattr(store, "release_many", None)
    if batched is not None:
        return list(batched(leases))
    return [bool(store.release(t, token)) for t, token in leases]


def written_many(store: Any, keys: Sequence[tuple[str, str]]) -> list[bool]:
    if not keys:
        return []
    batched = getattr(store, "written_many", None)
    if batched is not None:
        return list(batched(keys))
    return [bool(store.written(t, m)) for t, m in keys]


def mark_written_many(store: Any, keys: Sequence[tuple[str, str]]) -> None:
    if not keys:
        return
    batched = getattr(store, "mark_written_many", None)
    if batched is not None:
        batched(keys)
        return
    for t, m in keys:
        store.mark_written(t, m)


def cache_get_many(cache: Any, keys: Sequence[str]) -> list[bytes | None]:
    if not keys:
        return []
    batched = getattr(cache, "get_many", None)
    if batched is not None:
        return list(batched(keys))
    return [cache.get(k) for k in keys]


def cache_put_many(cache: Any, items: Sequence[tuple[str, bytes]]) -> None:
    if not items:
        return
    batched = getattr(cache, "put_many", None)
    if batched is not None:
        batched(items)
        return
    for key, value in items:
        cache.put(key, value)


def write_many(sink: Any, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
    """Deliver ``batch``; per item None (delivered) or the :class:`WriteBackError`."""
    if not batch:
        return []
    batched = getattr(sink, "write_many", None)
    if batched is not None:
        return list(batched(batch))
    out: list[WriteBackError | None] = []
    for scores in batch:
        try:
            sink.write(scores)
        except WriteBackError as exc:
            out.append(exc)
        else:
            out.append(None)
    return out
