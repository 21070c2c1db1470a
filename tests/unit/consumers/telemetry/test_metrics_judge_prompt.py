"""The bounded judge_prompt attribute: on the groundedness histogram and the judge call and error
counters (eager series included), from the replica's judge or per call; absent when unknown."""

from __future__ import annotations

import hashlib

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.telemetry.metrics import JUDGE_OUTCOMES, ConsumerMetrics, prompt_label
from tests.metric_points import Key, Point, points, values
from tests.unit.consumers.service_fakes import build_with_fakes

PROMPT = hashlib.sha256(b"groundedness prompt v1").hexdigest()
OTHER = hashlib.sha256(b"groundedness prompt v2").hexdigest()


def _points(reader: InMemoryMetricReader, name: str) -> dict[Key, Point]:
    return points(reader, name)


def _rig(prompt: str | None = PROMPT) -> tuple[ConsumerMetrics, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return ConsumerMetrics(
        MeterProvider(metric_readers=[reader]), judge_prompt_sha256=prompt
    ), reader


def test_attribute_key_is_the_semconv_constant() -> None:
    assert semconv.ATTR_JUDGE_PROMPT == "judge_prompt"
    assert "ATTR_JUDGE_PROMPT" in semconv.__all__


@pytest.mark.parametrize(
    "sha, label",
    [
        (PROMPT, PROMPT[:12]),
        (PROMPT.upper(), PROMPT[:12]),
        ("0123456789ab", "0123456789ab"),
        (None, None),
    ],
)
def test_prompt_label(sha: str | None, label: str | None) -> None:
    assert prompt_label(sha) == label


@pytest.mark.parametrize("bad", ["", "0123456789a", "You are a judge: decide", "g" * 64])
def test_prompt_label_refuses_anything_but_a_digest(bad: str) -> None:
    with pytest.raises(ValueError, match="not a prompt SHA-256"):
        prompt_label(bad)
    with pytest.raises(ValueError, match="not a prompt SHA-256"):
        ConsumerMetrics(MeterProvider(), judge_prompt_sha256=bad)


def test_groundedness_and_judge_counters_carry_the_replicas_prompt() -> None:
    m, reader = _rig()
    m.groundedness(0.5, "svc", "p", "model-a")
    m.judge_call("model-a", "ok")
    m.judge_error("model-a", "invalid_output")
    m.judge_usage("model-a", 10, 2, 0, 0, 0.001, 0.5)
    p = PROMPT[:12]
    assert list(_points(reader, semconv.METRIC_GROUNDEDNESS)) == [
        (
            ("judge_model", "model-a"),
            ("judge_prompt", p),
            ("model", "unknown"),
            ("pipeline", "p"),
            ("service", "svc"),
        )
    ]
    calls = values(reader, semconv.METRIC_JUDGE_CALLS)
    assert calls == {
        (("judge_model", "model-a"), ("judge_prompt", p), ("outcome", o)): int(o == "ok")
        for o in JUDGE_OUTCOMES
    }
    errors = values(reader, semconv.METRIC_JUDGE_ERRORS)
    assert errors == {
        (("judge_model", "model-a"), ("judge_prompt", p), ("reason", "invalid_output")): 1,
        (("judge_model", "model-a"), ("judge_prompt", p), ("reason", "unavailable")): 0,
    }
    # Tokens, cost and latency stay per model (the prompt hash is on the call counters).
    for name in (
        semconv.METRIC_JUDGE_TOKENS,
        semconv.METRIC_JUDGE_COST,
        semconv.METRIC_JUDGE_LATENCY,
    ):
        assert all("judge_prompt" not in dict(k) for k in _points(reader, name)), name


def test_a_call_can_name_its_own_prompt() -> None:
    m, reader = _rig()
    m.judge_call("model-a", "cached", prompt_sha256=OTHER)
    m.groundedness(1.0, "svc", None, "model-a", prompt_sha256=OTHER)
    calls = values(reader, semconv.METRIC_JUDGE_CALLS)
    assert (
        calls[(("judge_model", "model-a"), ("judge_prompt", OTHER[:12]), ("outcome", "cached"))]
        == 1
    )
    # Its eager series exist too, next to the replica's own prompt's (created by ensure_judge).
    assert {dict(k)["judge_prompt"] for k in calls} == {OTHER[:12]}
    m.ensure_judge("model-a")
    calls = values(reader, semconv.METRIC_JUDGE_CALLS)
    assert {dict(k)["judge_prompt"] for k in calls} == {OTHER[:12], PROMPT[:12]}
    assert list(_points(reader, semconv.METRIC_GROUNDEDNESS)) == [
        (
            ("judge_model", "model-a"),
            ("judge_prompt", OTHER[:12]),
            ("model", "unknown"),
            ("pipeline", "default"),
            ("service", "svc"),
        )
    ]


def test_without_a_known_prompt_the_attribute_is_left_out() -> None:
    m, reader = _rig(None)
    m.judge_call("model-a", "ok")
    m.groundedness(0.5, "svc", "p", "model-a")
    assert all(
        "judge_prompt" not in dict(k)
        for name in (semconv.METRIC_JUDGE_CALLS, semconv.METRIC_GROUNDEDNESS)
        for k in _points(reader, name)
    )


def test_the_kafka_consumer_labels_metrics_with_its_judges_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = build_with_fakes(monkeypatch, ConsumerConfig.defaults())  # the lexical judge
    try:
        built.service.pipeline.metrics.judge_call("lexical", "ok")
        calls = _points(built.reader, semconv.METRIC_JUDGE_CALLS)
        expected = LexicalJudge().info.prompt_sha256[:12]
        assert {dict(k)["judge_prompt"] for k in calls} == {expected}
    finally:
        built.service.meter_provider.shutdown()
