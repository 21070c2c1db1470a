"""Fresh SDK settings, counters and exporter for every SDK test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import _config, _health
from tests.unit.sdk.sdk_spans import EXPORTER

ENV_VARS = (
    _config.ENV_ENABLED,
    _config.ENV_CAPTURE_CONTENT,
    _config.ENV_MAX_ATTRIBUTE_LENGTH,
    _config.ENV_MAX_SPAN_CONTENT_BYTES,
    _config.ENV_MAX_DOCUMENTS,
    _config.ENV_MAX_TRACE_EXPORT_BYTES,
)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    _config.reload()
    _health.reset()
    EXPORTER.clear()
    yield
    _config.reload()
    _health.reset()


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return EXPORTER
