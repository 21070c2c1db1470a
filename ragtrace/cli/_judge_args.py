"""Options shared by the commands that run a judge (``groundedness``, ``calibrate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_judge_arguments", "build_judge", "judge_line", "read_text_arg", "warn"]


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judge",
        choices=("auto", "lexical", "anthropic"),
        default="auto",
        help="lexical: word overlap per sentence, offline; anthropic: a Claude model "
        "(needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is honoured); auto (default): "
        "anthropic when ANTHROPIC_API_KEY is set, else lexical",
    )
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="Claude model for the anthropic judge (default: $RAGTRACE_JUDGE_MODEL, else "
        "claude-haiku-4-5)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="per-request timeout of the anthropic judge (default: 30)",
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        default=3,
        metavar="N",
        help="retries on rate limits, overload, 5xx and timeouts (default: 3)",
    )
    parser.add_argument(
        "--calibration-file",
        metavar="PATH",
        help="where the last calibration's stamp is kept (default: "
        "$RAGTRACE_CALIBRATION_FILE, else ~/.config/ragtrace/calibration.json)",
    )


def build_judge(args: argparse.Namespace) -> Any:
    """The judge the options ask for; ValueError with a readable reason otherwise."""
    from ragtrace.evaluation.judges import make_judge

    options: dict[str, Any] = {}
    if args.judge != "lexical":
        options = {"timeout": args.timeout, "max_retries": args.max_retries}
        if args.model:
            options["model"] = args.model
    return make_judge(args.judge, **options)


def judge_line(info: Any) -> str:
    model = info.model or "none (model-free)"
    return f"judge: {info.name}  model: {model}  prompt sha256: {info.prompt_sha256[:12]}"


_stdin_read_by: list[str] = []


def read_text_arg(option: str, value: str) -> str:
    """``TEXT`` as is, the contents of ``FILE`` for ``@FILE``, or standard input for ``@-``
    (one trailing newline dropped). Only one argument can read stdin."""
    if not value.startswith("@"):
        return value
    if value == "@-":
        if _stdin_read_by:
            raise ValueError(f"{option} @-: stdin was already read by {_stdin_read_by[0]}")
        _stdin_read_by.append(option)
        return sys.stdin.read().removesuffix("\n")
    path = Path(value[1:])
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{option} {value}: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{option} {value}: {path} is not UTF-8 text ({exc.reason})") from None
    return text.removesuffix("\n")


def warn(command: str, message: str) -> None:
    print(f"ragtrace {command}: warning: {message}", file=sys.stderr)
