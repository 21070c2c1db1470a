"""``ragtrace eval``: retrieval metrics for a labelled question set, offline, with no model call.

The retrieved lists come from a run file or from calling a retriever function on each question.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from ragtrace.cli._arg_types import input_file, positive_int, stdin_used_twice
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from ragtrace.cli.output import (
    ProgressBar,
    add_json_option,
    emit_json,
    error,
    fmt_num,
    format_intervals,
    format_table,
    json_to_stdout,
)
from ragtrace.evaluation.labels import InputFileError, LabelledQuestion, load_labels, load_run
from ragtrace.evaluation.report import RetrievalReport, evaluate_run
from ragtrace.evaluation.retrieval import (
    ENV_RECALL_DEFINITION,
    RecallDefinition,
    resolve_recall_definition,
)

__all__ = ["format_report", "load_retriever", "register", "retrieve_all", "run"]

_DESCRIPTION = """\
Score retrieval against labelled questions: recall@k, hit rate@k, precision@k, nDCG@k and MRR.
No model is called.

Labels file (JSON Lines): {"qid": "q1", "question": "...", "gold": ["chunk-id", ...]}
  An empty gold list marks an unanswerable question: it is scored n/a and left out of the means.
Run file (JSON Lines):    {"qid": "q1", "retrieved": ["chunk-id", ...]}  (best first)

"recall@k" follows --recall-definition: mean_recall (the fraction of the gold set in the top k)
or hit_rate (1 if any gold chunk is in the top k). Hit rate is never lower, so keep one
definition across releases; every report names the one it used and the average gold-set size.

With --retriever, questions are retrieved --concurrency at a time. A question whose retrieval
fails (the retriever raises, or returns something without chunk IDs) is reported on stderr and
in the JSON's "errors", left out of the means, and makes the exit status 1; the others are
scored. Exit status: 0 scored, 1 some question failed, 2 bad input.
"""

_DEFINITION_NAMES = {
    RecallDefinition.MEAN_RECALL: "mean recall",
    RecallDefinition.HIT_RATE: "hit rate",
}


def register(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "eval",
        help="score a retriever against labelled questions (recall@k, MRR, ...)",
        description=_DESCRIPTION,
    )
    parser.add_argument(
        "--labels",
        required=True,
        metavar="LABELS.jsonl",
        type=input_file,
        help="labels file ('-': stdin)",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--run",
        metavar="RUN.jsonl",
        type=input_file,
        help="retrieved chunk IDs per question ('-': stdin)",
    )
    source.add_argument(
        "--retriever",
        metavar="MODULE:FUNCTION",
        help="call FUNCTION(question_text) for each question; it returns chunks in any shape "
        "ragtrace.extract_chunks reads (ID strings, dicts, LangChain/LlamaIndex objects). "
        "the current directory is on the import path",
    )
    parser.add_argument(
        "--k",
        type=positive_int,
        action="append",
        metavar="K",
        help="cutoff; repeat for several (default: 5)",
    )
    parser.add_argument(
        "--recall-definition",
        choices=[d.value for d in RecallDefinition],
        help=f"what recall@k means (default: ${ENV_RECALL_DEFINITION}, else mean_recall)",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=4,
        metavar="N",
        help="questions retrieved at once with --retriever (default: 4)",
    )
    add_json_option(parser, "the full report (per question)")
    parser.set_defaults(func=run)


def load_retriever(spec: str) -> Callable[[str], object]:
    """Import ``module:function`` (``function`` may be a dotted attribute path).

    Raises ``ValueError`` (or ``TypeError`` for a non-callable) with a readable reason.
    """
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"--retriever must look like module:function, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr_path!r}") from None
    if not callable(target):
        raise TypeError(f"{spec!r} is not callable")
    return target


class _QuestionFailedError(Exception):
    pass


def _retrieve_one(retriever: Callable[[str], object], q: LabelledQuestion) -> list[str]:
    from ragtrace.chunks import ChunkExtractionError, extract_chunks

    try:
        result = retriever(q.question)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))  # each worker thread runs its own event loop
    except Exception as exc:
        raise _QuestionFailedError(
            f"the retriever raised on question {q.qid!r}: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        chunks = extract_chunks(result)  # type: ignore[arg-type]
    except ChunkExtractionError as exc:
        raise _QuestionFailedError(
            f"cannot read the retriever's result for question {q.qid!r}: {exc}"
        ) from None
    return [c.id for c in chunks]


def retrieve_all(
    retriever: Callable[[str], object],
    questions: Sequence[LabelledQuestion],
    concurrency: int = 4,
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Call ``retriever`` on every question, ``concurrency`` at a time: (retrieved chunk IDs by
    qid, error message by qid), both in label-file order. One question's failure never stops
    the others."""
    found: dict[str, list[str]] = {}
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ragtrace-eval") as pool:
        futures = {pool.submit(_retrieve_one, retriever, q): q for q in questions}
        with ProgressBar(len(questions), "retrieving") as bar:
            for future in as_completed(futures):
                q = futures[future]
                try:
                    found[q.qid] = future.result()
                except _QuestionFailedError as exc:
                    failed[q.qid] = str(exc)
                bar.advance()
    order = {q.qid: i for i, q in enumerate(questions)}
    return (
        dict(sorted(found.items(), key=lambda kv: order[kv[0]])),
        dict(sorted(failed.items(), key=lambda kv: order[kv[0]])),
    )


