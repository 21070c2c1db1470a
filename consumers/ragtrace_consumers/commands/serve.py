"""``ragtrace serve``: the embedded evaluator — one process, no Kafka, no Redis.

Applications export spans over OTLP/HTTP to it (port 4318, loopback by default); it assembles,
samples, scores and writes back exactly as ``ragtrace consume`` does, keeps the judge cache,
the idempotency marks and every scored trace in a local SQLite file, serves Prometheus metrics
on ``/metrics`` and prints each trace as it is scored. Ctrl-C (or SIGTERM) stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any, TextIO

from ragtrace.cli._arg_types import STDIN_HELP, input_file, positive_int, stdin_used_twice
from ragtrace.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    add_json_option,
    error,
    json_safe,
    json_to_stdout,
)
from ragtrace.evaluation.judges.spec import JUDGE_NAMES
from ragtrace.masking import mask_url, register_secret

__all__ = ["ENV_LABELS", "register", "run"]

ENV_LABELS = "RAGTRACE_LABELS"
"""Labels file (JSON Lines) used when ``--labels`` is not given."""

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


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be within 0..65535, got {value}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ragtrace_consumers.intake.otlp_receiver import DEFAULT_HOST, DEFAULT_PORT

    p = subparsers.add_parser(
        "serve",
        help="run the embedded evaluator (OTLP/HTTP in, scores out; no Kafka/Redis)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to listen on (default: %(default)s; 0.0.0.0 for every interface)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help="OTLP/HTTP port (default: %(default)s; 0 picks a free one)",
    )
    p.add_argument(
        "--labels",
        metavar="PATH",
        type=input_file,
        default=None,
        help=f"labelled questions, JSON Lines (default: ${ENV_LABELS}; none: recall is not "
        f"scored; {STDIN_HELP})",
    )
    p.add_argument(
        "--state",
        metavar="PATH",
        default=None,
        help="SQLite state file (default: $RAGTRACE_STATE, else "
        "~/.local/state/ragtrace/embedded.sqlite3)",
    )
    p.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        default=None,
        help="send evaluation spans and metrics to this OTLP/HTTP base URL "
        "(default: $RAGTRACE_EXPORT_OTLP_ENDPOINT; unset: kept local)",
    )
    p.add_argument(
        "--otlp-signals",
        choices=("all", "traces", "metrics"),
        default="all",
        help="what goes to --otlp-endpoint: evaluation results (spans and "
        "gen_ai.evaluation.result log records, as export.results_as says) and metrics (all: "
        "an OpenTelemetry Collector), evaluation spans only (traces; a trace backend such as "
        "Phoenix, Jaeger or Tempo, which take no /v1/logs or /v1/metrics) or metrics only "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--phoenix-url",
        metavar="URL",
        default=None,
        help="also post every score to this Arize Phoenix as annotations (its evaluation "
        "columns: each metric on the span it judged, the cell on the root span and the trace, "
        "gold documents on the retriever), e.g. http://127.0.0.1:6006",
    )
    p.add_argument(
        "--phoenix-evaluation-spans",
        action="store_true",
        help="with --phoenix-url: still send evaluation spans to --otlp-endpoint (by default "
        "they are not: Phoenix shows the annotations instead)",
    )
    p.add_argument(
        "--metrics-host",
        default=DEFAULT_HOST,
        help="address of the Prometheus /metrics endpoint (default: %(default)s)",
    )
    p.add_argument(
        "--metrics-port",
        type=_port,
        default=9464,
        help="port of the Prometheus /metrics endpoint (default: %(default)s; 0 picks a free one)",
    )
    p.add_argument("--no-metrics", action="store_true", help="serve no /metrics endpoint")
    p.add_argument(
        "--token",
        metavar="TOKEN",
        default=None,
        help="bearer token every request (OTLP, /metrics, every route) must carry as "
        "'Authorization: Bearer TOKEN'; required with a --host or --metrics-host beyond "
        "loopback (default: the config's serve.token, $RAGTRACE_SERVE_TOKEN: prefer it, a "
        "command line is visible to other users)",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="allow listening beyond loopback without a token (default: serve.insecure, false)",
    )
    p.add_argument(
        "--tls-cert",
        metavar="PEM",
        default=None,
        help="serve HTTPS with this certificate (chain) (default: serve.tls_cert; none: HTTP)",
    )
    p.add_argument(
        "--tls-key",
        metavar="PEM",
        default=None,
        help="private key of --tls-cert (default: serve.tls_key; none: inside --tls-cert)",
    )
    p.add_argument(
        "--judge",
        choices=JUDGE_NAMES,
        default=None,
        help="auto: anthropic when ANTHROPIC_API_KEY is set, else lexical "
        "(default: the config's judge.name, auto)",
    )
    p.add_argument(
        "--config",
        metavar="PATH",
        type=input_file,
        default=None,
        help="consumer configuration file (its assembly, sampling, scoring and judge "
        f"sections apply; default: $RAGTRACE_CONSUMER_CONFIG; {STDIN_HELP})",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the consumer configuration in force as YAML (each value with its source, "
        "secrets masked) and exit",
    )
    p.add_argument(
        "--no-web",
        action="store_true",
        help="serve no web view (default: overview, traces and labelling under /ui/ on the "
        "OTLP address; the config's web.enabled)",
    )
    p.add_argument(
        "--trace-url",
        metavar="TEMPLATE",
        default=None,
        help="link each trace page to your trace backend: a URL with {trace_id} "
        "(and optionally {span_id}), e.g. http://127.0.0.1:16686/trace/{trace_id} "
        "(default: the config's web.trace_url_template)",
    )
    p.add_argument(
        "--history",
        type=int,
        default=10,
        metavar="N",
        help="print the last N traces already in the state file at start (default: %(default)s)",
    )
    p.add_argument(
        "--max-pending-traces",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="traces held for scoring at most; a request that would exceed it is "
        "refused with 503 + Retry-After (default: %(default)s)",
    )
    p.add_argument(
        "--max-pending-mib",
        type=positive_int,
        default=256,
        metavar="MIB",
        help="span bytes held for scoring at most, in MiB (default: %(default)s)",
    )
    add_json_option(
        p,
        "each scored trace",
        stdout_help="each scored trace as one JSON line (JSON Lines, as it is scored, the "
        "--history traces first) on stdout instead of the text (the banner then goes to stderr)",
        file_help="the same JSON Lines to PATH (replaced at start, flushed per line; the text "
        "lines still printed); '-': stdout, as --json",
    )
    p.set_defaults(func=run)


def _with_access_flags(config: Any, args: argparse.Namespace) -> Any:
    """``config`` with the serve section's keys the flags give (a flag wins over the setting)."""
    given = {
        key: value
        for key, value in (
            ("token", args.token),
            ("insecure", args.insecure),
            ("tls_cert", args.tls_cert),
            ("tls_key", args.tls_key),
        )
        if value is not None
    }
    if args.token is not None:
        register_secret(args.token)
    return config.replace(serve=given) if given else config


