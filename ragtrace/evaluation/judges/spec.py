"""What judge to run, parsed once: :class:`JudgeSpec` (name, provider, model, connection, limits).

Every source of judge settings — the CLI options (``ragtrace.cli._judge_args``), the consumer
configuration's ``judge`` section (``ragtrace_consumers.scoring.judging.spec_from_settings``) — builds
one ``JudgeSpec``; :func:`~ragtrace.evaluation.judges.make_judge` turns it into a judge. The
rules that depend on the judge live here only: which names exist (:data:`JUDGE_NAMES`), what
``auto`` means, that a model-free judge has no model or provider, and each provider's default
model and required settings (:meth:`JudgeSpec.resolved`).

A model judge's name is its provider — the API the model is reached through
(:data:`PROVIDERS`):

- ``anthropic``: the Anthropic API. Key: explicit > ``ANTHROPIC_API_KEY``; URL: explicit >
  ``ANTHROPIC_BASE_URL`` (both read by the official client).
- ``bedrock``: Claude on Amazon Bedrock (``anthropic.AnthropicBedrock``, SigV4-signed). Region:
  explicit > ``AWS_REGION`` > ``AWS_DEFAULT_REGION`` > the AWS profile's; credentials: the AWS
  chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE``,
  an instance role), or a Bedrock API key (explicit ``api_key`` > ``AWS_BEARER_TOKEN_BEDROCK``).
- ``vertex``: Claude on Google Vertex AI (``anthropic.AnthropicVertex``). Region: explicit >
  ``CLOUD_ML_REGION``; project: explicit > ``ANTHROPIC_VERTEX_PROJECT_ID`` > the credentials';
  token: explicit ``api_key`` (an OAuth access token) > Application Default Credentials.
- ``openai``: any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, llama.cpp
  server, TGI). URL: explicit > ``OPENAI_BASE_URL`` > OpenAI's; key: explicit >
  ``OPENAI_API_KEY`` > none (a placeholder is sent: local servers ask for none). It has no
  default model.

``provider`` may be given instead of the name (``JudgeSpec("auto", provider="bedrock")`` is
``JudgeSpec("bedrock")``), so a settings file can say either. Model: explicit ``model`` >
``RAGTRACE_JUDGE_MODEL`` > the provider's :data:`DEFAULT_MODELS` entry.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .bounds import JudgeLimits

__all__ = [
    "DEFAULT_BUDGET_S",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "DEFAULT_MODELS",
    "DEFAULT_TIMEOUT_S",
    "ENV_API_KEY",
    "ENV_MODEL",
    "ENV_OPENAI_API_KEY",
    "ENV_OPENAI_BASE_URL",
    "ENV_VERTEX_PROJECT",
    "ENV_VERTEX_REGION",
    "GEN_AI_PROVIDER_NAMES",
    "JUDGE_NAMES",
    "OUTPUT_MODES",
    "PROVIDERS",
    "JudgeSpec",
    "configured_model",
]

PROVIDERS: tuple[str, ...] = ("anthropic", "bedrock", "vertex", "openai")
"""The APIs a model judge reaches its model through (module doc)."""
JUDGE_NAMES: tuple[str, ...] = ("auto", "lexical", *PROVIDERS)
"""Every judge name (CLI ``--judge`` choices, config ``judge.name``). ``auto``: ``anthropic``
when an Anthropic API key is available, else ``lexical``."""
OUTPUT_MODES: tuple[str, ...] = ("tools", "json")
"""How the ``openai`` judge gets structured output: a forced function call, or (for servers
without tool calling) JSON mode with the schema in the instructions."""
GEN_AI_PROVIDER_NAMES: Mapping[str, str] = {
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "vertex": "gcp.vertex_ai",
    "openai": "openai",
}
"""Each provider's OpenTelemetry ``gen_ai.provider.name``."""
DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_MODELS: Mapping[str, str | None] = {
    "anthropic": DEFAULT_MODEL,
    # Bedrock serves Claude Haiku 4.5 through inference profiles; ``global.`` routes anywhere.
    "bedrock": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
    "vertex": "claude-haiku-4-5@20251001",
    "openai": None,  # an arbitrary endpoint has no sensible default
}
ENV_MODEL = "RAGTRACE_JUDGE_MODEL"
ENV_API_KEY = "ANTHROPIC_API_KEY"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
ENV_VERTEX_REGION = "CLOUD_ML_REGION"
ENV_VERTEX_PROJECT = "ANTHROPIC_VERTEX_PROJECT_ID"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_BUDGET_S = 60.0
DEFAULT_MAX_TOKENS = 4096
_MODEL_FREE = frozenset({"lexical"})


