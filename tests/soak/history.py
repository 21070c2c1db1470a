"""The soak's checker: the history of what the app sent against what came out, not counters.

Inputs are the history itself: every trace the load generator had accepted (2xx from the
collector) with the time it was accepted; every evaluation span the recording sink received,
with its arrival time; the traces the consumers gave up on (Redis' dead set, with the reason)
or dead-lettered (the DLQ topic); and the consumers' ``traces scored`` counters. :func:`check`
accounts for every accepted trace:

* **scored exactly once**: each of its evaluation results (a ``gen_ai.evaluation.result`` event,
  one per metric) arrived under one evaluation span ID, and its summary span under one ID. An
  identical re-send of the same span ID (a replica killed after its export, before its mark) is
  counted as ``resent``: a backend keyed by span ID stores it once. Two *different* span IDs for
  the same (trace, metric) are a ``duplicated`` violation;
* or **given up with a reason** (dead set, DLQ); anything else is ``lost``;
* **no double count in the metrics**: the replicas' ``ragtrace_traces_scored_total`` summed over
  instances (each at its highest value seen) must not exceed the traces scored.

It also derives the end-to-end latency of every scored trace (accepted → its first evaluation
span at the sink) and :func:`recovery_s`, how long after the last fault the latency is back
under its normal p95.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ragtrace import semconv
from scripts.services import ReceivedSpan

__all__ = ["History", "Verdict", "check", "p95", "recovery_s"]

_SUMMARY = "summary"


@dataclass(frozen=True)
class History:
    """What a run left behind (see the module docstring)."""

    accepted: Mapping[str, float]
    """trace ID -> ``time.monotonic()`` the collector accepted it."""
    writebacks: Sequence[tuple[float, ReceivedSpan]]
    """Every evaluation span the sink received, with its arrival time."""
    given_up: Mapping[str, str] = field(default_factory=dict)
    """trace ID -> reason, for traces dead-lettered or in the consumers' dead set."""
    scored_counted: float | None = None
    """The replicas' traces-scored counters summed over instances (None: not read)."""


@dataclass(frozen=True)
class Verdict:
    """The accounting of one :class:`History`; :attr:`violations` is empty when it holds."""

    accepted: int
    scored: int
    given_up: Mapping[str, str]
    lost: tuple[str, ...]
    duplicated: Mapping[tuple[str, str], frozenset[str]]
    resent: int
    scored_unacknowledged: int
    scored_counted: float | None
    errors: Mapping[str, int]
    latency_s: Mapping[str, float]

    @property
    def violations(self) -> list[str]:
        out = []
        if self.lost:
            out.append(f"{len(self.lost)} accepted traces lost (e.g. {list(self.lost[:3])})")
        if self.duplicated:
            some = [f"{t}/{m}: {sorted(ids)}" for (t, m), ids in list(self.duplicated.items())[:3]]
            out.append(f"{len(self.duplicated)} results written under several spans: {some}")
        if self.scored_counted is not None and self.scored_counted > self.scored:
            out.append(
                f"the metrics count {self.scored_counted:g} traces scored, but only "
                f"{self.scored} were: a double count"
            )
        return out


def check(history: History) -> Verdict:
    """Account for every accepted trace of ``history`` (see the module docstring)."""
    ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    seen: Counter[tuple[str, str]] = Counter()
    first: dict[str, float] = {}
    errors: Counter[str] = Counter()
    for arrived, span in history.writebacks:
        if span.scope != semconv.EVALUATION_SCOPE:
            continue
        seen[(span.trace_id, span.span_id)] += 1
        if seen[(span.trace_id, span.span_id)] > 1:
            continue
        first[span.trace_id] = min(arrived, first.get(span.trace_id, math.inf))
        if span.name == semconv.SPAN_EVALUATION:
            ids[(span.trace_id, _SUMMARY)].add(span.span_id)
        for _, attrs in span.events:
            metric = str(attrs.get(semconv.GEN_AI_EVALUATION_NAME, ""))
            ids[(span.trace_id, metric)].add(span.span_id)
            if "error.type" in attrs:
                explanation = str(attrs.get(semconv.GEN_AI_EVALUATION_EXPLANATION, ""))
                errors[f"{metric}: {explanation.split(':', 1)[0] or attrs['error.type']}"] += 1
    scored = {t for t, _ in ids}
    accepted = set(history.accepted)
    lost = tuple(sorted(accepted - scored - set(history.given_up)))
    return Verdict(
        accepted=len(accepted),
        scored=len(scored),
        given_up=dict(history.given_up),
        lost=lost,
        duplicated={k: frozenset(v) for k, v in ids.items() if len(v) > 1},
        resent=sum(n - 1 for n in seen.values()),
        scored_unacknowledged=len(scored - accepted),
        scored_counted=history.scored_counted,
        errors=dict(errors),
        latency_s={t: first[t] - at for t, at in history.accepted.items() if t in first},
    )


def p95(values: Iterable[float]) -> float:
    """The 95th percentile (nearest rank); NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def recovery_s(
    accepted: Mapping[str, float],
    latency_s: Mapping[str, float],
    after: float,
    threshold_s: float,
    window_s: float = 2.0,
) -> float | None:
    """Seconds after ``after`` until the latency's p95 is back under ``threshold_s`` for good:
    the start of the first window (of traces by acceptance time, ``window_s`` long) from which
    every later window's p95 is at most ``threshold_s``. None if the last window is still above
    it (or no trace was accepted after ``after``)."""
    buckets: dict[int, list[float]] = defaultdict(list)
    for trace, at in accepted.items():
        if at >= after and trace in latency_s:
            buckets[int((at - after) // window_s)].append(latency_s[trace])
    if not buckets:
        return None
    last_bad = -1
    for index in sorted(buckets):
        if p95(buckets[index]) > threshold_s:
            last_bad = index
    if last_bad == max(buckets):
        return None
    return (last_bad + 1) * window_s
