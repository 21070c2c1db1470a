"""The offline judge's word lists, held packed.

``wordfreq`` keeps its English list as a dict of about 320,000 words (some 34 MiB resident once
read) and ``simplemma`` its English lemmas as a dict of about 180,000 (some 22 MiB) — for the life
of the process, loaded on the first judgement. :class:`PackedTable` holds such a list as one
sorted byte string of ``key 0x01 value 0x00`` records with the offset of every
:data:`BLOCK`-th record (a few MiB, no per-word object): a lookup bisects the blocks and finds
the record inside its block with one ``bytes.find``.

:func:`packed_table` builds a table in a child Python with this one's import path (the unpacked
list would otherwise stay behind as heap fragments; about a second per list), falls back to
building it here when no child can run, and keeps it in the user's cache directory
(``$XDG_CACHE_HOME/ragtrace/word-lists``, else ``~/.cache/ragtrace/word-lists``; a file per
list, language and library version), so a later process reads it in milliseconds; an unreadable
or damaged file is rebuilt, an unwritable directory only costs the rebuild. The tables hold the libraries' own data, read
from their wheels: the same answers as the libraries give (tests compare them word by word).
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from ._extra import require

__all__ = ["BLOCK", "FORMAT", "SOURCES", "PackedTable", "cache_dir", "load_table", "packed_table"]

BLOCK = 32
"""Records per indexed block: a lookup scans at most this many records, in C."""
FORMAT = 1
"""The cached files' format: part of their names, so a change never reads an old file."""
_KEY, _END = b"\x01", b"\x00"


class PackedTable(Mapping[str, str]):
    """A read-only ``str`` to ``str`` table over sorted ``key 0x01 value 0x00`` records."""

    __slots__ = ("_blob", "_blocks", "_size")

    def __init__(self, blob: bytes, blocks: array[int], size: int) -> None:
        self._blob, self._blocks, self._size = blob, blocks, size

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> PackedTable:
        """A table of ``pairs`` (a key given twice keeps its first value); ValueError for a
        key or value holding a separator byte."""
        encoded: dict[bytes, bytes] = {}
        for key, value in pairs:
            k, v = key.encode("utf-8"), value.encode("utf-8")
            if any(sep in part for part in (k, v) for sep in (_KEY, _END)):
                raise ValueError(f"a packed table cannot hold {key!r}: {value!r}")
            encoded.setdefault(k, v)
        parts, blocks, offset = [_END], array("I"), 1
        for i, k in enumerate(sorted(encoded)):
            if i % BLOCK == 0:
                blocks.append(offset)
            record = k + _KEY + encoded[k] + _END
            parts.append(record)
            offset += len(record)
        return cls(b"".join(parts), blocks, len(encoded))

    def _first_key(self, block: int) -> bytes:
        start = self._blocks[block]
        return self._blob[start : self._blob.index(_KEY, start)]

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        target = key.encode("utf-8")
        if _KEY in target or _END in target:
            return default
        block = bisect_right(range(len(self._blocks)), target, key=self._first_key) - 1
        if block < 0:
            return default
        end = self._blocks[block + 1] if block + 1 < len(self._blocks) else len(self._blob)
        needle = _END + target + _KEY
        at = self._blob.find(needle, self._blocks[block] - 1, end)
        if at < 0:
            return default
        value_at = at + len(needle)
        return self._blob[value_at : self._blob.index(_END, value_at)].decode("utf-8")

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        for record in self._blob[1:-1].split(_END):
            yield record.split(_KEY, 1)[0].decode("utf-8")

    def __len__(self) -> int:
        return self._size

    def write(self, out: BinaryIO) -> None:
        """The table as length-prefixed parts (:meth:`read` reads them back)."""
        for part in (self._blob, self._blocks.tobytes(), struct.pack("<Q", self._size)):
            out.write(struct.pack("<Q", len(part)))
            out.write(part)

    @classmethod
    def read(cls, data: bytes) -> PackedTable:
        parts, pos = [], 0
        for _ in range(3):
            (length,) = struct.unpack_from("<Q", data, pos)
            parts.append(data[pos + 8 : pos + 8 + length])
            pos += 8 + length
        if pos != len(data):
            raise ValueError("trailing bytes after a packed table")
        blocks = array("I")
        blocks.frombytes(parts[1])
        (size,) = struct.unpack("<Q", parts[2])
        return cls(parts[0], blocks, size)


def _wordfreq(lang: str) -> Iterator[tuple[str, str]]:
    # the undecorated reader: wordfreq's cached one would keep the unpacked list alive
    read = require("wordfreq").get_frequency_list
    for index, bucket in enumerate(getattr(read, "__wrapped__", read)(lang)):
        for word in bucket:
            yield word, str(index)


def _simplemma(lang: str) -> Iterator[tuple[str, str]]:
    factory = require("simplemma.strategies.dictionaries.dictionary_factory")
    yield from factory.DefaultDictionaryFactory().get_dictionary(lang).items()


SOURCES = {"wordfreq": _wordfreq, "simplemma": _simplemma}
"""What a table can be built from: ``wordfreq``'s best list of a language (word → its centibel
bucket, ``-cB`` as text) and ``simplemma``'s dictionary of a language (form → lemma)."""


def cache_dir() -> Path:
    """Where built tables are kept (module docstring)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragtrace" / "word-lists"


def _build(source: str, lang: str) -> tuple[PackedTable, bytes]:
    """The table and its bytes, built by a child Python (here when no child can run)."""
    command = [sys.executable, "-m", f"{__package__}._pack_child", source, lang]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run(command, capture_output=True, env=env, timeout=300, check=True)
        return PackedTable.read(done.stdout), done.stdout  # read: whole and well formed
    except (OSError, subprocess.SubprocessError, ValueError, struct.error):
        table, out = PackedTable.of(SOURCES[source](lang)), io.BytesIO()
        table.write(out)
        return table, out.getvalue()


def load_table(source: str, lang: str, directory: Path | None = None) -> PackedTable:
    """The table of ``source`` for ``lang``: read from ``directory`` (default
    :func:`cache_dir`), else built and written there (module docstring)."""
    if source not in SOURCES:
        raise ValueError(f"unknown word list {source!r}; known: {', '.join(SOURCES)}")
    directory = cache_dir() if directory is None else directory
    path = directory / f"{source}-{metadata.version(source)}-{lang}-v{FORMAT}.bin"
    try:
        return PackedTable.read(path.read_bytes())
    except (OSError, ValueError, struct.error):
        pass
    table, data = _build(source, lang)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, path)  # whole or not at all, whoever writes it at the same time
    except OSError:
        pass
    return table


@cache
def packed_table(source: str, lang: str) -> PackedTable:
    """The table of ``source`` (:data:`SOURCES`) for ``lang``, once per process
    (:func:`load_table`)."""
    return load_table(source, lang)
