"""OpenTelemetry GenAI conventions: opentelemetry-instrumentation-openai-v2 over the real
``openai`` client (wire-level fake API) and an app-recorded GenAI retrieval span."""

from __future__ import annotations

from pathlib import Path

from ragtrace import semconv
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services.otlp_sink import OtlpSink
from tests.dialects.apps import corpus
from tests.dialects.apps.genai_app import QUERY_PREFIX
from tests.dialects.genai_app_env import LATEST_EVENT_CONTENT, LATEST_SPAN_CONTENT
from tests.dialects.kit import assert_known_truth, make_evaluator, run_app, scored
from tests.evaluation_names import RETRIEVAL_RESULTS


def test_openai_v2_spans_get_the_known_truth_labelled_by_the_apps_own_root_span(
    evaluator: EmbeddedEvaluator,
) -> None:
    asked = run_app("genai_app", evaluator.endpoint, env=LATEST_SPAN_CONTENT)
    results = scored(evaluator, asked)
    assert_known_truth(results, query_prefix=QUERY_PREFIX)
    for q, r in results.items():
        # The retrieval query never equals the label: only the question ID set on the app's
        # own (non-RAG) root span can have matched it.
        assert r.matched_by == ("question_id" if corpus.EXPECTED[q][0] else None)


def test_each_metric_is_written_under_the_span_it_evaluates(tmp_path: Path) -> None:
    """Through a trace backend that receives the app's spans and the evaluation spans:
    groundedness sits under the openai-v2 chat span with its ``gen_ai.response.id``, recall
    under the retrieval span, each linked to exactly its target."""
    with OtlpSink() as backend, make_evaluator(tmp_path, backend.endpoint) as ev:
        asked = run_app("genai_app", ev.endpoint, backend.endpoint, env=LATEST_SPAN_CONTENT)
        results = scored(ev, asked)
        audit = next(a["trace_id"] for a in asked if a["question"] == corpus.AUDIT)
        backend.wait_for_spans(
            lambda s: s.trace_id == audit and s.name.startswith(semconv.SPAN_EVALUATION + "."),
            count=2,
            timeout=30,
        )
    assert results[corpus.AUDIT].cell == "fine"
    spans = {s.span_id: s for s in backend.trace(audit)}
    chat = next(s for s in spans.values() if s.attributes.get("gen_ai.operation.name") == "chat")
    retrieval = next(s for s in spans.values() if s.name == "retrieval corpus")
    by_name = {s.name: s for s in spans.values() if s.scope == semconv.EVALUATION_SCOPE}
    ground = by_name[f"{semconv.SPAN_EVALUATION}.groundedness"]
    recall = by_name[f"{semconv.SPAN_EVALUATION}.recall"]
    assert ground.parent_span_id == chat.span_id and ground.links == ((audit, chat.span_id),)
    assert recall.parent_span_id == retrieval.span_id
    assert recall.links == ((audit, retrieval.span_id),)
    (event,) = ground.events
    assert event == (
        semconv.GEN_AI_EVALUATION_RESULT,
        {
            semconv.GEN_AI_EVALUATION_NAME: "groundedness",
            semconv.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
            semconv.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
            semconv.GEN_AI_EVALUATION_EXPLANATION: "1 of 1 claims entailed by the context",
            "gen_ai.response.id": chat.attributes["gen_ai.response.id"],
        },
    )
    assert str(chat.attributes["gen_ai.response.id"]).startswith("chatcmpl-")
    assert [e[1][semconv.GEN_AI_EVALUATION_NAME] for e in recall.events] == list(RETRIEVAL_RESULTS)
    summary = by_name[semconv.SPAN_EVALUATION]
    assert summary.events == () and summary.attributes[semconv.EVAL_CELL] == "fine"


def test_openai_v2_content_sent_as_log_events_gets_the_known_truth(
    evaluator: EmbeddedEvaluator,
) -> None:
    """``event_only``: the answer is only in a ``gen_ai.client.inference.operation.details``
    log record sent to ``/v1/logs``; the chat span carries no content."""
    asked = run_app("genai_app", evaluator.endpoint, env=LATEST_EVENT_CONTENT)
    assert_known_truth(scored(evaluator, asked), query_prefix=QUERY_PREFIX)


def test_ids_only_documents_are_judged_against_the_context_the_model_was_given(
    evaluator: EmbeddedEvaluator,
) -> None:
    """The retrieval span lists document IDs and scores only; the context the answer is judged
    against is the chat's input messages, sent as a log event (``event_only``), system message
    left out; the result says so."""
    asked = run_app(
        "genai_app", evaluator.endpoint, env={**LATEST_EVENT_CONTENT, "GENAI_IDS_ONLY": "1"}
    )
    results = scored(evaluator, asked)
    assert_known_truth(results, query_prefix=QUERY_PREFIX)
    assert {r.extra["context_source"] for r in results.values()} == {"generation_input"}
