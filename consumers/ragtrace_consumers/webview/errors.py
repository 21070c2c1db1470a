"""The web view's own exception: a request it refuses, answered as a 4xx page."""

from __future__ import annotations

from ragtrace.errors import RagtraceError

__all__ = ["BadRequest"]


class BadRequest(RagtraceError, ValueError):
    """A parameter or form field the web view refuses; ``status`` is the 4xx it answers."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        if not 400 <= status <= 499:
            raise ValueError(f"BadRequest.status must be 4xx, got {status}")
        self.status = status
