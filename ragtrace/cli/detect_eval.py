"""``ragtrace detect-eval``: a judge measured against people on a hallucination set.

A sibling of ``ragtrace calibrate`` rather than a mode of it: calibrate compares claim verdicts
one to one and records the judge as calibrated; this command scores whole answers, tunes a
threshold, and is a long, resumable, possibly paid run with its own results file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ragtrace.cli._arg_types import count, input_file, non_negative, unit_interval
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli._judge_args import (
    add_judge_arguments,
    add_judge_concurrency,
    build_judge,
    judge_line,
)
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.cli.output import (
    add_json_option,
    emit_json,
    error,
    fmt_num,
    format_table,
    json_to_stdout,
)
from ragtrace.evaluation.attribution import Thresholds

if TYPE_CHECKING:
    from ragtrace.evaluation.detection_report import DetectionReport

__all__ = ["EXIT_JUDGE_UNAVAILABLE", "format_report", "register", "run"]

EXIT_JUDGE_UNAVAILABLE = EXIT_UNAVAILABLE
DEFAULT_THRESHOLD = Thresholds().groundedness

_DESCRIPTION = f"""\
Measure a judge against people: judge every answer of a human-labelled hallucination set and
report, per task type and overall, how well its groundedness score finds the answers people
marked hallucinated (positive class: hallucinated; an answer scoring strictly below
--threshold is flagged):
  P / R / F1 at --threshold (default {DEFAULT_THRESHOLD:g}, the four cells' pass threshold),
  AUROC of the judge's ranking key (threshold-free; the score, or for the lexical judge its
  mean claim support blended with word overlap),
  the threshold on that key maximising F1 on the tune split, and the F1 it gives on the test
  split,
  span overlap: character-level P / R / F1 of the units the judge found unsupported against
  the spans people marked (where both exist).
Every figure is on the test split; thresholds are chosen on the tune split only.

Input (--input): a RAGTruth directory, or its response.jsonl next to source_info.jsonl (train
= tune; responses of quality other than "good" left out, as in RAGTruth's baseline, unless
--all-quality), or JSON Lines, one answer per line:
  {{"id": "q1", "context": ["passage", ...], "answer": "...",
   "spans": [[start, end], ...], "hallucinated": true, "task_type": "qa", "split": "test"}}
spans (character offsets into answer) or hallucinated may be omitted, not both; split is tune
or test (train/dev/validation mean tune), or assigned by a hash of the id when absent.

Resumable: each result is appended to --results (default: <input>.<judge>-<prompt hash>
.results.jsonl) and fsync'd as it arrives; run the same command again to continue where a run
stopped, never judging a finished answer twice. A paid judge prints its expected token cost
first and runs only with --yes, or with --max-cost USD (refused when the estimate is above it;
the run stops starting new answers once it has spent that much; the cap is per run).

