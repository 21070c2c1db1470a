"""Regenerate the files derived from the settings models, or check them (``--check``).

python scripts/gen_config.py          # write them (also: make config-docs)
python scripts/gen_config.py --check  # exit 1 naming each file that differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragtrace_consumers.config import docs as config_docs

ROOT = Path(__file__).resolve().parent.parent


def rendered(root: Path = ROOT) -> dict[Path, str]:
    """Each generated file's path and the text it should hold."""
    schema = root / config_docs.CHART_SCHEMA
    return {
        root / config_docs.EXAMPLE: config_docs.render_example(),
        schema: config_docs.render_chart_schema(schema.read_text(encoding="utf-8")),
        root / config_docs.DOCS_TABLE: config_docs.render_docs(),
    }


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report files that differ")
    args = parser.parse_args(argv)
    stale = []
    for path, text in rendered(root).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.relative_to(root))
        if not args.check:
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        names = ", ".join(map(str, stale))
        print(f"out of date: {names}; regenerate with `make config-docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
