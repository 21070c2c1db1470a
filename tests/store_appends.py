"""A trace store's ``append`` as the service calls it, for tests that hand it spans directly.

The stores never read spans (they import only ``errors`` and ``model``): the caller names the
traces that may start an entry. Here the default readers decide
(:func:`~ragtrace_consumers.readers.creating_traces`), as the pipeline's would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragtrace_consumers.model import SpanRecord, TraceStore
from ragtrace_consumers.readers import creating_traces

__all__ = ["append_read"]


def append_read(
    store: TraceStore, spans: Sequence[SpanRecord], due_at: Mapping[str, float]
) -> None:
    """``store.append(spans, due_at, creates)`` with ``creates`` read by the default readers."""
    store.append(spans, due_at, creating_traces(spans))
