"""What of a batch of spans is stored for assembly, and when each trace becomes due for scoring.

Completion rule (:func:`completion_due`), applied to each batch of arriving spans at ``now``:

* a trace whose root span (no parent) arrived together with a generation span is due at
  ``now + root_grace_s`` (default 0: the root ends last, so the trace is complete);
* else one whose generation span arrived is due at ``now + quiet_s`` — the quiet period lets
  spans exported by other services (or a later batch) catch up; the pipeline passes an agent's
  tool-call turn (a generation reading that ``continues``) as no generation, so the period
  starts at the call that answers;
* else (retrieval, pipeline or root spans only) it is due at ``now + idle_s``, so a trace that
  never gets a generation is still scored. A root without a generation does not complete a
  trace: one export request's spans can reach Kafka in two messages (the collector's queue
  splits batches at ``RAGTRACE_BATCH_MAX_SPANS``), the generation's part read in a later poll,
  or seconds later when its send is retried, and a trace scored without its generation is lost
  for good.

The stores keep the **earliest** due time a trace was ever given, so the rule does not depend on
the order batches arrive in: quiet periods count from the generation span's arrival, and a root
arriving in a later batch than the generation leaves the trace due at the end of that quiet
period. Spans arriving after a trace was scored are not stored again; the stores count them as
``late_spans``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ragtrace_consumers.model import SpanRecord, group_by_trace
from ragtrace_consumers.readers import Role, is_evaluation_span, role_of

__all__ = [
    "DEFAULT_IDLE_S",
    "completion_due",
    "earliest",
    "select_roles",
    "select_spans",
    "unread_traces",
]

_OURS = "ragtrace."
DEFAULT_IDLE_S = 60.0
"""Wait for a trace that has shown neither its root nor a generation span."""


def select_spans(
    spans: Sequence[SpanRecord], roles: Sequence[Role | None] | None = None
) -> list[SpanRecord]:
    """The spans worth storing: RAG spans whole; a non-RAG root span (a completion signal), and
    any other span carrying ``ragtrace.*`` attributes (``ragtrace.set_question_id()`` on the
    app's own span), with only their ``ragtrace.*`` attributes; every other span (and our own
    evaluation spans) is dropped. ``roles`` are the spans' roles as the caller read them
    (default: :func:`~ragtrace_consumers.readers.role_of`)."""
    return [span for span, _ in select_roles(spans, roles)]


def select_roles(
    spans: Sequence[SpanRecord],
    roles: Sequence[Role | None] | None = None,
    evidence: Sequence[bool] | None = None,
) -> list[tuple[SpanRecord, Role | None]]:
    """:func:`select_spans`, each kept span with its role (each span is read at most once).
    ``evidence[i]`` True keeps ``spans[i]`` whole although it has no role: what a generation
    was given, recorded apart from it (a GenAI input log event's instructions or tool results)."""
    kept: list[tuple[SpanRecord, Role | None]] = []
    for i, span in enumerate(spans):
        if is_evaluation_span(span):
            continue
        role = role_of(span) if roles is None else roles[i]
        if role is not None or (evidence is not None and evidence[i]):
            kept.append((span, role))
            continue
        ours = {k: v for k, v in span.attributes.items() if k.startswith(_OURS)}
        if span.parent_span_id is None or ours:
            kept.append((replace(span, attributes=ours), None))
    return kept


MAX_SCOPE_WITNESSES = 16
"""At most this many spans of an unread trace are stored per batch to name its scopes."""


def unread_traces(
    spans: Sequence[SpanRecord], roles: Sequence[Role | None]
) -> tuple[list[SpanRecord], set[str]]:
    """The traces of this batch whose root span is here and of which no span here has a RAG
    role, so that each may start an entry and be recorded as skipped with the instrumentation
    scopes it showed (never dropped unseen), and the spans to store for that besides their
    root (:func:`select_roles` keeps it): one per other scope, attributes left out, at most
    :data:`MAX_SCOPE_WITNESSES` — what is stored is bounded by the scopes, not by the trace.
    ``roles[i]`` is ``spans[i]``'s role as the caller read it."""
    with_role = {s.trace_id for s, role in zip(spans, roles, strict=True) if role is not None}
    rooted = {
        s.trace_id
        for s in spans
        if s.parent_span_id is None and s.trace_id not in with_role and not is_evaluation_span(s)
    }
    if not rooted:
        return [], rooted
    seen: dict[str, set[tuple[str, str]]] = {
        s.trace_id: {(s.scope, s.scope_version)}
        for s in spans
        if s.trace_id in rooted and s.parent_span_id is None
    }
    witnesses: list[SpanRecord] = []
    for span in spans:
        scopes = seen.get(span.trace_id)
        if scopes is None or span.parent_span_id is None or is_evaluation_span(span):
            continue
        key = (span.scope, span.scope_version)
        if key not in scopes and len(scopes) <= MAX_SCOPE_WITNESSES:
            scopes.add(key)
            witnesses.append(replace(span, attributes={}))
    return witnesses, rooted


def completion_due(
    spans: Sequence[SpanRecord],
    now: float,
    quiet_s: float,
    *,
    idle_s: float | None = None,
    root_grace_s: float = 0.0,
    roles: Sequence[Role | None] | None = None,
) -> dict[str, float]:
    """``{trace_id: due_at}`` for every trace with a span in ``spans`` (see the module rule).

    Pure: depends on nothing but its arguments. ``idle_s`` defaults to
    ``max(DEFAULT_IDLE_S, quiet_s)`` and is never shorter than ``quiet_s``. ``roles`` are the
    spans' roles as the caller read them (default: :func:`~ragtrace_consumers.readers.role_of`).
    """
    if quiet_s < 0 or root_grace_s < 0:
        raise ValueError(f"quiet_s and root_grace_s must be >= 0, got {quiet_s}, {root_grace_s}")
    if idle_s is not None and idle_s < 0:
        raise ValueError(f"idle_s must be >= 0, got {idle_s}")
    idle = max(DEFAULT_IDLE_S if idle_s is None else idle_s, quiet_s)
    due: dict[str, float] = {}
    role = dict(zip(map(id, spans), roles, strict=True)) if roles is not None else None
    live = [s for s in spans if not is_evaluation_span(s)]
    for trace_id, group in group_by_trace(live).items():
        generation = any(
            (role_of(s) if role is None else role[id(s)]) is Role.GENERATION for s in group
        )
        if generation and any(s.parent_span_id is None for s in group):
            due[trace_id] = now + root_grace_s
        elif generation:
            due[trace_id] = now + quiet_s
        else:
            due[trace_id] = now + idle
    return due


def earliest(due_at: Mapping[str, float], other: Mapping[str, float]) -> dict[str, float]:
    """Merge two schedules keeping each trace's earliest due time (how the stores merge)."""
    merged = dict(due_at)
    for trace_id, at in other.items():
        merged[trace_id] = min(at, merged.get(trace_id, at))
    return merged
