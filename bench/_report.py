"""Write one benchmark's results into its own section of ``docs/benchmarks.md``.

Each benchmark owns the text between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; running
it again replaces that section and leaves the others as they are.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

__all__ = ["machine_line", "write_section"]

_DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
_HEADER = (
    "# Benchmarks\n\n"
    "Every figure below is written by a script in `bench/` (`make bench` runs them all). Ratios "
    "compare against a baseline measured in the same run on the same machine, so they travel "
    "between machines better than the absolute numbers do.\n"
)


def machine_line() -> str:
    return f"Python {platform.python_version()} on {platform.machine()}, {platform.system()}"


def write_section(name: str, markdown: str, doc: Path = _DOC) -> None:
    text = doc.read_text(encoding="utf-8") if doc.exists() else _HEADER
    block = f"<!-- bench:{name} -->\n{markdown.strip()}\n<!-- /bench:{name} -->"
    pattern = re.compile(
        rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.DOTALL
    )
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else f"{text.rstrip()}\n\n{block}\n"
    )
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
