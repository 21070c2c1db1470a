"""``ragtrace serve``: the embedded evaluator — one process, no Kafka, no Redis.

Applications export spans over OTLP/HTTP to it (port 4318, loopback by default); it assembles,
samples, scores and writes back exactly as ``ragtrace consume`` does, keeps the judge cache,
the idempotency marks and every scored trace in a local SQLite file, serves Prometheus metrics
on ``/metrics`` and prints each trace as it is scored. Ctrl-C (or SIGTERM) stops it.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from ragtrace.cli._arg_types import STDIN_HELP, input_file, stdin_used_twice
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from ragtrace.cli.output import add_json_option, error, json_safe, json_to_stdout
from ragtrace.masking import mask_url
from ragtrace_consumers.commands.setting_flags import add_setting_flags, with_flags

if TYPE_CHECKING:
    from ragtrace_consumers.config import ServeSettings

__all__ = ["register", "run"]

_DESCRIPTION = """\
Run the evaluator in this process: an OTLP/HTTP receiver (POST /v1/traces, protobuf or JSON,
gzip; /v1/metrics and /v1/logs are acknowledged and forwarded to --otlp-endpoint) feeding the same assembly, sampling, scoring and write-back steps as `ragtrace consume`.

State (traces being assembled, judge-result cache, written-back marks, scored traces) is kept
in a SQLite file: a request is answered 200 only once its spans are committed there (else 503
with Retry-After), a restart (killed or not) resumes every accepted trace, and neither re-pays
the judge nor re-writes a score. Memory is bounded by --max-pending-traces/--max-pending-mib. Evaluation spans and metrics are also
sent over OTLP/HTTP when --otlp-endpoint (or $RAGTRACE_EXPORT_OTLP_ENDPOINT) is set. The judge is
Anthropic's when ANTHROPIC_API_KEY is set, else the offline lexical check.
"""


_SECTIONS = ("serve", "judge", "web")
"""The sections whose keys' flags ``serve`` takes (generated from the settings model)."""