@dataclass(frozen=True)
class JudgeSpec:
    """One judge's identity, connection and limits.

    ``timeout_s`` bounds one HTTP request; ``budget_s`` bounds a whole judgement — every
    request, retry and back-off wait together (the judge's retry owner,
    :class:`~ragtrace.evaluation.judges.model.retry.CallBudget`, never exceeds it; the consumers size
    their lease from it). ``model`` None means the provider's default (module doc).
    ``api_key`` is the provider's credential (Bedrock API key, Vertex access token, …);
    ``region`` serves ``bedrock`` and ``vertex``, ``project`` ``vertex``, ``base_url`` every
    provider, ``output_mode`` ``openai``. ``limits`` bounds what one groundedness judgement
    takes on, for every judge (:mod:`~ragtrace.evaluation.judges.bounds`).
    """

    name: str = "auto"
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    budget_s: float = DEFAULT_BUDGET_S
    max_tokens: int = DEFAULT_MAX_TOKENS
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    provider: str | None = None
    region: str | None = None
    project: str | None = None
    output_mode: str = "tools"
    limits: JudgeLimits = field(default_factory=JudgeLimits)

    def __post_init__(self) -> None:
        if self.name not in JUDGE_NAMES:
            raise ValueError(
                f"unknown judge {self.name!r}; expected one of {', '.join(JUDGE_NAMES)}"
            )
        if self.provider is not None:
            if self.provider not in PROVIDERS:
                raise ValueError(
                    f"unknown judge provider {self.provider!r}; expected one of "
                    f"{', '.join(PROVIDERS)}"
                )
            if self.name in PROVIDERS and self.name != self.provider:
                raise ValueError(
                    f"judge {self.name!r} conflicts with provider {self.provider!r}: "
                    "give one, or the same"
                )
        elif self.name in PROVIDERS:
            object.__setattr__(self, "provider", self.name)
        if self.model is not None and not self.model.strip():
            raise ValueError("model must be a non-empty model ID")
        for key in ("region", "project", "base_url"):
            value = getattr(self, key)
            if value is not None and not value.strip():
                raise ValueError(f"{key} must be non-empty when given")
        for key in ("timeout_s", "budget_s"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{key} must be a finite number > 0, got {value!r}")
        if isinstance(self.max_tokens, bool) or self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be an int > 0, got {self.max_tokens!r}")
        if self.output_mode not in OUTPUT_MODES:
            raise ValueError(
                f"output_mode must be one of {', '.join(OUTPUT_MODES)}, got {self.output_mode!r}"
            )

    @property
    def model_free(self) -> bool:
        """The judge calls no model (after :meth:`resolved`: ``lexical``)."""
        return self.name in _MODEL_FREE

    def resolved(self, environ: Mapping[str, str] | None = None) -> JudgeSpec:
        """The concrete spec: ``auto`` decided (by ``provider``, else by the Anthropic API
        key), the model filled in for a model judge (module doc), model and provider dropped
        for a model-free one. ValueError for the anthropic judge without an API key and the
        openai judge without a model."""
        env = os.environ if environ is None else environ
        name = self.name
        if name == "auto":
            has_key = bool(self.api_key or env.get(ENV_API_KEY))
            name = self.provider or ("anthropic" if has_key else "lexical")
        if name in _MODEL_FREE:
            return replace(self, name=name, model=None, provider=None)
        if name == "anthropic" and not (self.api_key or env.get(ENV_API_KEY)):
            raise ValueError(
                f"the anthropic judge needs an API key: set {ENV_API_KEY} "
                "(or use --judge lexical offline)"
            )
        model = configured_model(self.model, env, provider=name)
        if model is None:
            raise ValueError(
                f"the {name} judge needs a model: give --model (config judge.model) "
                f"or set {ENV_MODEL}, e.g. the name your server serves"
            )
        return replace(self, name=name, provider=name, model=model)


def configured_model(
    model: str | None,
    environ: Mapping[str, str] | None = None,
    *,
    provider: str = "anthropic",
) -> str | None:
    """A model judge's model: ``model`` > ``RAGTRACE_JUDGE_MODEL`` > the provider's default
    (None for ``openai``, which has none)."""
    env = os.environ if environ is None else environ
    return model or env.get(ENV_MODEL, "").strip() or DEFAULT_MODELS[provider]
