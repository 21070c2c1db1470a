"""``OTEL_SEMCONV_STABILITY_OPT_IN``: which GenAI conventions the decorators emit, read the way
the OpenTelemetry Python instrumentations read it (opentelemetry-instrumentation's
``_OpenTelemetrySemanticConventionStability``: a comma-separated list, entries stripped, read
once per process).

* default: the names ragtrace has always emitted — the retrieval span ``retrieve``, kind
  INTERNAL, its k as ``gen_ai.request.top_k`` — so dashboards and queries keep working (the
  conventions' transition plan: an instrumentation SHOULD NOT change what it emits by default);
* ``gen_ai_latest_experimental``: the newest GenAI conventions
  (:data:`~ragtrace.semconv.SCHEMA_URL`) — the retrieval span ``retrieval {gen_ai.data_source.id}``,
  kind CLIENT, its k as ``gen_ai.retrieval.top_k`` (``gen_ai.request.top_k`` now means LLM
  sampling), and not the old names.

OpenInference attributes are written in both modes.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Final

__all__ = ["ENV_OPT_IN", "GEN_AI_LATEST_EXPERIMENTAL", "gen_ai_latest_experimental"]

ENV_OPT_IN: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
GEN_AI_LATEST_EXPERIMENTAL: Final = "gen_ai_latest_experimental"


@cache
def gen_ai_latest_experimental() -> bool:
    """Whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` opts in to the newest GenAI conventions (read
    once; tests call ``gen_ai_latest_experimental.cache_clear()`` after changing it)."""
    opt_in = os.environ.get(ENV_OPT_IN, "")
    return GEN_AI_LATEST_EXPERIMENTAL in [s.strip() for s in opt_in.split(",")]
