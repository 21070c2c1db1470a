"""OpenTelemetry SDK metric points read back in tests, typed (one reader for every test)."""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.sdk.metrics.export import (
    ExponentialHistogramDataPoint,
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    NumberDataPoint,
)
from opentelemetry.util.types import AttributeValue

__all__ = ["Key", "Point", "histogram", "key", "metrics", "number", "points", "values"]

Key = tuple[tuple[str, AttributeValue], ...]
"""A point's attributes as sorted items (hashable)."""

Point = NumberDataPoint | HistogramDataPoint | ExponentialHistogramDataPoint


def metrics(reader: InMemoryMetricReader) -> Iterator[tuple[str, Metric]]:
    """Every metric collected now, with its instrumentation scope's name."""
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                yield sm.scope.name, m


def key(point: Point) -> Key:
    return tuple(sorted((point.attributes or {}).items()))


def points(reader: InMemoryMetricReader, name: str) -> dict[Key, Point]:
    """The points of metric ``name`` by their attributes (empty when it has none)."""
    return {key(p): p for _, m in metrics(reader) if m.name == name for p in m.data.data_points}


def number(point: Point) -> float:
    """A counter's or gauge's value; a histogram point here is a test error."""
    assert isinstance(point, NumberDataPoint), f"not a sum or gauge point: {point!r}"
    return float(point.value)


def values(reader: InMemoryMetricReader, name: str) -> dict[Key, float]:
    """The values of counter or gauge ``name`` by their attributes."""
    return {k: number(p) for k, p in points(reader, name).items()}


def histogram(point: Point) -> HistogramDataPoint:
    """A histogram's point; any other kind here is a test error."""
    assert isinstance(point, HistogramDataPoint), f"not a histogram point: {point!r}"
    return point
