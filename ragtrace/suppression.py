"""Suppressing OpenTelemetry instrumentation in the current context: one helper for the SDK and
the service, so code that must not trace itself (the evaluator's own scoring, judge calls and
exports) is invisible to ragtrace's decorators and to every contrib instrumentation alike.

:func:`suppressed` sets the same context keys as ``opentelemetry-instrumentation``'s
``suppress_instrumentation()`` — the API's ``_SUPPRESS_INSTRUMENTATION_KEY`` and the plain string
``"suppress_instrumentation"`` that contrib instrumentations also read — plus the API's
``_SUPPRESS_HTTP_INSTRUMENTATION_KEY``, which HTTP client instrumentations check. The SDK depends on
``opentelemetry-api`` only, so the keys are set here rather than through that package.
:func:`is_suppressed` reads the two instrumentation keys (the HTTP key alone silences HTTP client
spans, not an application's RAG spans).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context

try:
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY as SUPPRESS_KEY
except ImportError:  # pragma: no cover - older API versions used a plain string key
    SUPPRESS_KEY = "suppress_instrumentation"
try:
    from opentelemetry.context import _SUPPRESS_HTTP_INSTRUMENTATION_KEY as SUPPRESS_HTTP_KEY
except ImportError:  # pragma: no cover - older API versions used a plain string key
    SUPPRESS_HTTP_KEY = "suppress_http_instrumentation"

__all__ = ["SUPPRESS_HTTP_KEY", "SUPPRESS_KEY", "SUPPRESS_KEY_PLAIN", "is_suppressed", "suppressed"]

SUPPRESS_KEY_PLAIN = "suppress_instrumentation"
"""The string key contrib instrumentations read besides :data:`SUPPRESS_KEY` (kept there for
backward compatibility)."""


@contextmanager
def suppressed() -> Iterator[None]:
    """Instrumentation (HTTP clients included) suppressed while the block runs, in this context
    only: other threads and tasks keep tracing."""
    ctx = otel_context.get_current()
    for key in (SUPPRESS_KEY, SUPPRESS_KEY_PLAIN, SUPPRESS_HTTP_KEY):
        ctx = otel_context.set_value(key, True, ctx)
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def is_suppressed() -> bool:
    """Whether instrumentation is suppressed in the current context (either key)."""
    return bool(otel_context.get_value(SUPPRESS_KEY) or otel_context.get_value(SUPPRESS_KEY_PLAIN))
