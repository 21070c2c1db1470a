"""``ragtrace calibrate``: agreement between the judge and human per-claim labels."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ragtrace.cli._arg_types import input_file
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli._judge_args import (
    add_judge_arguments,
    add_judge_concurrency,
    build_judge,
    judge_line,
    warn,
)
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.cli.output import add_json_option, emit_json, error, fmt_num, format_table

if TYPE_CHECKING:
    from ragtrace.evaluation.calibration import CalibrationReport, Confusion

__all__ = ["format_report", "register", "run"]

EXIT_JUDGE_UNAVAILABLE = EXIT_UNAVAILABLE

_DESCRIPTION = """\
Compare the judge's per-claim verdicts with a person's, on the same claims: agreement, Cohen's
kappa, the confusion matrix and every claim they disagree on. Run it before publishing
groundedness scores and again whenever the judge model or prompt changes; the judge's name,
model and prompt hash are stored (--calibration-file) and `ragtrace groundedness` warns when the
judge in use differs from the one last calibrated.

Labels file (JSON Lines), one claim per line:
  {"id": "a1-c1", "claim": "Audit logs are kept for 90 days.",
   "context": ["passage the answer was given", ...], "human_entailed": true,
   "answer": "optional: the answer the claim was taken from"}
The claims are sent to the judge already split, so its verdicts compare one to one; consecutive
lines with the same context are judged in one call. A claim the judge calls entailed counts only
when its evidence quote passes every check (verbatim in one document, not an instruction, not
from a passage flagged for injection, long enough, sharing the claim's numbers, names and key
terms); the report says how many claims each check downgraded.

The web view's audit labels (a person's agree / disagree on the judge's unit verdicts) are such
claims: `ragtrace labels export-audit --state STATE -o audit.jsonl`, then add
`--labels audit.jsonl`.

Whole answers labelled by people (hallucinated or not, with marked spans: RAGTruth and the
like) are measured by `ragtrace detect-eval` instead.