def _named(path: object) -> str:
    """A file as the banner names it: ``<stdin>`` for ``-``."""
    from ragtrace_consumers.config._sources import STDIN_SOURCE

    return STDIN_SOURCE if str(path) == "-" else str(path)


def _access_line(settings: Any) -> str:
    who = (
        "bearer token required"
        if settings.token is not None
        else "open to anyone who reaches it (--insecure)"
        if settings.insecure
        else "no token (loopback only)"
    )
    return who + (", HTTPS" if settings.tls_cert is not None else ", plain HTTP")


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
    from ragtrace_consumers.config import ConfigError, load_config
    from ragtrace_consumers.demo.run import describe_judge
    from ragtrace_consumers.runtime.embedded import (
        ENV_OTLP_ENDPOINT,
        EmbeddedEvaluator,
        EmbeddedSettings,
        default_state_path,
        describe_results,
    )

    info = sys.stderr if json_to_stdout(args.json) else sys.stdout
    if stdin_used_twice(args.config, args.labels):
        error("serve", "--config and --labels cannot both be '-' (stdin can be read once)")
        return EXIT_BAD_INPUT
    try:
        config = load_config(args.config)
        if args.judge is not None:
            config = config.replace(judge={"name": args.judge})
        config = _with_access_flags(config, args)
        if args.no_web:
            config = config.replace(web={"enabled": False})
        if args.trace_url is not None:
            config = config.replace(web={"trace_url_template": args.trace_url})
        if args.print_config:
            print(config.to_yaml(), end="")
            return EXIT_OK
        access = config.serve
        settings = EmbeddedSettings(
            host=args.host,
            port=args.port,
            state_path=args.state or default_state_path(),
            labels_path=args.labels or os.environ.get(ENV_LABELS) or None,
            otlp_endpoint=args.otlp_endpoint or os.environ.get(ENV_OTLP_ENDPOINT) or None,
            otlp_signals=args.otlp_signals,
            phoenix_endpoint=args.phoenix_url,
            phoenix_evaluation_spans=args.phoenix_evaluation_spans,
            metrics_host=args.metrics_host,
            metrics_port=None if args.no_metrics else args.metrics_port,
            max_pending_traces=args.max_pending_traces,
            max_pending_bytes=args.max_pending_mib * 1024 * 1024,
            token=None if access.token is None else access.token.get_secret_value(),
            tls_cert=access.tls_cert,
            tls_key=access.tls_key,
            insecure=access.insecure,
        )
        evaluator = EmbeddedEvaluator(settings, config=config)
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
                    f" from {_named(settings.labels_path)}"
                    if settings.labels_path
                    else " (no --labels: recall is not scored)"
                ),
                file=info,
            )
            print(f"  state:   {settings.state_path}", file=info)
            print(f"  web:     {evaluator.web_url or 'not served (--no-web)'}", file=info)
            print(f"  metrics: {evaluator.metrics_url or 'not served'}", file=info)
            print(f"  access:  {_access_line(settings)}", file=info)
            print(f"  results: {describe_results(settings, config)}", file=info)
            if settings.phoenix_endpoint is not None:
                print(
                    f"  annotations: to Phoenix at {mask_url(settings.phoenix_endpoint)} (each "
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
    finally:
        out.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return EXIT_OK
