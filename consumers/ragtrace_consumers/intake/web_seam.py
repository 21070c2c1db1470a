"""The seam through which the receiver's HTTP server also serves the web view.

The OTLP receiver owns the socket, the worker pool and the timeouts; for a ``GET`` of any path
but its own, and for a ``POST`` under :data:`WEB_PREFIX`, it hands a :class:`WebRequest` to the
:class:`WebHandler` it was given and writes back the :class:`WebResponse` (``None``: 404). Any
gate the receiver applies to every request (a token, TLS) therefore covers the web view too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["MAX_FORM_BYTES", "WEB_PREFIX", "WebHandler", "WebRequest", "WebResponse"]

WEB_PREFIX = "/ui/"
"""Paths under which the web handler also receives POSTs (its forms)."""
MAX_FORM_BYTES = 64 * 1024
"""A form body larger than this is refused with 413 before it is read."""


@dataclass(frozen=True)
class WebRequest:
    """One request for the web view. ``headers`` keys are lower-case."""

    method: str
    path: str
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    def __post_init__(self) -> None:
        if self.method not in ("GET", "HEAD", "POST"):
            raise ValueError(f"WebRequest.method must be GET, HEAD or POST, got {self.method!r}")
        if not self.path.startswith("/"):
            raise ValueError(f"WebRequest.path must start with '/', got {self.path!r}")


@dataclass(frozen=True)
class WebResponse:
    """What the server writes back: status, content type, body and any extra headers."""

    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"WebResponse.status must be an HTTP status, got {self.status}")


class WebHandler(Protocol):
    """Answers web-view requests; never raises for bad input (a 4xx response instead)."""

    def handle(self, request: WebRequest) -> WebResponse | None: ...
