"""A listener that cannot bind, as every service command reports it: one line naming the
listener, the address and the reason, then where to choose another port; exit 2 (the input —
a port — cannot be used), never a traceback."""

from __future__ import annotations

from collections.abc import Mapping

from ragtrace.cli.exit_codes import EXIT_BAD_INPUT
from ragtrace.cli.output import error
from ragtrace_consumers.errors import CannotListen

__all__ = ["report_cannot_listen"]


def report_cannot_listen(command: str, exc: CannotListen, choose: Mapping[str, str]) -> int:
    """Print ``exc`` as ``command``'s error line, with the flag or setting that picks another
    port (``choose``: listener name -> that flag or setting), and return the exit code."""
    where = choose.get(exc.listener)
    error(command, str(exc) + (f" (another port: {where})" if where else ""))
    return EXIT_BAD_INPUT
