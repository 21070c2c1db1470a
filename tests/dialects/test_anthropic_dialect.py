"""The OTel GenAI conventions as the Anthropic instrumentation emits them:
opentelemetry-instrumentation-anthropic (OpenLLMetry's package: the only Anthropic
instrumentation published under that name) over the real ``anthropic`` client against the
wire-level fake Anthropic API, exported over OTLP to the evaluator."""

from __future__ import annotations

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from tests.dialects.apps import corpus
from tests.dialects.apps.anthropic_app import QUERY_PREFIX
from tests.dialects.kit import assert_known_truth, run_app, scored


def test_anthropic_chat_spans_get_the_known_truth(evaluator: EmbeddedEvaluator) -> None:
    asked = run_app("anthropic_app", evaluator.endpoint)
    results = scored(evaluator, asked)
    assert_known_truth(results, query_prefix=QUERY_PREFIX)
    for q, r in results.items():
        # Labelled through the question ID on the app's own root span: the retrieval query
        # (prefixed) never equals the labelled text.
        assert r.matched_by == ("question_id" if corpus.EXPECTED[q][0] else None)
        assert r.judge_error is None
