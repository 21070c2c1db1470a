"""Reading an input file that may be standard input: the name ``-`` is stdin, as in every
command-line tool (``ragtrace eval --labels - < labels.jsonl``)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["STDIN", "is_stdin", "read_input_text"]

STDIN = "-"
"""The file name that means standard input."""


def is_stdin(path: str | Path) -> bool:
    return str(path) == STDIN


def read_input_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The whole text of ``path``, or of stdin for ``-`` (decoded with ``encoding``, so a BOM
    is handled alike). Raises what :meth:`Path.read_text` raises (OSError, UnicodeDecodeError)."""
    if is_stdin(path):
        return sys.stdin.buffer.read().decode(encoding)
    return Path(path).read_text(encoding=encoding)