Exit status: 0 done, 1 the judge failed on every claim, 2 bad input, 3 judge unreachable.
"""


def register(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "calibrate",
        help="measure the judge's agreement with human claim labels",
        description=_DESCRIPTION,
    )
    parser.add_argument(
        "--labels",
        required=True,
        action="append",
        metavar="HUMAN.jsonl",
        type=input_file,
        help="human per-claim labels (format above; '-': stdin); repeat it to add files, e.g. "
        "the web view's audit labels (`ragtrace labels export-audit --state STATE`)",
    )
    add_judge_arguments(parser)
    parser.add_argument(
        "--loose",
        action="store_true",
        help="compare the judge's bare verdicts, without the evidence checks "
        "(to see what the checks change)",
    )
    parser.add_argument(
        "--no-save", action="store_true", help="do not record this run as the last calibration"
    )
    add_judge_concurrency(parser)
    add_json_option(parser, "the report")
    parser.set_defaults(func=run)


def _accuracy_line(c: Confusion) -> str:
    """The judge's sensitivity and specificity at finding unsupported claims, with their n and
    interval: what corrects the not-grounded share (docs/statistics.md)."""
    from ragtrace.evaluation.hallucination_rate import judge_accuracy

    sensitivity, specificity = judge_accuracy(c)
    return (
        f"finding unsupported claims: sensitivity {sensitivity.describe()}, "
        f"specificity {specificity.describe()} (95 % Wilson)"
    )


def format_report(report: CalibrationReport) -> str:
    c = report.confusion
    rule = (
        "bare judge verdicts (--loose)"
        if not report.require_verified_evidence
        else "a claim counts as entailed only when its evidence quote passes every check"
    )
    lines = [
        judge_line(report.judge),
        f"claims: {len(report.items)} compared, {report.errors} left out on judge errors  ({rule})",
        (
            f"agreement: {fmt_num(report.agreement * 100, 1)}%   "
            f"Cohen's kappa: {fmt_num(report.kappa, 3)}"
        ),
        "",
        format_table(
            ["", "human: entailed", "human: not entailed"],
            [
                ["judge: entailed", c.both_entailed, c.judge_only],
                ["judge: not entailed", c.human_only, c.neither],
            ],
        ),
        _accuracy_line(c),
    ]
    downgrades = report.downgrades_by_check
    verb = "would have downgraded" if not report.require_verified_evidence else "downgraded"
    lines += [
        "",
        (
            f"claims the judge called entailed that each check {verb} "
            f"({sum(downgrades.values())} in all):"
        ),
        "  " + ", ".join(f"{name} {n}" for name, n in downgrades.items()),
    ]
    if report.disagreements:
        lines += ["", f"disagreements ({len(report.disagreements)}):"]
        for item in report.disagreements:
            human = "entailed" if item.human_entailed else "not entailed"
            judged = "entailed" if item.judge_entailed else "not entailed"
            lines.append(f"  {item.id}: human {human}, judge {judged}: {item.claim}")
            if item.evidence:
                status = (
                    f"failed check: {item.check}"
                    if item.check is not None
                    else "verified"
                    if item.evidence_verified
                    else "NOT found in context"
                )
                lines.append(
                    f"      evidence: {json.dumps(item.evidence, ensure_ascii=False)} ({status})"
                )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ragtrace.evaluation.calibration import (
        calibration_warning,
        default_stamp_path,
        load_human_labels,
        save_stamp,
    )
    from ragtrace.evaluation.labels import InputFileError

    try:
        labels = [label for path in args.labels for label in load_human_labels(path)]
        seen: set[str] = set()
        for label in labels:
            if label.id in seen:
                raise ValueError(f"claim id {label.id!r} is in more than one --labels file")
            seen.add(label.id)
        judge = build_judge(args)
    except (InputFileError, ValueError) as exc:
        error("calibrate", str(exc))
        return EXIT_BAD_INPUT
    from ragtrace.cli._calibrate_concurrent import calibrate_concurrently

    outcome = calibrate_concurrently(
        labels, judge, require_verified_evidence=not args.loose, concurrency=args.concurrency
    )
    report = outcome.report
    print(
        f"ragtrace calibrate: tokens {outcome.input_tokens} in, {outcome.output_tokens} out; "
        f"cost ${outcome.cost_usd:.4f}",
        file=sys.stderr,
    )
    if outcome.unavailable is not None and (report is None or not report.items):
        error("calibrate", outcome.unavailable)
        return EXIT_JUDGE_UNAVAILABLE
    assert report is not None
    if not report.items:
        error("calibrate", f"the judge returned an error for all {report.errors} claims")
        return EXIT_FAILURE
    previous = calibration_warning(report.judge, args.calibration_file)
    if args.json is not None:
        doc = report.to_dict()
        if outcome.unavailable is not None:
            doc["partial"] = {"unjudged_claims": outcome.unjudged, "reason": outcome.unavailable}
        if not emit_json("calibrate", args.json, doc):
            return EXIT_FAILURE
    if args.json != "-":
        print(format_report(report))
    if outcome.unavailable is not None:
        # Partial: what was judged is reported, never saved as the calibration.
        error(
            "calibrate",
            f"partial result: {outcome.unjudged} claim(s) not judged: "
            f"{outcome.unavailable}; the calibration stamp was not saved",
        )
        return EXIT_JUDGE_UNAVAILABLE
    if not args.no_save and not args.loose:
        if previous is not None:
            warn(
                "calibrate",
                previous.replace(
                    "run `ragtrace calibrate` again", "this run replaces that calibration"
                ),
            )
        stamp = save_stamp(report, args.calibration_file)
        where = args.calibration_file or default_stamp_path()
        print(f"calibration stamp saved to {where}", file=sys.stderr)
        if stamp.held_out is not None:
            print(
                f"kept with it, the benchmark's figures for this judge {stamp.held_out.describe()}",
                file=sys.stderr,
            )
    return EXIT_OK
