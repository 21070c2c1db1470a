"""``ragtrace groundedness``: score one answer against the context it was given."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ragtrace.cli._groundedness_cli import add_batch_arguments, run_batch
from ragtrace.cli._judge_args import (
    add_judge_arguments,
    build_judge,
    judge_line,
    read_text_arg,
    warn,
)
from ragtrace.cli._output import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    add_json_option,
    emit_json,
    error,
    fmt_num,
)

if TYPE_CHECKING:
    from ragtrace.evaluation.judges import GroundednessResult

__all__ = ["EXIT_JUDGE_UNAVAILABLE", "format_result", "register", "run"]

EXIT_JUDGE_UNAVAILABLE = 3

_DESCRIPTION = """\
Split an answer into atomic claims and check each against the supplied context alone: does the
context entail it? A claim counts as entailed only when the judge says so AND its verbatim
evidence quote is found in the context (whitespace, case, Unicode and typographic quote/dash
variants normalised); a missing or invented quote downgrades it. Score = entailed claims /
claims (1.0 for an answer with no claims, flagged).

Groundedness does not judge correctness: an answer faithful to the wrong passage scores 1.0.

TEXT arguments may be @FILE to read the file, or @- to read stdin. Exit status: 0 scored, 1
judge error (no score), 2 bad input, 3 judge unreachable after retries.

Batch: --input answers.jsonl ({"id", "answer", "context": [...]} per line) judges every answer,
--concurrency at a time, appending one JSON line per result to --output (stdout when omitted);
re-running with the same --output resumes, skipping answers already judged. Totals (tokens,
cost) go to stderr; exit 1 if any answer got a judge error, 3 if the judge became unreachable.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "groundedness", help="check one answer's claims against its context",
        description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answer", metavar="TEXT|@FILE|@-", help="the answer")
    parser.add_argument("--context", action="append", metavar="TEXT|@FILE|@-",
                        help="one context document; repeat for each, in the order supplied")
    add_judge_arguments(parser)
    add_json_option(parser, "the result")
    add_batch_arguments(parser)
    parser.set_defaults(func=run)


def _claim_lines(result: GroundednessResult) -> list[str]:
    lines = []
    for i, c in enumerate(result.claims, start=1):
        verdict = "ENTAILED" if c.entailed else "NOT ENTAILED"
        if c.downgraded:
            verdict += f" (judge said entailed; downgraded: {c.downgrade_reason})"
        support = "" if c.support is None else f"  [word support {c.support:.0%}]"
        lines.append(f"[{i}] {verdict}{support}")
        lines.append(f"    claim:    {c.claim}")
        if c.evidence is not None and c.evidence.strip():
            found = "found in context" if c.evidence_verified else "NOT found in context"
            lines.append(f"    evidence: {json.dumps(c.evidence, ensure_ascii=False)} ({found})")
    return lines


def format_result(result: GroundednessResult) -> str:
    lines = [judge_line(result.judge)]
    if result.error is not None:
        lines.append(f"groundedness: n/a  (judge error: {result.error})")
    elif result.no_claims:
        lines.append("groundedness: 1.00  (the answer makes no claims)")
    else:
        entailed = sum(c.entailed for c in result.claims)
        lines.append(f"groundedness: {fmt_num(result.score, 2)}  "
                     f"({entailed} of {len(result.claims)} claims entailed)")
    if result.usage.total_tokens:
        u = result.usage
        lines.append(f"tokens: {u.input_tokens} in, {u.output_tokens} out, "
                     f"{u.cache_read_input_tokens} cache read, "
                     f"{u.cache_creation_input_tokens} cache write; cost ${result.cost_usd:.6f}")
    if result.claims:
        lines.append("")
        lines.extend(_claim_lines(result))
    return "\n".join(lines)


def to_json(result: GroundednessResult, warning: str | None) -> dict[str, object]:
    d = result.to_dict()
    d["calibration_warning"] = warning
    return d


def run(args: argparse.Namespace) -> int:
    from ragtrace.evaluation.calibration import calibration_warning
    from ragtrace.evaluation.judges import JudgeUnavailable

    if args.input is not None:
        return run_batch(args)
    if args.answer is None or not args.context:
        error("groundedness", "--answer and --context are required (or --input FILE.jsonl)")
        return EXIT_BAD_INPUT
    try:
        answer = read_text_arg("--answer", args.answer)
        context = [read_text_arg("--context", c) for c in args.context]
        judge = build_judge(args)
    except ValueError as exc:
        error("groundedness", str(exc))
        return EXIT_BAD_INPUT
    try:
        result = judge.groundedness(answer, context)
    except JudgeUnavailable as exc:
        after = "" if exc.retry_after is None else f" (retry after {exc.retry_after:g}s)"
        error("groundedness", f"{exc}{after}")
        return EXIT_JUDGE_UNAVAILABLE
    warning = calibration_warning(result.judge, args.calibration_file)
    if warning is not None:
        warn("groundedness", warning)
    if args.json is not None and not emit_json("groundedness", args.json,
                                                to_json(result, warning)):
        return EXIT_BAD_INPUT
    if args.json != "-":
        print(format_result(result))
    return EXIT_FAILURE if result.error is not None else EXIT_OK
