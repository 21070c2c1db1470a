"""Log output of the ``ragtrace`` commands: text (default) or one JSON object per line.

``ragtrace --log-format json COMMAND`` (or ``RAGTRACE_LOG_FORMAT=json``) installs a root handler
on stderr whose records are JSON objects with ``ts`` (RFC 3339, UTC), ``level``, ``logger`` and
``message``, plus ``exc`` when an exception is attached — what log shippers (Fluent Bit,
Vector, Cloud Logging) parse without a regex.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import datetime, timezone

__all__ = [
    "ENV_LOG_FORMAT",
    "LOG_FORMATS",
    "JsonFormatter",
    "configure_logging",
    "default_log_format",
]

ENV_LOG_FORMAT = "RAGTRACE_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            # exc_text when set: the traceback as the log mask left it (ragtrace.masking).
            doc["exc"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False, default=str)


def default_log_format() -> str:
    """``$RAGTRACE_LOG_FORMAT`` when valid (a bad value warns and falls back), else text."""
    value = os.environ.get(ENV_LOG_FORMAT, "text").strip().lower()
    if value not in LOG_FORMATS:
        print(
            f"ragtrace: warning: {ENV_LOG_FORMAT}={value!r} is not one of "
            f"{', '.join(LOG_FORMATS)}; using text",
            file=sys.stderr,
        )
        return "text"
    return value


def configure_logging(fmt: str, level: str | int | None = None) -> None:
    """Replace the root handlers with one on stderr in ``fmt``; ``level`` None keeps the
    root's level (a command's own ``--log-level`` is passed here when it has one)."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(_TEXT))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    if level is not None:
        root.setLevel(level if isinstance(level, int) else level.upper())
