"""One root for the errors ragtrace raises across a seam.

``except RagtraceError`` catches every one of them, from the SDK, the evaluation core, the
commands and the service. A subclass keeps its standard-library base as well (a bad input file
is still a ``ValueError``), so an ``except`` clause written against that base keeps working.
"""

from __future__ import annotations

__all__ = ["RagtraceError"]


class RagtraceError(Exception):
    """The base of ragtrace's own exceptions."""
