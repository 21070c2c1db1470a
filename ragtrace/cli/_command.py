"""How every ``ragtrace`` subcommand is added to the parser."""

from __future__ import annotations

import argparse
from typing import TypeAlias

__all__ = ["Subparsers", "add_command"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``add_subparsers()`` returns: each command's ``register`` receives it."""


def add_command(
    subparsers: Subparsers, name: str, *, help: str, description: str
) -> argparse.ArgumentParser:
    """Add the subcommand ``name``; its ``--help`` prints ``description`` as written (the
    commands lay out their formats and exit statuses line by line)."""
    return subparsers.add_parser(
        name,
        help=help,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
