"""A replica's metrics in the Prometheus text format, for its own ``GET /metrics``.

The OpenTelemetry SDK's :class:`PrometheusMetricReader` on a private registry (never the global
one, so nothing else in the process leaks in). Served by the health server
(:mod:`ragtrace_consumers.telemetry.health`): each replica is its own scrape target, so Prometheus gives its
series the pod's ``instance`` and marks them stale the moment the pod is gone, and the collector
holds no consumer state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PrometheusExposition", "prometheus_exposition"]


@dataclass(frozen=True)
class PrometheusExposition:
    """``reader`` goes into the MeterProvider; ``render()`` is the body of ``GET /metrics``."""

    reader: Any
    registry: Any

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def prometheus_exposition() -> PrometheusExposition:
    """A fresh reader and registry (``opentelemetry-exporter-prometheus``, the consumer extra)."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=True)
    return PrometheusExposition(PrometheusMetricReader(registry=registry), registry)
