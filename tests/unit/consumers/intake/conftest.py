"""Fixtures of the receiver tests: a recording span sink and an in-memory metric reader."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.unit.consumers.intake.test_otlp_receiver import Sink


@pytest.fixture()
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture()
def sink() -> Sink:
    return Sink()
