"""One suppression helper: it silences ragtrace's decorators and every contrib instrumentation
(the keys opentelemetry-instrumentation reads), and it honours theirs."""

from __future__ import annotations

import threading

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import (
    is_http_instrumentation_enabled,
    is_instrumentation_enabled,
    suppress_http_instrumentation,
    suppress_instrumentation,
)

from ragtrace.suppression import SUPPRESS_KEY_PLAIN, is_suppressed, suppressed


def test_suppressed_sets_every_key_contrib_instrumentations_read() -> None:
    assert is_instrumentation_enabled() and is_http_instrumentation_enabled()
    with suppressed():
        assert is_suppressed()
        assert not is_instrumentation_enabled()
        assert not is_http_instrumentation_enabled()
    assert not is_suppressed()
    assert is_instrumentation_enabled() and is_http_instrumentation_enabled()


def test_is_suppressed_honours_contrib_suppression_and_the_plain_key() -> None:
    with suppress_instrumentation():
        assert is_suppressed()
    token = otel_context.attach(otel_context.set_value(SUPPRESS_KEY_PLAIN, True))
    try:
        assert is_suppressed()
    finally:
        otel_context.detach(token)
    with suppress_http_instrumentation():  # HTTP clients only: RAG spans are still recorded
        assert not is_suppressed()


def test_suppression_stays_in_its_context() -> None:
    seen: list[bool] = []
    with suppressed():
        worker = threading.Thread(target=lambda: seen.append(is_suppressed()))
        worker.start()
        worker.join()
    assert seen == [False]
