"""A backend that keeps only log records still has every score, linked to the span it judged:
the write-back's gen_ai.evaluation.result records go through the real collector's logs/eval
pipeline to the trace backend's /v1/logs."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.resources import Resource

from ragtrace import __version__, semconv
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
from scripts.services import CollectorEndpoints, OtlpSink
from tests.unit.consumers.scoring_helpers import (
    grounded,
    root_span_id,
    sid,
    tid,
    trace_scores,
)

pytestmark = pytest.mark.e2e

N = 4021  # trace number: IDs no other test uses


def test_scores_reach_a_logs_only_backend_in_the_evaluated_spans_context(
    collector: CollectorEndpoints, trace_backend: OtlpSink
) -> None:
    scores = trace_scores(N, gold=frozenset({"c-1"}), result=grounded(3, 3))
    sink = OtlpScoreSink.to_collector(
        collector.eval_otlp_http,
        Resource.create({"service.name": "ragtrace-e2e"}),
        recall_threshold=0.5,
        groundedness_threshold=0.8,
        results_as="events",
    )
    try:
        sink.write(scores)
    finally:
        sink.shutdown()
    received = trace_backend.wait_for_logs(lambda x: x.trace_id == tid(N), count=8, timeout=20)
    got = {str(x.attributes["gen_ai.evaluation.name"]): x for x in received}
    assert len(received) == 8
    retrieval, generation, root = sid(N * 10 + 2), sid(N * 10 + 3), root_span_id(N)
    assert {name: x.span_id for name, x in got.items()} == {
        "recall": retrieval,
        "hit_rate": retrieval,
        "precision": retrieval,
        "reciprocal_rank": retrieval,
        "ndcg": retrieval,
        "context_relevancy": retrieval,
        "groundedness": generation,
        "cell": root,
    }
    for x in received:
        assert x.event_name == "gen_ai.evaluation.result"
        assert (x.scope, x.scope_version, x.schema_url) == (
            semconv.EVALUATION_SCOPE,
            __version__,
            semconv.SCHEMA_URL,
        )
        assert x.resource["service.name"] == "ragtrace-e2e"
    assert got["recall"].attributes == {
        "gen_ai.evaluation.name": "recall",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "1 of 1 gold chunks in the top 5 "
        "(question q-audit, matched by query_text)",
    }
    assert got["cell"].attributes == {
        "gen_ai.evaluation.name": "cell",
        "gen_ai.evaluation.score.label": "fine",
        "gen_ai.evaluation.explanation": "mean_recall 1.00 >= 0.5; groundedness 1.00 >= 0.8",
    }
    # events only: no evaluation span of this trace reached the backend
    assert trace_backend.trace(tid(N)) == []
