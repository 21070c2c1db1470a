"""``ragtrace answer``: the metrics next to groundedness, on the same judges.

``ragtrace answer relevancy`` (does the answer address the question?) and ``ragtrace answer
correctness`` (the answer against a person's reference answer); definitions in
:mod:`ragtrace.evaluation.judges.answer_metrics`.
"""

from __future__ import annotations

import argparse
from typing import Any

from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli._judge_args import add_judge_arguments, build_judge, judge_line, read_text_arg
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.cli.output import JSON_STDOUT, add_json_option, emit_json, error, fmt_num

__all__ = ["EXIT_JUDGE_UNAVAILABLE", "format_metric", "register", "run"]

EXIT_JUDGE_UNAVAILABLE = EXIT_UNAVAILABLE
_COMMAND = "answer"

_DESCRIPTION = """\
relevancy:   does the answer address what the question asks, right or wrong? The judge lists
             the question's information needs; score = needs addressed / needs. Needs a model
             (--judge anthropic): word overlap cannot tell.
correctness: the answer against a reference answer written by a person. The judge sorts the
             answer's claims into supported / contradicted / not in the reference and marks each
             reference fact covered or not; score = F1 over them. Offline (--judge lexical) the
             score is the token F1 between answer and reference instead (the judge line says so).

TEXT arguments may be @FILE to read the file, or @- to read stdin. Exit status: 0 scored, 1
judge error (no score), 2 bad input or a judge that cannot compute the metric, 3 judge
unreachable after retries.
"""


def register(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "answer",
        help="answer relevancy and correctness (against a reference answer)",
        description=_DESCRIPTION,
    )
    metrics = parser.add_subparsers(dest="answer_metric", metavar="METRIC", required=True)
    for name, help_text in (
        ("relevancy", "does the answer address the question?"),
        ("correctness", "the answer against a reference answer"),
    ):
        p = add_command(metrics, name, help=help_text, description=_DESCRIPTION)
        p.add_argument("--question", required=True, metavar="TEXT|@FILE|@-")
        p.add_argument("--answer", required=True, metavar="TEXT|@FILE|@-")
        if name == "correctness":
            p.add_argument(
                "--reference",
                required=True,
                metavar="TEXT|@FILE|@-",
                help="the reference answer, written by a person",
            )
        add_judge_arguments(p)
        add_json_option(p, "the result")
        p.set_defaults(func=run)


def format_metric(result: Any) -> str:
    lines = [judge_line(result.judge, result.served_model)]
    name = result.metric.replace("_", " ")
    if result.error is not None:
        lines.append(f"{name}: n/a  (judge error: {result.error})")
    else:
        lines.append(f"{name}: {fmt_num(result.score, 2)}")
    for d in result.details:
        verdict = d.get("addressed", d.get("verdict", d.get("covered")))
        text = d.get("need") or d.get("claim") or d.get("fact") or ""
        lines.append(f"  - {text}  [{verdict}]")
    if result.usage.total_tokens:
        u = result.usage
        lines.append(
            f"tokens: {u.input_tokens} in, {u.output_tokens} out; cost ${result.cost_usd:.6f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ragtrace.evaluation.judges import JudgeCapabilityError, JudgeUnavailable

    try:
        question = read_text_arg("--question", args.question)
        answer = read_text_arg("--answer", args.answer)
        reference = (
            read_text_arg("--reference", args.reference)
            if args.answer_metric == "correctness"
            else None
        )
        judge = build_judge(args)
    except ValueError as exc:
        error(_COMMAND, str(exc))
        return EXIT_BAD_INPUT
    try:
        if reference is None:
            result = judge.answer_relevancy(question, answer)
        else:
            result = judge.answer_correctness(question, answer, reference)
    except JudgeCapabilityError as exc:
        error(_COMMAND, str(exc))
        return EXIT_BAD_INPUT
    except JudgeUnavailable as exc:
        after = "" if exc.retry_after is None else f" (retry after {exc.retry_after:g}s)"
        error(_COMMAND, f"{exc}{after}")
        return EXIT_JUDGE_UNAVAILABLE
    if args.json is not None and not emit_json(_COMMAND, args.json, result.to_dict()):
        return EXIT_FAILURE
    if args.json != JSON_STDOUT:
        print(format_metric(result))
    return EXIT_FAILURE if result.error is not None else EXIT_OK
