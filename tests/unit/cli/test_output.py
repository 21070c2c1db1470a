"""The shared CLI output helpers: tables, numbers, the progress bar, atomic JSON files."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import pytest

from ragtrace.cli.output import (
    ProgressBar,
    fmt_num,
    format_table,
    json_safe,
    write_json_atomic,
)


def test_format_table_pads_and_aligns() -> None:
    table = format_table(
        ["metric", "@3", "@10"], [["recall", "0.700", "1.000"], ["nDCG", "0.6", ""]]
    )
    assert table == (
        "metric     @3    @10\n------  -----  -----\nrecall  0.700  1.000\nnDCG      0.6"
    )
    assert format_table(["a", "b"], [["x", "y"]], align="rl") == "a  b\n-  -\nx  y"
    with pytest.raises(ValueError, match="has 1 cells, expected 2"):
        format_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align"):
        format_table(["a"], [], align="c")


def test_fmt_num() -> None:
    assert fmt_num(2 / 3) == "0.667"
    assert fmt_num(None) == "n/a"
    assert fmt_num(math.nan) == "n/a"
    assert fmt_num(0.3, signed=True) == "+0.300"
    assert fmt_num(-0.2, signed=True) == "-0.200"
    assert fmt_num(-0.0001, signed=True) == "+0.000"
    assert fmt_num(-0.0001) == "0.000"
    assert fmt_num(1.2, 2) == "1.20"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_only() -> None:
    stream = _Tty()
    with ProgressBar(4, "retrieving", stream=stream, interval=0.0, width=8) as bar:
        for _ in range(4):
            bar.advance()
    text = stream.getvalue()
    frames = text.split("\r")[1:]
    assert frames[0].startswith("retrieving [--------] 0/4")
    assert frames[2].startswith("retrieving [####----] 2/4")
    assert frames[-1].startswith("retrieving [########] 4/4")
    assert text.endswith("s\n")
    quiet = io.StringIO()
    assert list(ProgressBar(3, stream=quiet).iter("abc")) == ["a", "b", "c"]
    assert quiet.getvalue() == ""


def test_progress_bar_throttles_redraws() -> None:
    stream = _Tty()
    bar = ProgressBar(1000, stream=stream, interval=3600.0)
    with bar:
        for _ in range(999):
            bar.advance()
        assert stream.getvalue().count("\r") == 1  # only the first frame so far
        bar.advance()
    assert stream.getvalue().count("\r") == 3  # the final frame on completion and on close
    assert bar.done == 1000


def test_json_safe_and_atomic_write(tmp_path: Path) -> None:
    doc = {"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": "x"}
    assert json_safe(doc) == {"a": None, "b": [1.0, None, {"c": None}], "d": "x"}
    path = tmp_path / "out.json"
    path.write_text("old")
    write_json_atomic(path, doc)
    assert json.loads(path.read_text()) == {"a": None, "b": [1.0, None, {"c": None}], "d": "x"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_json_atomic(path, {"not serialisable": object()})
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
