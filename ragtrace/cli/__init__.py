"""The ``ragtrace`` console script: one subcommand per module in this package.

Each command module exposes ``register(subparsers) -> None``, which adds its parser and sets
``func`` (``Callable[[argparse.Namespace], int]``) as the parser default. Heavy imports (Kafka,
Redis, Anthropic) happen inside ``func`` so ``ragtrace --help`` works on the core install.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]

# Order is the order shown in --help.
_COMMAND_MODULES: tuple[str, ...] = (
    "ragtrace.cli.demo",
    "ragtrace.cli.eval",
    "ragtrace.cli.compare",
    "ragtrace.cli.groundedness",
    "ragtrace.cli.calibrate",
    "ragtrace.cli.labels",
    "ragtrace.cli.consume",
    "ragtrace.cli.serve",
    "ragtrace.cli.inspect",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragtrace",
        description="Evaluate retrieval-augmented generation: recall@k and groundedness, "
        "offline on labelled sets and online on live traces.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
