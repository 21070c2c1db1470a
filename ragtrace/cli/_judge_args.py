"""Options shared by the commands that run a judge (``groundedness``, ``calibrate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragtrace.evaluation.judges.spec import (
    DEFAULT_BUDGET_S,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    ENV_MODEL,
    JUDGE_NAMES,
    JudgeSpec,
)

__all__ = [
    "add_judge_arguments",
    "build_judge",
    "judge_line",
    "judge_spec",
    "read_text_arg",
    "warn",
]


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judge",
        choices=JUDGE_NAMES,
        default="auto",
        help="lexical: word overlap per sentence, offline; anthropic: a Claude model "
        "(needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is honoured); auto (default): "
        "anthropic when ANTHROPIC_API_KEY is set, else lexical",
    )
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help=f"Claude model for the anthropic judge (default: ${ENV_MODEL}, else {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"per-request timeout of the anthropic judge (default: {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help="most time one judgement may take, requests and retries (on rate limits, "
        "overload, 5xx and timeouts, waiting what retry-after asks) included "
        f"(default: {DEFAULT_BUDGET_S:g})",
    )
    parser.add_argument(
        "--calibration-file",
        metavar="PATH",
        help="where the last calibration's stamp is kept (default: "
        "$RAGTRACE_CALIBRATION_FILE, else ~/.config/ragtrace/calibration.json)",
    )


def judge_spec(args: argparse.Namespace) -> JudgeSpec:
    """The :class:`JudgeSpec` the options describe; ValueError with a readable reason."""
    return JudgeSpec(args.judge, model=args.model, timeout_s=args.timeout, budget_s=args.budget)


def build_judge(args: argparse.Namespace) -> Any:
    """The judge the options ask for; ValueError with a readable reason otherwise."""
    from ragtrace.evaluation.judges import make_judge

    return make_judge(judge_spec(args))


def judge_line(info: Any, served_model: str | None = None) -> str:
    """The judge's identity; ``served_model`` (what the API reported) when it differs."""
    model = info.model or "none (model-free)"
    if served_model and served_model != info.model:
        model += f" (served {served_model})"
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
