"""Sampling at decode through the real pipeline (app → collector → Kafka → ``ragtrace consume``):
with no trace judged, the unlabelled traces are dropped as they are decoded — never stored in
Redis, never scored — while the labelled ones (by query text or by question ID) are stored and
scored for recall."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import redis

from ragtrace import semconv
from scripts.services import CollectorEndpoints, OtlpSink
from tests.e2e import online_app
from tests.e2e.online import (
    ASSIGNED,
    OnlineRun,
    committed_offsets,
    consumer_env,
    end_offsets,
    evaluation_spans,
    group_at_end,
    load_labels,
    run_app,
    start_consumer,
    verbatim_responder,
)
from tests.e2e.redis_text import text
from tests.fakes.anthropic_server import FakeAnthropic

pytestmark = pytest.mark.e2e


def test_unlabelled_traces_outside_every_rate_are_never_stored(
    tmp_path: Path,
    redis_url: str,
    kafka_bootstrap: str,
    collector: CollectorEndpoints,
    trace_backend: OtlpSink,
    online_run: OnlineRun,
) -> None:
    group = f"ragtrace-early-{uuid.uuid4().hex[:8]}"
    prefix = f"early-{uuid.uuid4().hex[:8]}"
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(q) + "\n" for q in online_app.LABELS))
    load_labels(redis_url, prefix, labels)
    group_at_end(kafka_bootstrap, collector.topic, group)
    with FakeAnthropic(verbatim_responder()) as judge:
        consumer = start_consumer(
            consumer_env(
                collector=collector,
                redis_url=redis_url,
                prefix=prefix,
                group=group,
                judge_url=judge.base_url,
                extra={"RAGTRACE_SAMPLING_JUDGE_RATE": "0"},
            ),
            tmp_path / "c.log",
        )
        try:
            consumer.wait_for_log(ASSIGNED)
            requests = run_app(collector.app_otlp_http)
            labelled = {r["trace_id"] for r in requests if r["key"] in online_app.MATCHED_BY}
            unlabelled = {r["trace_id"] for r in requests} - labelled
            assert len(labelled) == 3 and len(unlabelled) == 2
            trace_backend.wait_for_spans(
                lambda s: s.scope == semconv.EVALUATION_SCOPE and s.trace_id in labelled,
                count=3,
                timeout=90,
            )
            ends = end_offsets(kafka_bootstrap, collector.topic)
            deadline = time.monotonic() + 60
            while committed_offsets(kafka_bootstrap, collector.topic, group) != ends:
                assert time.monotonic() < deadline, consumer.tail()
                time.sleep(0.2)
            assert consumer.terminate() == 0, consumer.tail()
        finally:
            consumer.kill()
    client = redis.Redis.from_url(redis_url)
    try:
        stats = {text(k): int(v) for k, v in client.hgetall(f"{prefix}:stats").items()}
    finally:
        client.close()
    assert stats["traces_created"] == 3, stats  # the two unlabelled traces were never stored
    assert evaluation_spans(trace_backend, unlabelled) == []
    for span in evaluation_spans(trace_backend, labelled):
        key = next(r["key"] for r in requests if r["trace_id"] == span.trace_id)
        assert span.attributes[semconv.EVAL_RECALL] == online_app.EXPECTED[key][0]
        assert semconv.EVAL_GROUNDEDNESS not in span.attributes  # nothing judged
    assert judge.requests == []
