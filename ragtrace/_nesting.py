"""Where a JSON text nests too deep, for error messages (the decoders themselves stop at
Python's recursion limit with a bare ``RecursionError``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_DEPTH", "Location", "too_deep_at"]

DEFAULT_MAX_DEPTH = 100
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")


@dataclass(frozen=True)
class Location:
    """A position in a text: 0-based byte offset, 1-based line and column."""

    offset: int
    line: int
    column: int


def too_deep_at(data: bytes | str, max_depth: int = DEFAULT_MAX_DEPTH) -> Location | None:
    """The first position where ``data`` (JSON) opens more than ``max_depth`` nested arrays or
    objects (brackets inside strings do not count); None when it never does."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    depth = 0
    in_string = escaped = False
    line, line_start = 1, 0
    for i, c in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:  # quote
                in_string = False
            continue
        if c == 0x22:
            in_string = True
        elif c in _OPEN:
            depth += 1
            if depth > max_depth:
                return Location(i, line, i - line_start + 1)
        elif c in _CLOSE:
            depth -= 1
        elif c == 0x0A:
            line, line_start = line + 1, i + 1
    return None
