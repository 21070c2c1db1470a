"""``ragtrace demo``: the embedded evaluator scoring a small bundled RAG app, in one command.

It starts ``ragtrace serve``'s evaluator in this process on a free loopback port, asks the demo
app (``ragtrace_consumers.demo``) its questions through the real decorators and OTLP exporter, waits for
every trace to be scored, and prints per-question recall@k and groundedness, the claims the
judge did not find supported, the four-cell table and the totals. It finishes on its own; with ``--serve`` it keeps the evaluator (and its web view) up
afterwards, prints the URL and stops on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING

from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from ragtrace.cli.output import JSON_STDOUT, add_json_option, emit_json, error
from ragtrace.evaluation.judges.spec import JUDGE_NAMES

if TYPE_CHECKING:
    from ragtrace_consumers.demo.run import DemoRun
    from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator

__all__ = ["register", "run"]

_DESCRIPTION = """\
Run the embedded evaluator against a bundled RAG app and show what it finds: per-question
recall@k against labelled questions, groundedness of each answer, and the cell each question
falls into (fine / retrieval failed / generation failed / both failed / unlabelled).

The judge is Anthropic's when ANTHROPIC_API_KEY is set, else an offline lexical check; the
output says which. No Kafka, Redis or network access is needed.
"""


def register(subparsers: Subparsers) -> None:
    p = add_command(
        subparsers,
        "demo",
        help="score a bundled RAG app with the embedded evaluator (start here)",
        description=_DESCRIPTION,
    )
    add_json_option(p, "the result (one document; on stdout the progress goes to stderr)")
    p.add_argument(
        "--judge",
        choices=JUDGE_NAMES,
        default="auto",
        help="auto (default): anthropic when ANTHROPIC_API_KEY is set, else lexical",
    )
    p.add_argument(
        "--state",
        metavar="PATH",
        default=None,
        help="keep the evaluator's SQLite state in PATH (default: a temporary file)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="give up if scoring takes longer (default: %(default)s)",
    )
    p.add_argument(
        "--serve",
        action="store_true",
        help="keep the demo's evaluator up afterwards and print its web view's URL: open it "
        "to see why each answer landed in its cell (Ctrl-C stops it)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=0,
        metavar="PORT",
        help="the evaluator's port (OTLP/HTTP and the web view; default: a free one)",
    )
    p.set_defaults(func=run)


def _serve(result: DemoRun, evaluator: EmbeddedEvaluator, to_stdout: bool) -> None:
    """Print the report, then keep the evaluator up until Ctrl-C or SIGTERM."""
    from ragtrace_consumers.demo.report import format_text

    if not to_stdout:
        print(format_text(result), flush=True)
    info = sys.stderr if to_stdout else sys.stdout
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(
            f"\nragtrace demo: the evaluator stays up. Open {evaluator.web_url} to see why each "
            "answer landed in its cell (Ctrl-C stops it).",
            file=info,
            flush=True,
        )
        stop.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run(args: argparse.Namespace) -> int:
    from ragtrace_consumers.commands.listen_errors import report_cannot_listen
    from ragtrace_consumers.demo.report import format_text, to_json
    from ragtrace_consumers.demo.run import DemoTimeout, run_demo
    from ragtrace_consumers.errors import CannotListen
    from ragtrace_consumers.intake.otlp_receiver import RECEIVER_LISTENER

    out = sys.stdout
    to_stdout = args.json == JSON_STDOUT
    progress_stream = sys.stderr if to_stdout else sys.stdout

    def progress(line: str) -> None:
        print(line, file=progress_stream, flush=True)

    if not to_stdout:
        progress("ragtrace demo: a support bot over a tiny documentation corpus, evaluated online")
    if not 0 <= args.port <= 65535:
        error("demo", f"--port must be within 0..65535, got {args.port}")
        return EXIT_BAD_INPUT
    try:
        result = run_demo(
            judge_name=args.judge,
            state_path=args.state,
            timeout_s=args.timeout,
            progress=progress,
            serve=(lambda r, e: _serve(r, e, to_stdout)) if args.serve else None,
            port=args.port,
        )
    except CannotListen as exc:
        return report_cannot_listen("demo", exc, {RECEIVER_LISTENER: "--port"})
    except DemoTimeout as exc:
        error("demo", str(exc))
        return EXIT_FAILURE
    except ValueError as exc:  # e.g. --judge anthropic without a key
        error("demo", str(exc))
        return EXIT_FAILURE
    if args.json is not None and not emit_json("demo", args.json, to_json(result)):
        return EXIT_FAILURE
    if not to_stdout and not args.serve:
        print(format_text(result), file=out)
    out.flush()
    return EXIT_OK
