"""The child Python of :func:`ragtrace.evaluation.judges.lexical.packed.load_table`: writes one
packed table to standard output (``python -m ... SOURCE LANG``)."""

from __future__ import annotations

import sys

from .packed import SOURCES, PackedTable

if __name__ == "__main__":
    PackedTable.of(SOURCES[sys.argv[1]](sys.argv[2])).write(sys.stdout.buffer)
