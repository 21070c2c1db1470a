"""OpenLLMetry (traceloop-sdk) and the Langfuse SDK, each through its real package."""

from __future__ import annotations

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from tests.dialects.kit import assert_known_truth, run_app, scored


def test_traceloop_langchain_gets_the_known_truth(evaluator: EmbeddedEvaluator) -> None:
    """Retriever documents from ``traceloop.entity.output`` (metadata ``doc_id``), the answer
    from the chat span's ``gen_ai.output.messages``."""
    asked = run_app("traceloop_app", evaluator.endpoint, env={"TRACELOOP_TELEMETRY": "false"})
    assert_known_truth(scored(evaluator, asked))


def test_langfuse_observations_get_the_known_truth(evaluator: EmbeddedEvaluator) -> None:
    """``langfuse.observation.type`` retriever/generation; the answer unwrapped from the
    generation's JSON output message."""
    asked = run_app("langfuse_app", evaluator.endpoint)
    assert_known_truth(scored(evaluator, asked))
