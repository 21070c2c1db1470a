"""The ``ragtrace`` console script: the offline commands of this package, plus the commands other
distributions register under the ``ragtrace.commands`` entry-point group (the consumer service adds
``demo``, ``labels``, ``consume``, ``serve`` and ``inspect``), so this package never imports them.

Each command module exposes ``register(subparsers) -> None``, which adds its parser and sets
``func`` (``Callable[[argparse.Namespace], int]``) as the parser default. Heavy imports (Kafka,
Redis, Anthropic) happen inside ``func`` so ``ragtrace --help`` works on the core install.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import NoReturn

__all__ = [
    "COMMAND_GROUP",
    "EXIT_BROKEN_PIPE",
    "SERVICE_COMMANDS",
    "SERVICE_DISTRIBUTION",
    "build_parser",
    "main",
]

# Order is the order shown in --help; plugged-in commands follow in their distribution's order.
_COMMAND_MODULES: tuple[str, ...] = (
    "ragtrace.cli.eval",
    "ragtrace.cli.compare",
    "ragtrace.cli.groundedness",
    "ragtrace.cli.answer",
    "ragtrace.cli.calibrate",
    "ragtrace.cli.detect_eval",
)

COMMAND_GROUP = "ragtrace.commands"
"""Entry-point group whose objects are ``register(subparsers)`` functions of further commands."""

SERVICE_DISTRIBUTION = "ragtrace-consumers"
"""The distribution that registers the service commands."""

SERVICE_COMMANDS: tuple[str, ...] = ("demo", "labels", "consume", "serve", "inspect")
"""Commands of :data:`SERVICE_DISTRIBUTION`: without it they still parse, and say what to
install instead of argparse's "invalid choice"."""


def _not_installed(command: str) -> str:
    return (
        f"the {command!r} command comes with the {SERVICE_DISTRIBUTION} package, which is not "
        f"installed: pip install {SERVICE_DISTRIBUTION} (from a source checkout: pip install "
        "./consumers)"
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ragtrace")
    except Exception:  # noqa: BLE001 - not installed as a distribution (a source checkout)
        from ragtrace._version import __version__

        return __version__


_JSON_HINT = " (--json takes no PATH: use --json-file PATH)"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error for the old ``--json=PATH`` form gives the hint the
    ``--json PATH`` form gets (every subcommand's parser is of this class)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument --json: ignored explicit argument"):
            message += _JSON_HINT
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    from ragtrace.cli._logging import LOG_FORMATS, default_log_format

    parser = _Parser(
        prog="ragtrace",
        description="Evaluate retrieval-augmented generation: recall@k and groundedness, "
        "offline on labelled sets and online on live traces.",
    )
    parser.add_argument("--version", action="version", version=f"ragtrace {_version()}")
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default_log_format(),
        help="log records on stderr as text or one JSON object per line "
        "(default: $RAGTRACE_LOG_FORMAT or text)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for entry in entry_points(group=COMMAND_GROUP):
        if entry.name not in subparsers.choices:
            try:
                register = entry.load()
            except ImportError:  # registered, but its package is gone (a partial uninstall)
                continue
            register(subparsers)
    for name in SERVICE_COMMANDS:
        if name not in subparsers.choices:
            stub = subparsers.add_parser(
                name, add_help=False, help=f"(not installed: pip install {SERVICE_DISTRIBUTION})"
            )
            stub.set_defaults(func=None, missing_command=name)
    return parser


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away (``| head``)."""


def main(argv: Sequence[str] | None = None) -> int:
    from ragtrace.masking import install_log_masking, register_environment_secrets

    install_log_masking()  # before anything can log: no credential in any log line
    register_environment_secrets(os.environ)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    missing = getattr(args, "missing_command", None)
    if missing is not None:
        from ragtrace.cli.exit_codes import EXIT_BAD_INPUT
        from ragtrace.cli.output import error

        error(missing, _not_installed(missing))
        return EXIT_BAD_INPUT
    if extra:
        given = sys.argv[1:] if argv is None else list(argv)
        hint = _JSON_HINT if "--json" in given else ""
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if args.log_format == "json":
        from ragtrace.cli._logging import configure_logging

        # A command's own --log-level (consume) applies to the JSON handler too.
        configure_logging("json", getattr(args, "log_level", None) or "INFO")
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader closed the pipe (`ragtrace eval ... | head -1`): stop quietly. Point stdout
        # at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
