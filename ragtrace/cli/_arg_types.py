"""argparse ``type=`` parsers shared by the offline commands: each turns a bad value into an
``ArgumentTypeError`` that names it (argparse then prints the option and exits 2)."""

from __future__ import annotations

import argparse
import math

__all__ = [
    "STDIN_HELP",
    "count",
    "finite_number",
    "input_file",
    "non_negative",
    "positive_int",
    "stdin_used_twice",
    "unit_interval",
]

STDIN_HELP = "'-': stdin"
"""What every file argument's help says about ``-``."""


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def count(text: str) -> int:
    """A whole number >= 0."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def finite_number(text: str) -> float:
    """A float that is neither NaN nor infinite."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def unit_interval(text: str) -> float:
    """A finite number in [0, 1]."""
    value = finite_number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value:g}")
    return value


def non_negative(text: str) -> float:
    """A finite number >= 0."""
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value:g}")
    return value


def input_file(text: str) -> str:
    """A file to read, or ``-`` for standard input (every command's file arguments take this
    type, so ``-`` works everywhere). The file is opened by the command, not here."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty file name (use '-' for stdin)")
    return text


def stdin_used_twice(*values: str | None) -> bool:
    """Whether more than one file argument names stdin (it can be read only once)."""
    return sum(v == "-" for v in values) > 1
