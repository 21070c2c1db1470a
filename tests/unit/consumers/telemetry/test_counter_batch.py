"""Counter increments inside ``ConsumerMetrics.batch()`` reach the SDK once per label set, with
the same totals as one add per call."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace_consumers.telemetry.counter_batch import BatchedCounter, CounterBatch
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from tests.metric_points import Key, values


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[float, dict[str, Any] | None]] = []

    def add(self, amount: float, attributes: dict[str, Any] | None = None) -> None:
        self.calls.append((amount, attributes))


def test_a_batch_adds_once_per_label_set_and_nests() -> None:
    owner, sdk = CounterBatch(), Recorder()
    counter = BatchedCounter(sdk, owner)
    with owner.batch():
        for i in range(10):
            counter.add(1, {"service": "a" if i % 2 else "b"})
        with owner.batch():
            counter.add(2.5, {"service": "a"})
        assert sdk.calls == []
    assert sorted(sdk.calls, key=str) == [(5, {"service": "b"}), (7.5, {"service": "a"})]
    counter.add(1, {"service": "a"})  # outside a batch: straight through
    assert sdk.calls[-1] == (1, {"service": "a"})


def test_batches_are_per_thread() -> None:
    owner, sdk = CounterBatch(), Recorder()
    counter = BatchedCounter(sdk, owner)
    with owner.batch():
        t = threading.Thread(target=counter.add, args=(3, None))
        t.start()
        t.join()
        assert sdk.calls == [(3, None)]  # the other thread has no batch open
        counter.add(4)
    assert sdk.calls == [(3, None), (4, {})]


def _sums(reader: InMemoryMetricReader, name: str) -> dict[Key, float]:
    return values(reader, name)


def test_consumer_metrics_totals_are_unchanged_by_batching() -> None:
    totals = []
    for batched in (False, True):
        reader = InMemoryMetricReader()
        m = ConsumerMetrics(MeterProvider(metric_readers=[reader]))
        ctx = m.batch() if batched else None
        if ctx is not None:
            ctx.__enter__()
        for i in range(30):
            m.trace_seen("svc", "p")
            m.trace_scored("svc", "p", "fine" if i % 3 else "retrieval_failed")
            m.trace_skipped("svc", "p", "unlabelled")
        if ctx is not None:
            ctx.__exit__(None, None, None)
        totals.append(
            (
                _sums(reader, semconv.METRIC_TRACES_SEEN),
                _sums(reader, semconv.METRIC_CELL),
                _sums(reader, semconv.METRIC_TRACES_SKIPPED),
            )
        )
    assert totals[0] == totals[1]
    seen = totals[1][0]
    assert list(seen.values()) == [30]
