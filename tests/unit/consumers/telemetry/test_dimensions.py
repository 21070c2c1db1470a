"""Bounded labels for the generator model and the data source (consumers/ragtrace_consumers/telemetry/dimensions.py), and
their path from the spans to the score metrics and the evaluation span."""

from __future__ import annotations

import threading

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace_consumers.telemetry.dimensions import MAX_VALUE_CHARS, OTHER, UNKNOWN, BoundedLabel
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from tests.metric_points import histogram, key, metrics


def test_values_beyond_the_cap_are_other() -> None:
    label = BoundedLabel(cap=2)
    assert [label(v) for v in ("a", "b", "a", "c", None, " ", "b")] == [
        "a",
        "b",
        "a",
        OTHER,
        UNKNOWN,
        UNKNOWN,
        "b",
    ]
    assert label.admitted == {"a", "b"}
    assert label("x" * 100) == OTHER
    assert len(BoundedLabel()("y" * 100)) == MAX_VALUE_CHARS
    with pytest.raises(ValueError):
        BoundedLabel(cap=0)


def test_the_cap_holds_under_concurrency() -> None:
    label = BoundedLabel(cap=5)
    out: list[str] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        for j in range(50):
            v = label(f"m{(i * 50 + j) % 37}")
            with lock:
                out.append(v)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(label.admitted) == 5
    assert set(out) == set(label.admitted) | {OTHER}


def test_score_metrics_carry_the_capped_labels() -> None:
    reader = InMemoryMetricReader()
    m = ConsumerMetrics(MeterProvider(metric_readers=[reader]))
    m.generator_models.cap = 1
    m.groundedness(0.5, "s", "p", "judge", generator_model="gpt-a")
    m.groundedness(0.5, "s", "p", "judge", generator_model="gpt-b")
    m.retrieval(1.0, 1.0, 1.0, "s", "p", k=5, data_source=None)
    points = {
        (
            met.name,
            dict(key(dp)).get(semconv.ATTR_MODEL, dict(key(dp)).get(semconv.ATTR_DATA_SOURCE)),
        ): (histogram(dp).count)
        for _, met in metrics(reader)
        for dp in met.data.data_points
        if met.name in (semconv.METRIC_GROUNDEDNESS, semconv.METRIC_RECALL)
    }
    assert points == {
        (semconv.METRIC_GROUNDEDNESS, "gpt-a"): 1,
        (semconv.METRIC_GROUNDEDNESS, OTHER): 1,
        (semconv.METRIC_RECALL, UNKNOWN): 1,
    }


def test_the_recall_cutoff_is_a_capped_label_of_every_retrieval_metric() -> None:
    reader = InMemoryMetricReader()
    m = ConsumerMetrics(MeterProvider(metric_readers=[reader]))
    m.cutoffs.cap = 2  # a trace declares its k: traffic could send any number of them
    for k in (5, 2, 7, 5):
        m.retrieval(1.0, 1.0, 1.0, "s", "p", k=k)
    retrieval = (semconv.METRIC_RECALL, semconv.METRIC_HIT_RATE, semconv.METRIC_RECIPROCAL_RANK)
    points = {
        (met.name, dict(key(dp))[semconv.ATTR_K]): histogram(dp).count
        for _, met in metrics(reader)
        for dp in met.data.data_points
        if met.name in retrieval
    }
    assert points == {
        (name, k): n for name in retrieval for k, n in (("5", 2), ("2", 1), (OTHER, 1))
    }
