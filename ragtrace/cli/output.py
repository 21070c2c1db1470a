"""Terminal output shared by the CLI commands: tables, numbers, a progress bar, atomic JSON files.

Standard library only, so every command works on the core install.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

# The exit codes, re-exported for the commands that import them with the output helpers.
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.masking import mask_secrets

if TYPE_CHECKING:
    from typing_extensions import Self

    from ragtrace.evaluation.rates import Rate

__all__ = [
    "format_intervals",
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "JSON_STDOUT",
    "ProgressBar",
    "add_json_option",
    "emit_json",
    "error",
    "fmt_num",
    "format_table",
    "json_safe",
    "json_to_stdout",
    "write_json_atomic",
]

T = TypeVar("T")


def error(command: str, message: str, stream: TextIO | None = None) -> None:
    """Print ``ragtrace COMMAND: error: MESSAGE`` to stderr (argparse's format), credentials in
    it masked (:func:`ragtrace.masking.mask_secrets`)."""
    print(f"ragtrace {command}: error: {mask_secrets(message)}", file=stream or sys.stderr)


def fmt_num(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """A fixed-point number; ``n/a`` for None or NaN."""
    if value is None or math.isnan(value):
        return "n/a"
    if round(value, digits) == 0:
        value = 0.0  # "-0.000" would read as a regression that is not there
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def format_intervals(rates: Mapping[str, Rate], label: str = "") -> list[str]:
    """``rates`` as ``name value [low, high]`` lines under one heading that names n and the
    methods (every rate shares one n)."""
    n = next(iter(rates.values())).n if rates else 0
    methods = sorted({r.method for r in rates.values()})
    lines = [
        f"95 % intervals{label} over n={n} questions ({', '.join(methods)}; docs/statistics.md):"
    ]
    width = max((len(name) for name in rates), default=0)
    for name, r in rates.items():
        lines.append(f"  {name:<{width}}  {fmt_num(r.value)} [{fmt_num(r.low)}, {fmt_num(r.high)}]")
    return lines


def format_table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], *, align: str | None = None
) -> str:
    """Rows under headers with a rule, columns padded to their widest cell.

    ``align`` has one character per column, ``l`` or ``r``; by default the first column is left
    aligned and the others right aligned (labels, then numbers).
    """
    body = [[str(cell) for cell in row] for row in rows]
    for row in body:
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells, expected {len(headers)}")
    align = align or "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers) or set(align) - {"l", "r"}:
        raise ValueError(f"align must be one of l/r per column, got {align!r}")
    widths = [max(len(str(h)), *(len(row[i]) for row in body)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            c.ljust(w) if a == "l" else c.rjust(w)
            for c, w, a in zip(cells, widths, align, strict=False)
        )
        return "  ".join(padded).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line([str(h) for h in headers]), rule, *(line(r) for r in body)])


class ProgressBar:
    """A one-line progress bar on stderr, redrawn at most every ``interval`` seconds.

    Drawn only when the stream is a terminal (unless ``enabled`` says otherwise), so piped and
    captured output stays clean. Use as a context manager, or wrap an iterable with ``iter``.
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        interval: float = 0.1,
        width: int = 30,
    ) -> None:
        if total < 0:
            raise ValueError(f"total must be >= 0, got {total}")
        self.total = total
        self.label = label
        self.done = 0
        self._stream = stream or sys.stderr
        self._enabled = self._stream.isatty() if enabled is None else enabled
        self._interval = interval
        self._width = width
        self._last_draw = -math.inf
        self._started = time.monotonic()

    def __enter__(self) -> Self:
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def iter(self, items: Iterable[T]) -> Iterator[T]:
        """Yield ``items``, advancing the bar after each one."""
        with self:
            for item in items:
                yield item
                self.advance()

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        self._draw(force=self.done == self.total)

    def render(self) -> str:
        """The bar's text, e.g. ``retrieving [#######-------]  5/10  0.4s``."""
        fraction = self.done / self.total if self.total else 1.0
        filled = round(fraction * self._width)
        bar = "#" * filled + "-" * (self._width - filled)
        digits = len(str(self.total))
        elapsed = time.monotonic() - self._started
        prefix = f"{self.label} " if self.label else ""
        return f"{prefix}[{bar}] {self.done:>{digits}}/{self.total}  {elapsed:.1f}s"

    def close(self) -> None:
        if self._enabled:
            self._draw(force=True)
            self._stream.write("\n")
            self._stream.flush()
            self._enabled = False

    def _draw(self, *, force: bool = False) -> None:
        if not self._enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < self._interval:
            return
        self._last_draw = now
        self._stream.write("\r" + self.render())
        self._stream.flush()


JSON_STDOUT = "-"
"""``args.json`` value meaning standard output (what ``--json`` and ``--json-file -`` set)."""


def add_json_option(
    parser: argparse.ArgumentParser,
    what: str,
    *,
    stdout_help: str | None = None,
    file_help: str | None = None,
) -> None:
    """The one machine-output convention of every command, both options setting ``args.json``:
    ``--json`` (a flag, never taking the next word) puts the JSON on stdout *instead of* the
    text; ``--json-file PATH`` writes it to PATH atomically, the text still printed (``-``:
    stdout, as ``--json``). They exclude each other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--json",
        dest="json",
        action="store_const",
        const=JSON_STDOUT,
        default=None,
        help=stdout_help or f"print {what} as JSON on stdout instead of the text",
    )
    group.add_argument(
        "--json-file",
        dest="json",
        default=None,
        metavar="PATH",
        help=file_help
        or f"write {what} as JSON to PATH (whole or not at all), the text still printed; "
        "'-': stdout, as --json",
    )


def json_to_stdout(target: str | None) -> bool:
    """Whether ``--json`` asked for JSON on stdout (so no text goes there)."""
    return target == JSON_STDOUT


def emit_json(command: str, target: str, doc: object) -> bool:
    """Write ``doc`` to the ``--json`` target (stdout, or atomically to a file); NaN -> null.
    False (after printing the error) when the file cannot be written."""
    if json_to_stdout(target):
        print(json.dumps(json_safe(doc), indent=2, ensure_ascii=False, allow_nan=False))
        return True
    try:
        write_json_atomic(target, doc)
    except OSError as exc:
        error(command, f"cannot write {target}: {exc}")
        return False
    return True


def json_safe(value: object) -> object:
    """``value`` with every NaN or infinite float replaced by None (JSON null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_json_atomic(path: str | Path, doc: object) -> None:
    """Write ``doc`` as JSON to ``path`` all at once: a temp file in the same directory, then
    renamed over ``path``, so a reader never sees half a file. NaN becomes null."""
    path = Path(path)
    text = json.dumps(json_safe(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        # mkstemp makes the file owner-only; give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
