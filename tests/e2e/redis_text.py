"""Redis replies as text in the end-to-end tests (clients there return bytes)."""

from __future__ import annotations

__all__ = ["text"]


def text(reply: object) -> str:
    """One reply item (a key, a member) as ``str``; anything else is a test error."""
    assert isinstance(reply, (bytes, str)), f"not a Redis string reply: {reply!r}"
    return reply.decode() if isinstance(reply, bytes) else reply
