"""``ragtrace consume``: the Kafka consumer-group service that scores RAG traces online.

Configured by one YAML file (``--config`` or ``$RAGTRACE_CONSUMER_CONFIG``; the documented
example is ``consumers/ragtrace_consumers/config/ragtrace-consumer.yaml``) plus ``RAGTRACE_<SECTION>_<KEY>``
environment variables. SIGTERM or Ctrl-C drains the traces being scored, commits and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING

from ragtrace.cli._arg_types import STDIN_HELP, input_file
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.cli.output import add_json_option, emit_json, error, json_to_stdout

if TYPE_CHECKING:
    from ragtrace_consumers.config import ConsumerConfig

__all__ = ["register", "run"]

_DESCRIPTION = """\
Read spans from the collector's Kafka topic as one member of a consumer group, assemble each
trace, score recall@k (traces that match a labelled question: load labels with `ragtrace labels
load`) and groundedness (the LLM judge), and write the scores back into the same trace as an
evaluation span, plus OTel metrics, through the collector's evaluation receiver.

Run more replicas with the same group to scale out. Every setting has a default; see
`ragtrace consume --print-config` and the documented example file for each key. Environment:
RAGTRACE_<SECTION>_<KEY> overrides a key (e.g. RAGTRACE_KAFKA_BOOTSTRAP_SERVERS), and the
Anthropic judge reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL).
"""


def register(subparsers: Subparsers) -> None:
    p = add_command(
        subparsers,
        "consume",
        help="score traces from Kafka (the consumer-group service)",
        description=_DESCRIPTION,
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        type=input_file,
        default=None,
        help=f"configuration file (default: $RAGTRACE_CONSUMER_CONFIG, else defaults; {STDIN_HELP})",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the effective configuration as YAML (secrets masked), each value followed by "
        "its source (default, the file, or the environment variable), and exit",
    )
    add_json_option(
        p,
        "the effective configuration of --print-config (secrets masked; the running "
        "consumer's machine output is its evaluation spans and metrics)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="log level on stderr (default: %(default)s)",
    )
    p.set_defaults(func=run)


def _dump(cfg: ConsumerConfig) -> str:
    """The effective configuration as YAML, secrets masked, each value's source beside it."""
    return cfg.to_yaml()


def run(args: argparse.Namespace) -> int:
    if args.json is not None and not args.print_config:
        error("consume", "--json goes with --print-config (the effective configuration as JSON)")
        return EXIT_BAD_INPUT
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        from ragtrace_consumers.config import ConfigError, load_config
    except ImportError as exc:
        error(
            "consume",
            f"{exc}: install the consumer extra: pip install ./consumers (the ragtrace-consumers distribution)",
        )
        return EXIT_BAD_INPUT
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        error("consume", str(exc))
        return EXIT_BAD_INPUT
    if args.print_config:
        if args.json is not None and not emit_json(
            "consume", args.json, {"source": cfg.source, **cfg.to_dict(redact=True)}
        ):
            return EXIT_FAILURE
        if not json_to_stdout(args.json):
            print(_dump(cfg), end="")
        return EXIT_OK

    from ragtrace_consumers.commands.listen_errors import report_cannot_listen
    from ragtrace_consumers.config import env_var
    from ragtrace_consumers.errors import CannotListen, DependencyUnavailable
    from ragtrace_consumers.runtime.kafka_service import build_service
    from ragtrace_consumers.telemetry.health import HEALTH_LISTENER

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger("ragtrace.consume").info("signal %d: draining and stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        service = build_service(cfg)
    except CannotListen as exc:
        choose = f"health.port, ${env_var('health', 'port')}"
        return report_cannot_listen("consume", exc, {HEALTH_LISTENER: choose})
    except DependencyUnavailable as exc:  # waited health.startup_wait_s: one line, no traceback
        error("consume", str(exc))
        return EXIT_UNAVAILABLE
    except ValueError as exc:  # e.g. the anthropic judge without an API key
        error("consume", str(exc))
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - e.g. no Kafka broker / Redis reachable
        error("consume", f"cannot start: {exc!r}")
        return EXIT_UNAVAILABLE
    service.run(stop)
    return EXIT_OK
