"""OpenTelemetry GenAI conventions: opentelemetry-instrumentation-openai-v2 over the real
``openai`` client (wire-level fake API) and an app-recorded GenAI retrieval span."""

from __future__ import annotations

from ragtrace.consumers.embedded import EmbeddedEvaluator
from tests.dialects.apps import corpus
from tests.dialects.apps.genai_app import QUERY_PREFIX
from tests.dialects.kit import assert_known_truth, run_app, scored

LATEST_SPAN_CONTENT = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                       "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}


def test_openai_v2_spans_get_the_known_truth_labelled_by_the_apps_own_root_span(
        evaluator: EmbeddedEvaluator) -> None:
    asked = run_app("genai_app", evaluator.endpoint, env=LATEST_SPAN_CONTENT)
    results = scored(evaluator, asked)
    assert_known_truth(results, query_prefix=QUERY_PREFIX)
    for q, r in results.items():
        # The retrieval query never equals the label: only the question ID set on the app's
        # own (non-RAG) root span can have matched it.
        assert r.matched_by == ("question_id" if corpus.EXPECTED[q][0] else None)
