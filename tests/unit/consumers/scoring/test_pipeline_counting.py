"""A trace's metrics are counted once, when its scores are recorded: a delivery that fails
transiently parks the trace, and the retry that delivers it counts nothing again; scores the
sink could not even record are counted by the retry that records them."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace_consumers.errors import NotRecorded, WriteBackError
from ragtrace_consumers.model import FAMILY_RECALL, TraceScores
from ragtrace_consumers.scoring.pipeline import Outcome
from tests.unit.consumers.scoring_helpers import T0, Rig, grounded, rag_spans, rig, tid

LATER = T0 + 3600.0  # past any park back-off


class _FlakyExporter(InMemorySpanExporter):
    """Fails its first ``failures`` exports (a collector answering 503), then keeps spans."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.failures > 0:
            self.failures -= 1
            return SpanExportResult.FAILURE
        return super().export(spans)


class _NotRecordedOnce:
    """A sink whose first write could not record the scores (the state file failed)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.failed = False

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        if not self.failed:
            self.failed = True
            return [NotRecorded("scores not recorded: disk I/O error") for _ in batch]
        return self.inner.write_many(batch)  # type: ignore[attr-defined, no-any-return]


def _counted(r: Rig) -> tuple[float, int, int]:
    """Traces counted as scored, recall and groundedness observations."""
    scored = sum(r.points(semconv.METRIC_TRACES_SCORED).values())
    recall = sum(p.count for p in r.points(semconv.METRIC_RECALL).values())
    grounded_ = sum(p.count for p in r.points(semconv.METRIC_GROUNDEDNESS).values())
    return scored, recall, grounded_


def test_counted_when_scored_and_not_again_by_the_retry_that_delivers() -> None:
    r = rig(grounded(1, 2), exporter=_FlakyExporter(failures=2))
    r.pipeline.ingest(rag_spans(31), T0)
    (lease,) = r.pipeline.claim_due(T0)
    assert r.pipeline.process_trace(lease) is Outcome.PARKED
    assert _counted(r) == (1, 1, 1) and r.spans() == []
    for attempt in (1, 2):  # one more failed delivery, then the one that succeeds
        (lease,) = r.pipeline.claim_due(LATER * attempt)
        outcome = r.pipeline.process_trace(lease)
        assert outcome is (Outcome.PARKED if attempt == 1 else Outcome.SCORED)
        assert _counted(r) == (1, 1, 1)
    assert len(r.spans()) == 1 and r.traces.pending() == 0


def test_scores_not_recorded_are_counted_by_the_retry_that_records_them() -> None:
    r = rig(grounded(1, 2))
    r.pipeline.sink = _NotRecordedOnce(r.pipeline.sink)  # type: ignore[assignment]
    r.pipeline.ingest(rag_spans(32), T0)
    (lease,) = r.pipeline.claim_due(T0)
    assert r.pipeline.process_trace(lease) is Outcome.PARKED
    assert _counted(r) == (0, 0, 0)
    (lease,) = r.pipeline.claim_due(LATER)
    assert r.pipeline.process_trace(lease) is Outcome.SCORED
    assert _counted(r) == (1, 1, 1)


def test_a_delivered_trace_needs_no_counted_mark() -> None:
    """Written implies counted: only a trace whose delivery failed costs a mark more."""
    r = rig(grounded(1, 2))
    r.pipeline.ingest(rag_spans(33), T0)
    assert r.pipeline.process_due(T0) == 1
    assert _counted(r) == (1, 1, 1)
    marks = [(tid(33), name) for name in ("counted:recall", "counted:groundedness")]
    assert r.idempotency.written_many(marks) == [False, False]
    assert r.idempotency.written(tid(33), FAMILY_RECALL)
