"""SDK settings: what the decorators record and how much of it.

Each setting is declared once, as a field of :class:`Settings` carrying its environment variable,
default and description (:func:`env_settings` lists them; ``docs/configuration.md`` is generated
from them). Precedence for every setting: an explicit argument (a decorator's or
:func:`ragtrace.configure`'s) > its environment variable > the default. A bad environment value logs a warning and falls back
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
from dataclasses import dataclass, field, fields, replace
from typing import Any

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
    "FALSE_WORDS",
    "TRUE_WORDS",
    "EnvSetting",
    "Redactor",
    "Settings",
    "current",
    "env_settings",
    "from_env",
    "parse_bool",
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

TRUE_WORDS: frozenset[str] = frozenset({"1", "true", "yes", "on"})
"""The words (any case) every ragtrace boolean setting reads as true: the SDK's and the service's."""
FALSE_WORDS: frozenset[str] = frozenset({"0", "false", "no", "off"})
"""The words (any case) every ragtrace boolean setting reads as false."""


def parse_bool(text: str) -> bool | None:
    """``text`` as a boolean by :data:`TRUE_WORDS`/:data:`FALSE_WORDS`; None when it is neither."""
    word = text.strip().lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None


def _setting(env: str | None, default: object, doc: str) -> Any:
    """A setting: its environment variable (None: explicit only), default and description."""
    return field(default=default, metadata={"env": env, "doc": doc})


@dataclass(frozen=True)
class Settings:
    """The resolved settings the decorators read on every call."""

    enabled: bool = _setting(
        ENV_ENABLED, True, "false makes every decorator a plain call (nothing is recorded)."
    )
    capture_content: bool = _setting(
        ENV_CAPTURE_CONTENT,
        True,
        "false records only IDs, scores, SHA-256 hashes and lengths, no text.",
    )
    max_attribute_length: int = _setting(
        ENV_MAX_ATTRIBUTE_LENGTH,
        DEFAULT_MAX_ATTRIBUTE_LENGTH,
        "The most characters any one string attribute value may hold.",
    )
    max_span_content_bytes: int = _setting(
        ENV_MAX_SPAN_CONTENT_BYTES,
        DEFAULT_MAX_SPAN_CONTENT_BYTES,
        "UTF-8 bytes of text from user data (IDs, query, answer, chunk texts, user attribute "
        "values) one span may carry; values past it are cut or left out.",
    )
    max_documents: int = _setting(
        ENV_MAX_DOCUMENTS,
        DEFAULT_MAX_DOCUMENTS,
        "Chunks recorded per retrieval or generation span (the rest are counted only).",
    )
    redact: Redactor | None = _setting(
        None, None, "Rewrites a text before it is recorded (configure() only)."
    )
    max_trace_export_bytes: int = _setting(
        ENV_MAX_TRACE_EXPORT_BYTES,
        DEFAULT_MAX_TRACE_EXPORT_BYTES,
        "The largest trace (estimated OTLP bytes) the pipeline after the exporter can carry (the "
        "collector's Kafka max_message_bytes); a larger trace is logged and counted on "
        "ragtrace.sdk.oversized (it is still exported).",
    )

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


@dataclass(frozen=True)
class EnvSetting:
    """One SDK setting read from the environment, as :func:`env_settings` lists it."""

    name: str
    env: str
    kind: str
    """boolean or positive integer."""
    default: object
    doc: str


def env_settings() -> tuple[EnvSetting, ...]:
    """Every SDK setting that has an environment variable, in declaration order."""
    return tuple(
        EnvSetting(
            name=f.name,
            env=f.metadata["env"],
            kind="boolean" if isinstance(f.default, bool) else "positive integer",
            default=f.default,
            doc=f.metadata["doc"],
        )
        for f in fields(Settings)
        if f.metadata.get("env")
    )


def _from_env(setting: EnvSetting, raw: str) -> object:
    """``raw`` as the setting's type; a bad value warns and gives the default."""
    value: object | None
    if setting.kind == "boolean":
        value = parse_bool(raw)
    else:
        try:
            value = int(raw.strip())
        except ValueError:
            value = None
        if value is not None and value < 1:
            value = None
    if value is None:
        _log.warning(
            "ragtrace: ignoring %s=%r (expected a %s); using %s",
            setting.env,
            raw,
            "true or false" if setting.kind == "boolean" else setting.kind,
            setting.default,
        )
        return setting.default
    return value


def from_env() -> Settings:
    """Settings from the environment variables, each falling back to its default."""
    values: dict[str, Any] = {}
    for setting in env_settings():
        raw = os.environ.get(setting.env)
        if raw is not None and raw.strip():
            values[setting.name] = _from_env(setting, raw)
    return Settings(**values)


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
