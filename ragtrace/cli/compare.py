"""``ragtrace compare``: two ``ragtrace eval --json`` reports, paired question by question."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ragtrace.cli._arg_types import input_file, stdin_used_twice
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli._gate import Gate, GateError, parse_gates
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from ragtrace.cli.output import (
    add_json_option,
    emit_json,
    error,
    fmt_num,
    format_intervals,
    format_table,
    json_to_stdout,
)
from ragtrace.evaluation.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Comparison,
    IncomparableReportsError,
    Mover,
    compare_reports,
)
from ragtrace.evaluation.labels import InputFileError
from ragtrace.evaluation.report import load_report

__all__ = ["format_comparison", "register", "run"]

_DESCRIPTION = """\
Compare report B against baseline A (both written by `ragtrace eval --json`), question by
question: the change in each metric's mean with a paired bootstrap confidence interval, and
every question that got better or worse. An average can rise while some questions fall.

The reports must use the same recall definition and the same labels.

CI gate: --fail-if 'recall@5<-0.02' exits 1 when the change in mean recall@5 (B - A) is below
-0.02. A condition is METRIC<VALUE or METRIC>VALUE on the delta; add "ci" to test the
interval's bound instead (recall@5:ci<0, fails only when the whole interval is below 0, i.e. a
significant drop). Repeat --fail-if or separate conditions with commas.
Exit status: 0 no gate failed, 1 a gate failed, 2 bad input.
"""


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {value}")
    return value


def _int_at_least(minimum: int) -> type[int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse  # type: ignore[return-value]


def register(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "compare",
        help="compare two eval reports: metric deltas with confidence intervals, movers",
        description=_DESCRIPTION,
    )
    parser.add_argument("a", metavar="A.json", type=input_file, help="baseline report ('-': stdin)")
    parser.add_argument(
        "b", metavar="B.json", type=input_file, help="candidate report ('-': stdin)"
    )
    parser.add_argument(
        "--resamples",
        type=_int_at_least(1),
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples (default: {DEFAULT_RESAMPLES})",
    )
    parser.add_argument(
        "--confidence",
        type=_confidence,
        default=DEFAULT_CONFIDENCE,
        help=f"confidence level of the interval (default: {DEFAULT_CONFIDENCE})",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap random seed (default: 0)")
    parser.add_argument(
        "--movers",
        type=_int_at_least(0),
        default=10,
        metavar="N",
        help="questions listed per metric and direction (default: 10; --json has all)",
    )
    parser.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="COND",
        type=_gates,
        help="exit 1 when a condition on a metric's change holds, e.g. 'recall@5<-0.02' or "
        "'mrr:ci<0' (repeatable, comma-separated)",
    )
    add_json_option(parser, "the comparison")
    parser.set_defaults(func=run)


def _gates(text: str) -> tuple[Gate, ...]:
    try:
        return parse_gates(text)
    except GateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _movers(movers: Sequence[Mover], limit: int) -> str:
    shown = [f"{m.qid} ({fmt_num(m.a)} -> {fmt_num(m.b)})" for m in movers[:limit]]
    if len(movers) > limit:
        shown.append(f"... {len(movers) - limit} more")
    return ", ".join(shown)


def format_comparison(
    comparison: Comparison, *, movers: int = 10, a_name: str = "A", b_name: str = "B"
) -> str:
    """The terminal form of a comparison: one row per metric, then the questions that moved."""
    c = comparison
    pct = f"{c.confidence * 100:g}%"
    lines = [
        f"A: {a_name}    B: {b_name}",
        f"{c.paired} questions answerable in both, recall definition: {c.recall_definition.value}",
    ]
    if c.unanswerable:
        lines.append(f"{c.unanswerable} unanswerable question(s) left out")
    if c.only_in_a or c.only_in_b:
        lines.append(
            f"not paired: {len(c.only_in_a)} question(s) only in A, {len(c.only_in_b)} only in B"
        )
    lines.append("")
    rows = [
        [
            m.metric,
            fmt_num(m.a),
            fmt_num(m.b),
            fmt_num(m.delta, signed=True),
            f"[{fmt_num(m.ci_low, signed=True)}, {fmt_num(m.ci_high, signed=True)}]",
            str(len(m.better)),
            str(len(m.worse)),
        ]
        for m in c.metrics
    ]
    headers = ["metric", "A", "B", "delta", f"{pct} CI", "better", "worse"]
    lines.append(format_table(headers, rows))
    lines.append(f"(paired bootstrap over questions, {c.resamples} resamples, seed {c.seed})")
    for side, rates in (
        ("A", {m.metric: m.a_rate for m in c.metrics if m.a_rate is not None}),
        ("B", {m.metric: m.b_rate for m in c.metrics if m.b_rate is not None}),
    ):
        if rates:
            lines += ["", *format_intervals(rates, f" of {side}")]
    if movers:
        lines.append("")
        moved = [m for m in c.metrics if m.better or m.worse]
        if not moved:
            lines.append("No question changed on any metric.")
        for m in moved:
            lines.append(f"{m.metric}:")
            if m.better:
                lines.append(f"  better: {_movers(m.better, movers)}")
            if m.worse:
                lines.append(f"  worse:  {_movers(m.worse, movers)}")
        lines.append("")
        lines.append(f"better on some metric: {', '.join(sorted(c.better)) or 'none'}")
        lines.append(f"worse on some metric:  {', '.join(sorted(c.worse)) or 'none'}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if stdin_used_twice(args.a, args.b):
        error("compare", "A.json and B.json cannot both be '-' (stdin can be read once)")
        return EXIT_BAD_INPUT
    try:
        a = load_report(args.a)
        b = load_report(args.b)
        comparison = compare_reports(
            a, b, resamples=args.resamples, confidence=args.confidence, seed=args.seed
        )
    except (InputFileError, IncomparableReportsError) as exc:
        error("compare", str(exc))
        return EXIT_BAD_INPUT
    gates = [g for group in args.fail_if for g in group]
    try:
        failed = [g for g in gates if g.fails(comparison)]
    except GateError as exc:
        error("compare", str(exc))
        return EXIT_BAD_INPUT
    if args.json is not None:
        doc = comparison.to_json()
        if gates:
            doc["gates"] = [{"condition": str(g), "failed": g in failed} for g in gates]
        if not emit_json("compare", args.json, doc):
            return EXIT_FAILURE
    if not json_to_stdout(args.json):
        print(format_comparison(comparison, movers=args.movers, a_name=args.a, b_name=args.b))
    for g in failed:
        error("compare", f"gate failed: {g} ({g.describe(comparison)})")
    return EXIT_FAILURE if failed else EXIT_OK