async def _await(awaitable: object) -> object:
    return await awaitable  # type: ignore[misc]


def format_report(report: RetrievalReport) -> str:
    """The terminal form of a report: what was scored, the definition in force, the metrics."""
    definition = _DEFINITION_NAMES[report.recall_definition]
    lines = [
        (
            f"{report.questions} labelled questions, {report.unanswerable} unanswerable "
            "(empty gold set, left out of the means)"
        ),
    ]
    lines.append(
        f"recall definition: {report.recall_definition.value}    "
        f"average gold-set size: {fmt_num(report.avg_gold_size, 2)}"
    )
    lines.append("")
    m = report.metrics
    rows = [
        [f"recall ({definition})", *(fmt_num(m[f"recall@{k}"]) for k in report.ks)],
        ["hit rate", *(fmt_num(m[f"hit_rate@{k}"]) for k in report.ks)],
        ["precision", *(fmt_num(m[f"precision@{k}"]) for k in report.ks)],
        ["nDCG", *(fmt_num(m[f"ndcg@{k}"]) for k in report.ks)],
    ]
    lines.append(format_table(["metric", *(f"@{k}" for k in report.ks)], rows))
    lines.append("")
    lines.append(f"MRR: {fmt_num(m['mrr'])}  (reciprocal rank of the first gold chunk, whole list)")
    lines.append("")
    lines.extend(format_intervals(report.intervals()))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    ks: list[int] = sorted(set(args.k or [5]))
    definition = resolve_recall_definition(args.recall_definition)
    failed: dict[str, str] = {}
    if stdin_used_twice(args.labels, args.run):
        error("eval", "--labels and --run cannot both be '-' (stdin can be read once)")
        return EXIT_BAD_INPUT
    try:
        questions = load_labels(args.labels)
        if args.run is not None:
            retrieved = load_run(args.run, questions)
        else:
            retriever = load_retriever(args.retriever)
            retrieved, failed = retrieve_all(retriever, questions, args.concurrency)
    except (InputFileError, ValueError, TypeError) as exc:
        error("eval", str(exc))
        return EXIT_BAD_INPUT
    for message in failed.values():
        error("eval", message)
    scored = [q for q in questions if q.qid not in failed]
    if not scored:
        error("eval", "no question could be retrieved; nothing to score")
        return EXIT_FAILURE
    report = evaluate_run(scored, retrieved, ks, definition)
    if args.json is not None:
        doc = report.to_json()
        if failed:
            doc["errors"] = failed
        if not emit_json("eval", args.json, doc):
            return EXIT_FAILURE
    if not json_to_stdout(args.json):
        print(format_report(report))
        if failed:
            print(f"\n{len(failed)} question(s) left out: retrieval failed (see the errors above)")
    return EXIT_FAILURE if failed else EXIT_OK
