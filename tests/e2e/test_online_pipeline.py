"""The online pipeline end to end: app → collector → Kafka → ``ragtrace consume`` → collector →
trace backend and Prometheus (see tests/e2e/online.py for the run itself)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragtrace import semconv
from ragtrace.evaluation.judges import PROMPT_SHA256
from ragtrace.evaluation.labels import LabelledQuestion, label_set_version
from scripts.services import CollectorEndpoints, OtlpSink
from scripts.services.prometheus import query, wait_for_series
from tests.e2e import online_app
from tests.e2e.online import (
    ASSIGNED,
    DLQ_TOPIC,
    JUDGE_ALIAS,
    JUDGE_MODEL,
    OnlineRun,
    committed_offsets,
    consumer_env,
    end_offsets,
    evaluation_spans,
    group_at_end,
    metric_spans,
    read_topic,
    run_app,
    start_consumer,
    verbatim_responder,
)
from tests.fakes.anthropic_server import FakeAnthropic

pytestmark = pytest.mark.e2e

LABELS_VERSION = label_set_version(
    [
        LabelledQuestion(
            q["qid"],  # type: ignore[arg-type]
            q["question"],  # type: ignore[arg-type]
            frozenset(q["gold"]),
            online_app.REFERENCE_ANSWERS.get(str(q["qid"])),
        )
        for q in online_app.LABELS
    ]
)


def _request(run: OnlineRun, key: str) -> dict[str, str]:
    (req,) = [r for r in run.requests if r["key"] == key]
    return req


def _events(run: OnlineRun, span: Any) -> dict[str, dict[str, object]]:
    """The trace's evaluation results by metric: on the per-family spans, each child of the
    app span it evaluates (recall: retrieve, groundedness: generate), one event per metric."""
    assert span.events == ()
    app = {
        s.name: s.span_id
        for s in run.trace_backend.trace(span.trace_id)
        if s.scope == semconv.INSTRUMENTATION_SCOPE
    }
    out: dict[str, dict[str, object]] = {}
    for m in metric_spans(run.trace_backend, {span.trace_id}):
        family = m.name.rsplit(".", 1)[-1]
        target = app["retrieve" if family == "recall" else "generate"]  # groundedness, answer
        assert m.parent_span_id == target and m.links == ((span.trace_id, target),)
        for name, attrs in m.events:
            assert name == semconv.GEN_AI_EVALUATION_RESULT
            metric = str(attrs[semconv.GEN_AI_EVALUATION_NAME])
            assert metric not in out
            out[metric] = dict(attrs)
    return out


@pytest.mark.parametrize("key", [q.key for q in online_app.QUESTIONS])
def test_one_evaluation_span_in_the_original_trace(online_run: OnlineRun, key: str) -> None:
    req = _request(online_run, key)
    (span,) = evaluation_spans(online_run.trace_backend, {req["trace_id"]})
    app_spans = [
        s
        for s in online_run.trace_backend.trace(req["trace_id"])
        if s.scope == semconv.INSTRUMENTATION_SCOPE
    ]
    assert {s.name for s in app_spans} == {"support", "retrieve", "generate"}
    assert span.parent_span_id == req["root_span_id"]
    assert span.name == semconv.SPAN_EVALUATION
    assert span.resource["service.name"] == "ragtrace-consumer"

    recall, hit, precision, rr, groundedness, cell = online_app.EXPECTED[key]
    attrs = dict(span.attributes)
    expected: dict[str, object] = {
        semconv.EVAL_MARKER: True,
        semconv.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
        semconv.EVAL_TARGET_SPAN_ID: req["root_span_id"],
        semconv.EVAL_CELL: cell,
        semconv.RAGTRACE_PIPELINE_NAME: online_app.PIPELINE,
        semconv.EVAL_GROUNDEDNESS: groundedness,
        semconv.EVAL_JUDGE_NAME: "anthropic",
        semconv.EVAL_JUDGE_MODEL: JUDGE_ALIAS,  # the configured model: the judge's identity
        semconv.GEN_AI_RESPONSE_MODEL: JUDGE_MODEL,  # what the API served, on the span only
        semconv.EVAL_JUDGE_PROMPT_SHA256: PROMPT_SHA256,
        semconv.EVAL_GROUNDEDNESS_NO_CLAIMS: False,
        # The SDK's generation span carries the context the model was given.
        semconv.EVAL_CONTEXT_SOURCE: "generation",
        semconv.EVAL_CONTEXT_SOURCES: ("generation",),
    }
    claims = {"audit": (1, 0), "export": (2, 1), "sso": (1, 0), "rate": (1, 0), "forever": (1, 1)}[
        key
    ]
    expected[semconv.EVAL_GROUNDEDNESS_CLAIMS] = claims[0]
    expected[semconv.EVAL_GROUNDEDNESS_UNSUPPORTED] = claims[1]
    if recall is not None:
        expected.update(
            {
                semconv.EVAL_RECALL: recall,
                semconv.EVAL_HIT_RATE: hit,
                semconv.EVAL_PRECISION: precision,
                semconv.EVAL_RECIPROCAL_RANK: rr,
                semconv.EVAL_K: 5,
                semconv.EVAL_RECALL_DEFINITION: "mean_recall",
                semconv.EVAL_QUESTION_ID: online_app.QUESTION_IDS[key],
                semconv.EVAL_MATCHED_BY: online_app.MATCHED_BY[key],
                semconv.EVAL_LABELS_VERSION: LABELS_VERSION,
                semconv.EVAL_GOLD_SIZE: {"audit": 2, "export": 1, "sso": 1}[key],
            }
        )
        # Share of the chunks supplied to the generator that are gold.
        expected[semconv.EVAL_CONTEXT_RELEVANCY] = {"audit": 1 / 3, "export": 0.5, "sso": 0.0}[key]
        assert 0.0 <= float(attrs.pop(semconv.EVAL_NDCG)) <= 1.0  # type: ignore[arg-type]
    cost = attrs.pop(semconv.EVAL_JUDGE_COST_USD)
    assert isinstance(cost, float) and cost >= 0.0
    answer = online_app.EXPECTED_ANSWER.get(key)
    if answer is not None:  # the label has a reference answer
        expected[semconv.EVAL_ANSWER_RELEVANCY], expected[semconv.EVAL_ANSWER_CORRECTNESS] = answer
        expected[semconv.EVAL_ANSWER_QUESTION_ID] = online_app.QUESTION_IDS[key]
        expected[semconv.EVAL_ANSWER_REFERENCE_SOURCE] = "label"
        answer_cost = attrs.pop(semconv.EVAL_ANSWER_COST_USD)
        assert isinstance(answer_cost, float) and answer_cost >= 0.0
    for k, v in expected.items():
        assert attrs.pop(k) == pytest.approx(v) if isinstance(v, float) else attrs.pop(k) == v, k
    assert attrs == {}

    events = _events(online_run, span)
    if answer is not None:
        assert events.pop("answer_relevancy")[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == answer[0]
        correctness = events.pop("answer_correctness")[semconv.GEN_AI_EVALUATION_SCORE_VALUE]
        assert correctness == pytest.approx(answer[1])
    if recall is None:
        assert set(events) == {"groundedness"}  # unlabelled: groundedness only
    else:
        assert events["recall"][semconv.GEN_AI_EVALUATION_SCORE_VALUE] == recall
        assert events["hit_rate"][semconv.GEN_AI_EVALUATION_SCORE_VALUE] == hit
        assert events["reciprocal_rank"][semconv.GEN_AI_EVALUATION_SCORE_VALUE] == rr
    g = events["groundedness"]
    assert g[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == groundedness
    assert g[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == ("pass" if groundedness >= 0.8 else "fail")


def test_the_consumer_stopped_cleanly_on_sigterm(online_run: OnlineRun) -> None:
    assert online_run.consumer_exit_code == 0, online_run.consumer.tail()
    assert "draining" in online_run.consumer.text()


def test_a_repeated_answer_is_judged_once(online_run: OnlineRun) -> None:
    # audit, export, sso, forever: four groundedness calls ("rate" reused "sso"'s cached
    # result), and audit's answer relevancy and correctness (its label has a reference answer).
    assert len(online_run.judge.requests) == 6
    (rate,) = evaluation_spans(online_run.trace_backend, online_run.trace_ids("rate"))
    (sso,) = evaluation_spans(online_run.trace_backend, online_run.trace_ids("sso"))
    assert rate.attributes[semconv.EVAL_JUDGE_COST_USD] == 0.0
    assert float(sso.attributes[semconv.EVAL_JUDGE_COST_USD]) > 0.0  # type: ignore[arg-type]


def test_labels_were_loaded_with_the_cli(online_run: OnlineRun) -> None:
    assert LABELS_VERSION in online_run.labels_output


def test_malformed_message_is_dead_lettered_with_its_reason(online_run: OnlineRun) -> None:
    records = read_topic(
        online_run.kafka_bootstrap,
        DLQ_TOPIC,
        lambda rs: any(r.key == online_run.malformed_key for r in rs),
    )
    (record,) = [r for r in records if r.key == online_run.malformed_key]
    headers = {k: v.decode() for k, v in record.headers}
    assert record.value == b"\x00\xffnot otlp"
    assert headers["ragtrace.dlq.reason"] == "protobuf_parse_error"
    assert headers["ragtrace.dlq.detail"]
    assert headers["ragtrace.dlq.topic"] == online_run.collector.topic
    assert int(headers["ragtrace.dlq.offset"]) >= 0


def _value(url: str, promql: str) -> float:
    result = wait_for_series(url, promql, timeout=30)
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def test_metrics_are_queryable_in_prometheus(online_run: OnlineRun) -> None:
    url = online_run.prometheus_url
    inst = f'instance="{online_run.instance}"'
    svc = f'{inst},service="{online_app.SERVICE}",pipeline="{online_app.PIPELINE}"'
    assert _value(url, f"sum(ragtrace_traces_scored_total{{{svc}}})") == 5
    assert _value(url, f"sum(ragtrace_traces_seen_total{{{svc}}})") == 5
    assert _value(url, f"sum(ragtrace_traces_sampled_total{{{svc}}})") == 5
    cells = Counter(c for *_, c in online_app.EXPECTED.values())
    for cell, n in cells.items():
        assert _value(url, f'sum(ragtrace_attribution_total{{{svc},cell="{cell}"}})') == n
    assert _value(url, f"sum(ragtrace_groundedness_count{{{svc}}})") == 5
    assert _value(url, f"sum(ragtrace_groundedness_sum{{{svc}}})") == 3.5
    assert _value(url, f'sum(ragtrace_groundedness_bucket{{{svc},le="0.5"}})') == 2
    assert _value(url, f"sum(ragtrace_recall_count{{{svc}}})") == 3
    assert _value(url, f"sum(ragtrace_recall_sum{{{svc}}})") == 1.5
    assert _value(url, f"sum(ragtrace_hit_rate_sum{{{svc}}})") == 2
    assert _value(url, f"sum(ragtrace_reciprocal_rank_sum{{{svc}}})") == 1.5
    # Judge metrics are labelled with the configured model, never the served (dated) one.
    model = f'{inst},judge_model="{JUDGE_ALIAS}"'
    assert _value(url, f'sum(ragtrace_judge_calls_total{{{model},outcome="ok"}})') == 6
    assert _value(url, f'sum(ragtrace_judge_calls_total{{{model},outcome="cached"}})') == 1
    assert _value(url, f'sum(ragtrace_judge_tokens_total{{{model},token_type="input"}})') > 0
    assert _value(url, f"sum(ragtrace_judge_latency_seconds_count{{{model}}})") == 6
    assert query(url, f'{{{inst},judge_model="{JUDGE_MODEL}"}}') == []  # exported together
    assert _value(url, f"sum(ragtrace_answer_relevancy_sum{{{svc}}})") == 1.0
    assert _value(url, f"sum(ragtrace_answer_correctness_count{{{svc}}})") == 1
    assert _value(url, f"sum(ragtrace_answer_correctness_sum{{{svc}}})") == pytest.approx(2 / 3)
    assert (
        _value(url, f'sum(ragtrace_dlq_messages_total{{{inst},reason="protobuf_parse_error"}})')
        == 1
    )
    assert (
        _value(
            url,
            f'sum(ragtrace_scoring_delay_seconds_count{{{inst},service="{online_app.SERVICE}"}})',
        )
        == 5
    )


# Every contract metric, by its Prometheus name (the collector's translation: unit suffixes,
# _total on counters, braces units dropped).
PROMETHEUS_NAMES = {
    semconv.METRIC_GROUNDEDNESS: "ragtrace_groundedness_bucket",
    semconv.METRIC_RECALL: "ragtrace_recall_bucket",
    semconv.METRIC_ANSWER_RELEVANCY: "ragtrace_answer_relevancy_bucket",
    semconv.METRIC_ANSWER_CORRECTNESS: "ragtrace_answer_correctness_bucket",
    semconv.METRIC_HIT_RATE: "ragtrace_hit_rate_bucket",
    semconv.METRIC_RECIPROCAL_RANK: "ragtrace_reciprocal_rank_bucket",
    semconv.METRIC_TRACES_SEEN: "ragtrace_traces_seen_total",
    semconv.METRIC_TRACES_SAMPLED: "ragtrace_traces_sampled_total",
    semconv.METRIC_TRACES_SCORED: "ragtrace_traces_scored_total",
    semconv.METRIC_TRACES_SKIPPED: "ragtrace_traces_skipped_total",
    semconv.METRIC_CELL: "ragtrace_attribution_total",
    semconv.METRIC_GROUNDEDNESS_FAILED: "ragtrace_groundedness_failed_total",
    semconv.METRIC_JUDGE_CALLS: "ragtrace_judge_calls_total",
    semconv.METRIC_JUDGE_ERRORS: "ragtrace_judge_errors_total",
    semconv.METRIC_JUDGE_TOKENS: "ragtrace_judge_tokens_total",
    semconv.METRIC_JUDGE_COST: "ragtrace_judge_cost_total",
    semconv.METRIC_JUDGE_LATENCY: "ragtrace_judge_latency_seconds_bucket",
    semconv.METRIC_JUDGE_BUDGET_EXHAUSTED: "ragtrace_judge_budget_exhausted_total",
    semconv.METRIC_DLQ_MESSAGES: "ragtrace_dlq_messages_total",
    semconv.METRIC_SCORING_DELAY: "ragtrace_scoring_delay_seconds_bucket",
    semconv.METRIC_CONSUMER_LAG: "ragtrace_consumer_lag",
    semconv.METRIC_PARKED: "ragtrace_traces_parked_total",
    semconv.METRIC_DEPENDENCY_ERRORS: "ragtrace_consumer_dependency_errors_total",
}


@pytest.mark.parametrize("otel_name", sorted(PROMETHEUS_NAMES))
def test_every_contract_metric_exists_in_prometheus(online_run: OnlineRun, otel_name: str) -> None:
    series = wait_for_series(
        online_run.prometheus_url,
        f'{PROMETHEUS_NAMES[otel_name]}{{job="ragtrace-consumer"}}',
        timeout=30,
    )
    assert series


def test_sigterm_drains_in_flight_scoring_and_commits(
    tmp_path: Path,
    redis_url: str,
    kafka_bootstrap: str,
    collector: CollectorEndpoints,
    trace_backend: OtlpSink,
    online_run: OnlineRun,
) -> None:
    """Traces being judged when SIGTERM arrives are finished and written back; the offsets of
    everything read are committed; the process exits 0."""
    group = f"ragtrace-sigterm-{uuid.uuid4().hex[:8]}"
    prefix = f"sigterm-{uuid.uuid4().hex[:8]}"
    group_at_end(kafka_bootstrap, collector.topic, group)
    with FakeAnthropic(verbatim_responder(delay_s=3.0)) as judge:
        consumer = start_consumer(
            consumer_env(
                collector=collector,
                redis_url=redis_url,
                prefix=prefix,
                group=group,
                judge_url=judge.base_url,
            ),
            tmp_path / "c.log",
        )
        try:
            consumer.wait_for_log(ASSIGNED)
            requests = run_app(collector.app_otlp_http, only=["audit", "export", "forever"])
            ids = {r["trace_id"] for r in requests}
            deadline_wait = time.monotonic() + 60
            while len(judge.requests) < 3:  # all three are being judged (3 s each)
                assert time.monotonic() < deadline_wait, consumer.tail()
                time.sleep(0.05)
            ends = end_offsets(kafka_bootstrap, collector.topic)
            assert evaluation_spans(trace_backend, ids) == []
            rc = consumer.terminate(timeout=60)
        finally:
            consumer.kill()
    assert rc == 0, consumer.tail()
    assert "draining" in consumer.text()
    # Written back before exit (the collector forwards within its batch timeout).
    trace_backend.wait_for_spans(
        lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids, count=3, timeout=15
    )
    assert len(judge.requests) == 3
    committed = committed_offsets(kafka_bootstrap, collector.topic, group)
    assert committed == ends, (committed, ends)
