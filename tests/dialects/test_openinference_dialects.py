"""LangChain and LlamaIndex through the real OpenInference instrumentors."""

from __future__ import annotations

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from tests.dialects.apps import corpus
from tests.dialects.kit import assert_known_truth, run_app, scored


@pytest.mark.parametrize("mode", ["llm", "chat"])
def test_langchain_chain_gets_the_known_truth(evaluator: EmbeddedEvaluator, mode: str) -> None:
    """IDs from ``Document.metadata["id"]``; the answer unwrapped from LLMResult JSON."""
    asked = run_app("langchain_app", evaluator.endpoint, mode)
    assert_known_truth(scored(evaluator, asked))


def test_langchain_documents_without_ids_report_recall_na_with_a_reason(
    evaluator: EmbeddedEvaluator,
) -> None:
    asked = run_app("langchain_app", evaluator.endpoint, "noids")
    results = scored(evaluator, asked)
    for q, r in results.items():
        assert r.recall is None, q  # never a silent 0.0
        assert r.retrieved and all(i.startswith("sha256:") for i in r.retrieved)
        assert str(r.extra["recall_na_reason"]).endswith(
            "their IDs are content hashes, which cannot match gold chunk IDs"
        )
        assert r.groundedness == corpus.EXPECTED[q][2]
        # No recall to place it: an answer judged not grounded still says so.
        grounded = corpus.EXPECTED[q][2] >= 0.8
        assert r.cell == ("unlabelled" if grounded else "unlabelled_not_grounded")


@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_llamaindex_query_engine_gets_the_known_truth(
    evaluator: EmbeddedEvaluator, mode: str
) -> None:
    """Streaming: the answer is on the inner ``stream_complete`` span, not the outer one."""
    asked = run_app("llamaindex_app", evaluator.endpoint, mode)
    results = scored(evaluator, asked)
    assert_known_truth(results)
