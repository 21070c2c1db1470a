"""The batch options of ``ragtrace groundedness`` and their command body (see
:mod:`ragtrace.cli._groundedness_batch` for the contract)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from ragtrace.cli._arg_types import input_file
from ragtrace.cli._judge_args import add_judge_concurrency, build_judge
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.cli.output import error

__all__ = ["EXIT_JUDGE_UNAVAILABLE", "add_batch_arguments", "run_batch"]

EXIT_JUDGE_UNAVAILABLE = EXIT_UNAVAILABLE


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    batch = parser.add_argument_group("batch mode")
    batch.add_argument(
        "--input",
        metavar="ANSWERS.jsonl",
        type=input_file,
        help="judge every answer of this JSON Lines file ('-': stdin)",
    )
    batch.add_argument(
        "--output",
        metavar="RESULTS.jsonl",
        help="append one JSON line per result here, skipping ids already done "
        "(resume); default: stdout",
    )
    add_judge_concurrency(batch)


def run_batch(args: argparse.Namespace) -> int:
    from ragtrace.cli._groundedness_batch import (
        BatchInputError,
        judge_batch,
        read_done_ids,
        read_items,
    )

    try:
        items = list(read_items(args.input))
        judge = build_judge(args)
    except (BatchInputError, ValueError) as exc:
        error("groundedness", str(exc))
        return EXIT_BAD_INPUT
    except OSError as exc:
        error("groundedness", f"cannot read {args.input}: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        error("groundedness", f"{args.input}: ids must be unique (resuming relies on them)")
        return EXIT_BAD_INPUT
    done = read_done_ids(Path(args.output)) if args.output else set()
    with contextlib.ExitStack() as stack:
        out = (
            stack.enter_context(Path(args.output).open("a", encoding="utf-8"))
            if args.output
            else sys.stdout
        )
        totals = judge_batch(judge, items, out, concurrency=args.concurrency, done=done)
    print(f"ragtrace groundedness: {totals.summary()}", file=sys.stderr)
    if totals.unavailable is not None:
        error("groundedness", f"judge unavailable: {totals.unavailable}; run again to resume")
        return EXIT_JUDGE_UNAVAILABLE
    return EXIT_FAILURE if totals.errors else EXIT_OK
