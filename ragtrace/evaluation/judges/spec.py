"""What judge to run, parsed once: :class:`JudgeSpec` (name, model, time limits).

Every source of judge settings — the CLI options (``ragtrace.cli._judge_args``), the consumer
configuration's ``judge`` section (``ragtrace_consumers.judging.spec_from_settings``) — builds
one ``JudgeSpec``; :func:`~ragtrace.evaluation.judges.make_judge` turns it into a judge. The
rules that depend on the judge live here only: which names exist (:data:`JUDGE_NAMES`), what
``auto`` means, and that a model-free judge has no model (:meth:`JudgeSpec.resolved`).

Model: explicit ``model`` > ``RAGTRACE_JUDGE_MODEL`` > :data:`DEFAULT_MODEL`. API key and base
URL: explicit > ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL`` (read by the official client).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

__all__ = [
    "DEFAULT_BUDGET_S",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT_S",
    "ENV_API_KEY",
    "ENV_MODEL",
    "JUDGE_NAMES",
    "JudgeSpec",
    "configured_model",
]

JUDGE_NAMES: tuple[str, ...] = ("auto", "lexical", "anthropic")
"""Every judge name (CLI ``--judge`` choices, config ``judge.name``). ``auto``: ``anthropic``
when an API key is available, else ``lexical``."""
DEFAULT_MODEL = "claude-haiku-4-5"
ENV_MODEL = "RAGTRACE_JUDGE_MODEL"
ENV_API_KEY = "ANTHROPIC_API_KEY"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_BUDGET_S = 60.0
DEFAULT_MAX_TOKENS = 4096
_MODEL_FREE = frozenset({"lexical"})


@dataclass(frozen=True)
class JudgeSpec:
    """One judge's identity and limits.

    ``timeout_s`` bounds one HTTP request; ``budget_s`` bounds a whole judgement — every
    request, retry and back-off wait together (the judge's retry owner,
    :class:`~ragtrace.evaluation.judges.retry.CallBudget`, never exceeds it; the consumers size
    their lease from it). ``model`` None means the default for the judge (see module doc).
    """

    name: str = "auto"
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    budget_s: float = DEFAULT_BUDGET_S
    max_tokens: int = DEFAULT_MAX_TOKENS
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None

    def __post_init__(self) -> None:
        if self.name not in JUDGE_NAMES:
            raise ValueError(
                f"unknown judge {self.name!r}; expected one of {', '.join(JUDGE_NAMES)}"
            )
        if self.model is not None and not self.model.strip():
            raise ValueError("model must be a non-empty model ID")
        for key in ("timeout_s", "budget_s"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{key} must be a finite number > 0, got {value!r}")
        if isinstance(self.max_tokens, bool) or self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be an int > 0, got {self.max_tokens!r}")

    @property
    def model_free(self) -> bool:
        """The judge calls no model (after :meth:`resolved`: ``lexical``)."""
        return self.name in _MODEL_FREE

    def resolved(self, environ: Mapping[str, str] | None = None) -> JudgeSpec:
        """The concrete spec: ``auto`` decided by the API key, the model filled in for a model
        judge (module doc) and dropped for a model-free one. ValueError for the anthropic
        judge without an API key."""
        env = os.environ if environ is None else environ
        has_key = bool(self.api_key or env.get(ENV_API_KEY))
        name = self.name
        if name == "auto":
            name = "anthropic" if has_key else "lexical"
        if name in _MODEL_FREE:
            return replace(self, name=name, model=None)
        if not has_key:
            raise ValueError(
                f"the {name} judge needs an API key: set {ENV_API_KEY} "
                "(or use --judge lexical offline)"
            )
        return replace(self, name=name, model=configured_model(self.model, env))


def configured_model(model: str | None, environ: Mapping[str, str] | None = None) -> str:
    """A model judge's model: ``model`` > ``RAGTRACE_JUDGE_MODEL`` > :data:`DEFAULT_MODEL`."""
    env = os.environ if environ is None else environ
    return model or env.get(ENV_MODEL, "").strip() or DEFAULT_MODEL
