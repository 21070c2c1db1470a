"""Options shared by the commands that run a judge (``groundedness``, ``calibrate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragtrace.cli._arg_types import positive_int
from ragtrace.evaluation.judges.bounds import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MAX_CONTEXT_CHARS,
    DEFAULT_MAX_PROMPT_TOKENS,
    DEFAULT_MAX_UNITS,
    JudgeLimits,
)
from ragtrace.evaluation.judges.spec import (
    DEFAULT_BUDGET_S,
    DEFAULT_MODELS,
    DEFAULT_TIMEOUT_S,
    ENV_MODEL,
    ENV_OPENAI_BASE_URL,
    ENV_VERTEX_PROJECT,
    ENV_VERTEX_REGION,
    JUDGE_NAMES,
    OUTPUT_MODES,
    JudgeSpec,
)

__all__ = [
    "add_judge_arguments",
    "add_judge_concurrency",
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
        help="lexical: word overlap per sentence, offline; anthropic: Claude on the Anthropic "
        "API (needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is honoured); bedrock: Claude on "
        "Amazon Bedrock (AWS credentials and region from the usual AWS settings); vertex: "
        "Claude on Google Vertex AI (Application Default Credentials); openai: any "
        "OpenAI-compatible endpoint — vLLM, Ollama, llama.cpp, TGI, OpenAI (--base-url, "
        "--model; OPENAI_API_KEY if it needs one); auto (default): anthropic when "
        "ANTHROPIC_API_KEY is set, else lexical",
    )
    defaults = ", ".join(f"{k}: {v}" for k, v in DEFAULT_MODELS.items() if v)
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help=f"the model judge's model (default: ${ENV_MODEL}, else per judge — {defaults}; "
        "the openai judge has none)",
    )
    parser.add_argument(
        "--region",
        metavar="REGION",
        help="bedrock: AWS region (default: $AWS_REGION, $AWS_DEFAULT_REGION, the profile's); "
        f"vertex: Google Cloud region (default: ${ENV_VERTEX_REGION})",
    )
    parser.add_argument(
        "--project",
        metavar="PROJECT",
        help=f"vertex: Google Cloud project (default: ${ENV_VERTEX_PROJECT}, else the "
        "credentials')",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help=f"the model API's base URL, e.g. http://localhost:8000/v1 for a vLLM server "
        f"(default: per judge; openai: ${ENV_OPENAI_BASE_URL}, else OpenAI's)",
    )
    parser.add_argument(
        "--output-mode",
        choices=OUTPUT_MODES,
        default="tools",
        help="openai: how verdicts come back — a forced function call (default), or JSON mode "
        "for servers without tool calling",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"per-request timeout of a model judge (default: {DEFAULT_TIMEOUT_S:g})",
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
    for flag, dest, default, what in (
        ("--max-units", "max_units", DEFAULT_MAX_UNITS, "answer units"),
        ("--max-answer-chars", "max_answer_chars", DEFAULT_MAX_ANSWER_CHARS, "answer characters"),
        (
            "--max-context-chars",
            "max_context_chars",
            DEFAULT_MAX_CONTEXT_CHARS,
            "context characters, all passages together",
        ),
        (
            "--max-prompt-tokens",
            "max_prompt_tokens",
            DEFAULT_MAX_PROMPT_TOKENS,
            "estimated prompt tokens sent to a model judge",
        ),
    ):
        parser.add_argument(
            flag,
            dest=dest,
            type=positive_int,
            default=default,
            metavar="N",
            help=f"most {what} one judgement takes on; beyond it the result is the error "
            f"too_large, not a score (default: {default})",
        )
    parser.add_argument(
        "--calibration-file",
        metavar="PATH",
        help="where the last calibration's stamp is kept (default: "
        "$RAGTRACE_CALIBRATION_FILE, else ~/.config/ragtrace/calibration.json)",
    )


def add_judge_concurrency(parser: argparse._ActionsContainer) -> None:
    """``--concurrency N``: judge calls in flight at once (default 4), for the commands that
    judge many answers or claims."""
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=4,
        metavar="N",
        help="judge calls in flight at once (default: 4)",
    )


def judge_spec(args: argparse.Namespace) -> JudgeSpec:
    """The :class:`JudgeSpec` the options describe; ValueError with a readable reason."""
    return JudgeSpec(
        args.judge,
        model=args.model,
        timeout_s=args.timeout,
        budget_s=args.budget,
        region=getattr(args, "region", None),
        project=getattr(args, "project", None),
        base_url=getattr(args, "base_url", None),
        output_mode=getattr(args, "output_mode", "tools"),
        limits=JudgeLimits(
            max_units=getattr(args, "max_units", DEFAULT_MAX_UNITS),
            max_answer_chars=getattr(args, "max_answer_chars", DEFAULT_MAX_ANSWER_CHARS),
            max_context_chars=getattr(args, "max_context_chars", DEFAULT_MAX_CONTEXT_CHARS),
            max_prompt_tokens=getattr(args, "max_prompt_tokens", DEFAULT_MAX_PROMPT_TOKENS),
        ),
    )


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
