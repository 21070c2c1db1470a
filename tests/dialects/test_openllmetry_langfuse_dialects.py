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


def test_langfuse_observe_decorators_get_the_known_truth(evaluator: EmbeddedEvaluator) -> None:
    """``@observe`` on the user's own functions: the query from the retriever's recorded call
    (``{"args": [...], "kwargs": {...}}``), the answer the generation function's return."""
    asked = run_app("langfuse_observe_app", evaluator.endpoint)
    assert_known_truth(scored(evaluator, asked))
    assert evaluator.skipped_traces() == []


def test_traceloop_workflow_and_task_decorators_get_the_known_truth(
    evaluator: EmbeddedEvaluator,
) -> None:
    """``@workflow`` / ``@task(name="retrieve")`` on the user's own functions: the task is a
    retrieval by what it returns (``retrieve.task`` is no ``*.retrieve`` name), its query the
    call record's first argument; the answer from the OpenAI chat span."""
    asked = run_app(
        "traceloop_decorators_app", evaluator.endpoint, env={"TRACELOOP_TELEMETRY": "false"}
    )
    assert_known_truth(scored(evaluator, asked))
    assert evaluator.skipped_traces() == []
