"""A LangChain app traced by openinference-instrumentation-langchain, end to end through the real
collector and Kafka to ``ragtrace consume``: the known truth of each labelled trace comes back
as evaluation spans, recall under the retriever span and groundedness under the LLM span."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtrace import semconv
from scripts.services import CollectorEndpoints, OtlpSink
from tests.dialects.apps import corpus
from tests.dialects.kit import run_app
from tests.e2e.online import (
    ASSIGNED,
    DLQ_TOPIC,
    consumer_env,
    evaluation_spans,
    group_at_end,
    load_labels,
    metric_spans,
    start_consumer,
)

pytestmark = pytest.mark.e2e


def test_langchain_traces_through_collector_and_kafka_get_the_known_truth(
    tmp_path: Path,
    redis_url: str,
    kafka_bootstrap: str,
    kafka_topic: Callable[..., str],
    collector: CollectorEndpoints,
    trace_backend: OtlpSink,
) -> None:
    kafka_topic(DLQ_TOPIC, 1)
    prefix = f"dialects-{uuid.uuid4().hex[:8]}"
    group = f"ragtrace-dialects-{uuid.uuid4().hex[:8]}"
    load_labels(redis_url, prefix, corpus.write_labels(tmp_path / "labels.jsonl"))
    group_at_end(kafka_bootstrap, collector.topic, group)
    env = consumer_env(
        collector=collector,
        redis_url=redis_url,
        prefix=prefix,
        group=group,
        judge_url="http://127.0.0.1:9",
        extra={"RAGTRACE_JUDGE_NAME": "lexical", "RAGTRACE_SCORING_K": "3"},
    )
    consumer = start_consumer(env, tmp_path / "consumer.log")
    try:
        consumer.wait_for_log(ASSIGNED)
        asked = run_app("langchain_app", collector.app_otlp_http, "chat")
        ids = {a["trace_id"] for a in asked}
        trace_backend.wait_for_spans(
            lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids,
            count=len(ids),
            timeout=90,
        )
        trace_backend.wait_for_spans(
            lambda s: (
                s.scope == semconv.EVALUATION_SCOPE
                and s.name != semconv.SPAN_EVALUATION
                and s.trace_id in ids
            ),
            count=len(ids) + 3,
            timeout=30,
        )  # + recall of 3 labelled
        assert consumer.terminate() == 0
    finally:
        consumer.kill()

    for a in asked:
        qid, recall, groundedness, cell = corpus.EXPECTED[a["question"]]
        (summary,) = evaluation_spans(trace_backend, {a["trace_id"]})
        attrs = summary.attributes
        assert attrs[semconv.EVAL_CELL] == cell
        assert attrs.get(semconv.EVAL_RECALL) == recall
        assert attrs[semconv.EVAL_GROUNDEDNESS] == groundedness
        assert attrs.get(semconv.EVAL_QUESTION_ID) == qid
        app = {
            s.span_id: s
            for s in trace_backend.trace(a["trace_id"])
            if s.scope == "openinference.instrumentation.langchain"
        }
        for m in metric_spans(trace_backend, {a["trace_id"]}):
            kind = app[m.parent_span_id].attributes[semconv.OPENINFERENCE_SPAN_KIND]
            assert kind == ("RETRIEVER" if m.name.endswith(".recall") else "LLM"), m.name
