"""The exit status of every ``ragtrace`` command: one code per cause (docs/cli.md has the table)."""

from __future__ import annotations

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "EXIT_OK", "EXIT_UNAVAILABLE"]

EXIT_OK = 0
EXIT_FAILURE = 1
"""The command ran but its result failed: a gate held, an item got an error, a write failed."""
EXIT_BAD_INPUT = 2
"""Usage or input the command cannot accept (argparse's own code), or a command not installed."""
EXIT_UNAVAILABLE = 3
"""A dependency could not be reached: the judge's API, Redis, Kafka."""
