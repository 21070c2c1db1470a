"""SDK settings: what the decorators record and how much of it.

Precedence for every setting: an explicit argument (a decorator's or :func:`ragtrace.configure`'s)
> its environment variable > the default. A bad environment value logs a warning and falls back
to the default; a bad explicit argument raises ``ValueError``.

The defaults keep every span small: at most ``max_span_content_bytes`` (64 KiB) of text from user
data plus at most ~128 attributes of fixed size, so a trace of a pipeline, a retrieval and a
generation span stays below ~250 KB however large the inputs are — far under the ~1 MB Kafka
message limit the collector's batches must respect.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = [
    "DEFAULT_MAX_ATTRIBUTE_LENGTH",
    "DEFAULT_MAX_DOCUMENTS",
    "DEFAULT_MAX_SPAN_CONTENT_BYTES",
    "DEFAULT_MAX_TRACE_EXPORT_BYTES",
    "ENV_CAPTURE_CONTENT",
    "ENV_ENABLED",
    "ENV_MAX_ATTRIBUTE_LENGTH",
    "ENV_MAX_DOCUMENTS",
    "ENV_MAX_SPAN_CONTENT_BYTES",
    "ENV_MAX_TRACE_EXPORT_BYTES",
    "Redactor",
    "Settings",
    "current",
    "from_env",
    "reload",
    "update",
]

_log = logging.getLogger("ragtrace")

ENV_ENABLED = "RAGTRACE_ENABLED"
"""``true``/``false`` (also 1/0, yes/no, on/off): ``false`` makes every decorator a plain call."""
ENV_CAPTURE_CONTENT = "RAGTRACE_CAPTURE_CONTENT"
"""``true``/``false``: ``false`` records only IDs, scores, SHA-256 hashes and lengths, no text."""
ENV_MAX_ATTRIBUTE_LENGTH = "RAGTRACE_MAX_ATTRIBUTE_LENGTH"
"""Positive integer: the most characters any one string attribute value may hold."""
ENV_MAX_SPAN_CONTENT_BYTES = "RAGTRACE_MAX_SPAN_CONTENT_BYTES"
"""Positive integer: UTF-8 bytes of text from user data (IDs, query, answer, chunk texts, user
attribute values) one span may carry; values past it are cut or left out."""
ENV_MAX_DOCUMENTS = "RAGTRACE_MAX_DOCUMENTS"
"""Positive integer: chunks recorded per retrieval or generation span (the rest are counted only)."""
ENV_MAX_TRACE_EXPORT_BYTES = "RAGTRACE_MAX_TRACE_EXPORT_BYTES"
"""Positive integer: the largest trace (estimated OTLP bytes) the pipeline after the exporter can
carry, the collector's Kafka ``max_message_bytes``; a larger trace is logged with its ID and
counted on ``ragtrace.sdk.oversized`` (it is still exported)."""

DEFAULT_MAX_ATTRIBUTE_LENGTH = 16_384
DEFAULT_MAX_SPAN_CONTENT_BYTES = 65_536
# 20 chunks x 5 attributes (id, score, cut content, sha256, length) + at most 13 others stays
# under the OTel SDK's default limit of 128 attributes per span, past which it drops attributes.
DEFAULT_MAX_DOCUMENTS = 20
DEFAULT_MAX_TRACE_EXPORT_BYTES = 8 * 1024 * 1024

Redactor = Callable[[str], "str | None"]
"""Rewrites a text (query, answer, chunk text) before it is recorded; ``None`` leaves it out.
Hashes and lengths are always of the original text."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Settings:
    """The resolved settings the decorators read on every call."""

    enabled: bool = True
    capture_content: bool = True
    max_attribute_length: int = DEFAULT_MAX_ATTRIBUTE_LENGTH
    max_span_content_bytes: int = DEFAULT_MAX_SPAN_CONTENT_BYTES
    max_documents: int = DEFAULT_MAX_DOCUMENTS
    redact: Redactor | None = None
    max_trace_export_bytes: int = DEFAULT_MAX_TRACE_EXPORT_BYTES

    def __post_init__(self) -> None:
        for name in ("enabled", "capture_content"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name in (
            "max_attribute_length",
            "max_span_content_bytes",
            "max_documents",
            "max_trace_export_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.redact is not None and not callable(self.redact):
            raise ValueError(f"redact must be callable or None, got {self.redact!r}")


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    _log.warning("ragtrace: ignoring %s=%r (expected true or false); using %s", name, raw, default)
    return default


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        _log.warning(
            "ragtrace: ignoring %s=%r (expected a positive integer); using %d", name, raw, default
        )
        return default
    return value


def from_env() -> Settings:
    """Settings from the environment variables, each falling back to its default."""
    return Settings(
        enabled=_env_bool(ENV_ENABLED, True),
        capture_content=_env_bool(ENV_CAPTURE_CONTENT, True),
        max_attribute_length=_env_int(ENV_MAX_ATTRIBUTE_LENGTH, DEFAULT_MAX_ATTRIBUTE_LENGTH),
        max_span_content_bytes=_env_int(ENV_MAX_SPAN_CONTENT_BYTES, DEFAULT_MAX_SPAN_CONTENT_BYTES),
        max_documents=_env_int(ENV_MAX_DOCUMENTS, DEFAULT_MAX_DOCUMENTS),
        max_trace_export_bytes=_env_int(ENV_MAX_TRACE_EXPORT_BYTES, DEFAULT_MAX_TRACE_EXPORT_BYTES),
    )


_current: Settings | None = None


def current() -> Settings:
    """The settings in force (read from the environment on first use)."""
    global _current
    settings = _current
    if settings is None:
        settings = _current = from_env()
    return settings


def update(**explicit: object) -> Settings:
    """Apply explicit settings over the environment; ``None`` arguments are left as they are.

    Raises ``ValueError`` for an unknown name or a bad value (nothing is changed then).
    """
    base = current()
    changes = {k: v for k, v in explicit.items() if v is not None}
    unknown = set(changes) - set(Settings.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown ragtrace setting(s): {', '.join(sorted(unknown))}")
    global _current
    _current = replace(base, **changes)  # type: ignore[arg-type]
    return _current


def reload() -> Settings:
    """Forget explicit settings and re-read the environment (tests use this)."""
    global _current
    _current = from_env()
    return _current