Exit status: 0 done, 1 the judge failed on every answer, 2 bad input or no consent to a paid
run, 3 judge unreachable or --max-cost reached (the partial report is printed; run again).
"""


def register(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "detect-eval",
        help="measure a judge's hallucination detection against human-labelled answers",
        description=_DESCRIPTION,
    )
    parser.add_argument(
        "--input",
        required=True,
        metavar="SET",
        type=input_file,
        help="a RAGTruth directory (or its response.jsonl) or a JSON Lines file (format above; "
        "'-': stdin, with --results)",
    )
    parser.add_argument(
        "--results", metavar="RESULTS.jsonl", help="where results are kept (resume); see above"
    )
    parser.add_argument(
        "--threshold",
        type=unit_interval,
        default=DEFAULT_THRESHOLD,
        metavar="T",
        help=f"flag an answer scoring below T (default: {DEFAULT_THRESHOLD:g})",
    )
    parser.add_argument(
        "--all-quality",
        action="store_true",
        help="RAGTruth: keep responses whose quality is not 'good' (refusals, truncations)",
    )
    parser.add_argument(
        "--tune-sample",
        type=count,
        metavar="N",
        help="judge at most N answers of the tune split (the same N on every run), e.g. to "
        "tune on part of RAGTruth's 15,090 training answers; all test answers are judged",
    )
    add_judge_arguments(parser)
    parser.add_argument("--yes", action="store_true", help="run a paid judge without a cap")
    parser.add_argument(
        "--max-cost",
        type=non_negative,
        metavar="USD",
        help="run a paid judge only if the estimate is within USD, and stop once this run "
        "has spent USD",
    )
    add_judge_concurrency(parser)
    add_json_option(parser, "the report")
    parser.set_defaults(func=run)


def _pct(x: float) -> str:
    return fmt_num(x * 100, 1)


def format_report(report: DetectionReport) -> str:
    rows = []
    for g in report.groups:
        c, t = g.at_threshold, g.at_tuned
        span = g.spans
        rows.append(
            [
                g.name,
                g.test,
                g.test_hallucinated,
                _pct(c.precision),
                _pct(c.recall),
                _pct(c.f1),
                fmt_num(g.auroc, 3),
                "n/a" if g.tuned is None else fmt_num(g.tuned.value, 3),
                "n/a" if t is None else _pct(t.f1),
                "n/a"
                if span is None
                else f"{_pct(span.precision)}/{_pct(span.recall)}/{_pct(span.f1)}",
            ]
        )
    lines = [
        format_table(
            [
                "task type",
                "test",
                "halluc.",
                f"P@{report.threshold:g}",
                f"R@{report.threshold:g}",
                f"F1@{report.threshold:g}",
                "AUROC",
                "tuned thr",
                "F1@tuned",
                "span P/R/F1",
            ],
            rows,
        ),
        "",
        "positive class: hallucinated; test split only; thresholds tuned on the tune split "
        f"({report.overall.tune} answers); P/R/F1 in %",
    ]
    if report.failed or report.unjudged:
        lines.append(
            f"left out: {report.failed} answer(s) the judge failed on, "
            f"{report.unjudged} not judged yet"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ragtrace.cli._cost_gate import CostCap, consent_problem, estimate_cost, is_paid
    from ragtrace.cli._detect_results import (
        DurableLines,
        ResultsFileError,
        default_results_path,
        done_ids,
        judged,
        overlap_share_of,
        read_results,
    )
    from ragtrace.cli._groundedness_batch import BatchItem, judge_batch
    from ragtrace.evaluation.detection_report import build_report
    from ragtrace.evaluation.hallucination_sets import load_hallucination_set, sample_tune
    from ragtrace.evaluation.labels import InputFileError

    command = "detect-eval"
    if args.input == "-" and not args.results:
        error(command, "--input - needs --results (the default results file is named after it)")
        return EXIT_BAD_INPUT
    source = Path(args.input)
    try:
        items = load_hallucination_set(source, include_all_quality=args.all_quality)
        if args.tune_sample is not None:
            items = sample_tune(items, args.tune_sample)
        judge = build_judge(args)
        results = Path(args.results) if args.results else default_results_path(source, judge.info)
        records = read_results(results, judge.info)
    except (InputFileError, ResultsFileError, ValueError) as exc:
        error(command, str(exc))
        return EXIT_BAD_INPUT
    except OSError as exc:
        error(command, f"cannot read the results file: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
    done = done_ids(records)
    todo = [it for it in items if it.id not in done]
    print(
        f"ragtrace {command}: {len(items)} answers, {len(items) - len(todo)} already judged "
        f"in {results}",
        file=sys.stderr,
    )
    runner = judge
    if todo and is_paid(judge):
        estimate = estimate_cost(judge, [(it.answer, it.context) for it in todo])
        print(f"ragtrace {command}: {estimate.describe()}", file=sys.stderr)
        problem = consent_problem(estimate, yes=args.yes, max_cost=args.max_cost)
        if problem is not None:
            error(command, problem)
            return EXIT_BAD_INPUT
        if args.max_cost is not None:
            runner = CostCap(judge, args.max_cost)
    unavailable = None
    if todo:
        batch = [BatchItem(it.id, it.answer, it.context) for it in todo]
        try:
            with DurableLines(results) as out:
                totals = judge_batch(runner, batch, out, concurrency=args.concurrency, done=done)
        except OSError as exc:
            error(command, f"cannot write {results}: {exc.strerror or exc}")
            return EXIT_FAILURE
        print(f"ragtrace {command}: {totals.summary()}", file=sys.stderr)
        unavailable = totals.unavailable
        records = read_results(results, judge.info)
    by_id = {it.id: it for it in items}
    report = build_report(
        items,
        {
            i: judged(by_id[i].answer, r, by_id[i].context, overlap_share_of(judge))
            for i, r in records.items()
            if i in by_id
        },
        args.threshold,
    )
    if not report.overall.test and not report.overall.tune:
        if unavailable is not None:  # nothing judged: the cause, not a count of none
            error(command, f"stopped: {unavailable}; run the same command again to resume")
            return EXIT_JUDGE_UNAVAILABLE
        error(command, f"the judge returned an error for all {report.failed} answers")
        return EXIT_FAILURE
    if args.json is not None:
        doc = {"judge": judge.info.to_dict(), "results_file": str(results), **report.to_dict()}
        if not emit_json(command, args.json, doc):
            return EXIT_FAILURE
    if not json_to_stdout(args.json):
        print(judge_line(judge.info))
        print(format_report(report))
    if unavailable is not None:
        error(command, f"stopped: {unavailable}; run the same command again to resume")
        return EXIT_JUDGE_UNAVAILABLE
    return EXIT_OK