def register(subparsers: Subparsers) -> None:
    p = add_command(
        subparsers,
        "serve",
        help="run the embedded evaluator (OTLP/HTTP in, scores out; no Kafka/Redis)",
        description=_DESCRIPTION,
    )
    keys = add_setting_flags(p, _SECTIONS)
    p.add_argument(
        "--config",
        metavar="PATH",
        type=input_file,
        default=None,
        help="consumer configuration file (its serve, web, assembly, sampling, scoring and judge "
        f"sections apply; default: $RAGTRACE_CONSUMER_CONFIG; {STDIN_HELP})",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the consumer configuration in force as YAML (each value with its source, "
        "secrets masked) and exit",
    )
    p.add_argument(
        "--history",
        type=int,
        default=10,
        metavar="N",
        help="print the last N traces already in the state file at start (default: %(default)s)",
    )
    add_json_option(
        p,
        "each scored trace",
        stdout_help="each scored trace as one JSON line (JSON Lines, as it is scored, the "
        "--history traces first) on stdout instead of the text (the banner then goes to stderr)",
        file_help="the same JSON Lines to PATH (replaced at start, flushed per line; the text "
        "lines still printed); '-': stdout, as --json",
    )
    p.set_defaults(func=run, setting_flags=keys)


def _named(path: object) -> str:
    """A file as the banner names it: ``<stdin>`` for ``-``."""
    from ragtrace_consumers.config._sources import STDIN_SOURCE

    return STDIN_SOURCE if str(path) == "-" else str(path)


def _access_line(serve: ServeSettings) -> str:
    who = (
        "bearer token required"
        if serve.token is not None
        else "open to anyone who reaches it (--insecure)"
        if serve.insecure
        else "no token (loopback only)"
    )
    return who + (", HTTPS" if serve.tls_cert is not None else ", plain HTTP")


def _line(row: Any) -> str:
    def num(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.2f}"

    parts = [f"trace {row.trace_id}", f"service={row.service}"]
    if row.question_id:
        parts.append(f"question={row.question_id}")
    parts.append(f"recall@{row.k}={num(row.recall)}" if row.k else "recall=n/a")
    parts.append(f"groundedness={num(row.groundedness)}")
    for metric in ("answer_relevancy", "answer_correctness"):
        if metric in row.extra:
            parts.append(f"{metric}={num(row.extra[metric])}")
    parts.append(f"cell={row.cell}")
    text = "  ".join(parts)
    for claim in row.unsupported_claims:
        text += f'\n    not supported: "{claim}"'
    if row.judge_error:
        text += f"\n    judge error: {row.judge_error}"
    for key, what in (("recall_na_reason", "recall n/a"), ("groundedness_na_reason", "unjudged")):
        if row.extra.get(key):
            text += f"\n    {what}: {row.extra[key]}"
    return text


class _Output:
    """Where scored traces go: text lines on stdout, and/or JSON Lines (``--json``)."""

    def __init__(self, target: str | None) -> None:
        self.text = not json_to_stdout(target)
        self._file: TextIO | None = None
        if target is None:
            self._json: TextIO | None = None
        elif json_to_stdout(target):
            self._json = sys.stdout
        else:
            self._file = self._json = open(target, "w", encoding="utf-8")  # noqa: SIM115

    def emit(self, row: Any) -> None:
        # The JSON line first: whoever sees the text line can read the row already.
        if self._json is not None:
            self._json.write(json.dumps(json_safe(row.to_dict()), ensure_ascii=False) + "\n")
            self._json.flush()
        if self.text:
            print(_line(row), flush=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def run(args: argparse.Namespace) -> int:
    from ragtrace.evaluation.labels import InputFileError
    from ragtrace_consumers.commands.listen_errors import report_cannot_listen
    from ragtrace_consumers.config import ConfigError, load_config
    from ragtrace_consumers.demo.run import describe_judge
    from ragtrace_consumers.errors import CannotListen
    from ragtrace_consumers.intake.metrics_endpoint import METRICS_LISTENER
    from ragtrace_consumers.intake.otlp_receiver import RECEIVER_LISTENER
    from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator, describe_results

    ports = {RECEIVER_LISTENER: "--port", METRICS_LISTENER: "--metrics-port"}

    info = sys.stderr if json_to_stdout(args.json) else sys.stdout
    if stdin_used_twice(args.config, args.labels):
        error("serve", "--config and --labels cannot both be '-' (stdin can be read once)")
        return EXIT_BAD_INPUT
    try:
        config = with_flags(load_config(args.config), args, args.setting_flags)
        if args.print_config:
            print(config.to_yaml(), end="")
            return EXIT_OK
        evaluator = EmbeddedEvaluator(config)
    except CannotListen as exc:
        return report_cannot_listen("serve", exc, ports)
    except (ConfigError, InputFileError, ValueError, OSError) as exc:
        error("serve", str(exc))
        return EXIT_BAD_INPUT
    try:
        out = _Output(args.json)
    except OSError as exc:
        error("serve", f"cannot write {args.json}: {exc}")
        return EXIT_FAILURE

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        evaluator.sink.wake()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with evaluator:
            serve = config.serve
            labels = evaluator.labels.questions()
            print(
                f"ragtrace serve: receiving OTLP/HTTP on {evaluator.endpoint}/v1/traces",
                file=info,
                flush=True,
            )
            print(f"  judge:   {describe_judge(evaluator.judge).summary}", file=info)
            print(
                f"  labels:  {len(labels)} labelled questions"
                + (
                    f" from {_named(serve.labels)}"
                    if serve.labels
                    else " (no --labels: recall is not scored)"
                ),
                file=info,
            )
            print(f"  state:   {evaluator.state_path}", file=info)
            print(f"  web:     {evaluator.web_url or 'not served (--no-web)'}", file=info)
            print(f"  metrics: {evaluator.metrics_url or 'not served'}", file=info)
            print(f"  access:  {_access_line(serve)}", file=info)
            print(f"  results: {describe_results(config)}", file=info)
            if serve.phoenix_url is not None:
                print(
                    f"  annotations: to Phoenix at {mask_url(serve.phoenix_url)} (each "
                    "metric on the span it judged, the cell on the root span and the trace, gold "
                    "documents on the retriever)",
                    file=info,
                )
            print(end="", file=info, flush=True)
            rows = evaluator.state.results.all()
            last = rows[-1][0] if rows else 0
            if rows and args.history > 0:
                print(
                    f"  {len(rows)} traces scored earlier; the last {min(len(rows), args.history)}:",
                    file=info,
                    flush=True,
                )
                for _, row in rows[-args.history :]:
                    out.emit(row)
            skipped = evaluator.state.skipped.after(0)
            last_skip = skipped[-1][0] if skipped else 0
            while not stop.is_set():
                evaluator.sink.wait_for_change(1.0)
                for seq, row in evaluator.state.results.all(after_seq=last):
                    out.emit(row)
                    last = seq
                for seq, entry in evaluator.state.skipped.after(last_skip):
                    print(
                        f"  not scored: {entry.trace_id} ({entry.reason}): {entry.detail}",
                        file=info,
                        flush=True,
                    )
                    last_skip = seq
            print("ragtrace serve: stopping", file=info, flush=True)
    except CannotListen as exc:  # the metrics endpoint binds at start
        return report_cannot_listen("serve", exc, ports)
    finally:
        out.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return EXIT_OK
