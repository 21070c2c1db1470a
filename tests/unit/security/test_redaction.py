"""Redaction: named patterns replaced by consistent placeholders before any judge or write-back.

The core (:mod:`ragtrace.evaluation.redaction`) offline, then the service's scoring path with
the real Anthropic client against the fake API at the wire: the judge's request and every
evaluation span written back carry no planted e-mail address or phone number, the faithful
answer quoting the address stays grounded, and ``ragtrace.redactions`` counts by pattern.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.evaluation.judges.lexical.judge import LexicalJudge
from ragtrace.evaluation.judges.model.anthropic import AnthropicJudge
from ragtrace.evaluation.redaction import RedactionError, Redactor, luhn_valid
from ragtrace_consumers.config import ConfigError, load_config
from ragtrace_consumers.scoring.pipeline import Pipeline, PipelineSettings
from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig
from ragtrace_consumers.stores.memory import (
    MemoryIdempotencyStore,
    MemoryJudgeBudget,
    MemoryJudgeResultCache,
    MemoryLabelStore,
    MemoryTraceStore,
)
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from ragtrace_consumers.writeback.recording_sink import RecordingSink
from tests import metric_points
from tests.fakes.anthropic_server import FakeAnthropic, lexical_responder
from tests.unit.consumers.scoring_helpers import T0, Clock, rag_spans, score_sink

EMAIL = "hr-leave@corp.example"
ASKER = "Alice.Smith@corp.example"
PHONE = "+44 20 7946 0958"
QUERY = f"Where do I send my leave request? Reply to {ASKER}"
CONTEXT = (
    f"Leave requests are sent to {EMAIL} at least 30 days ahead.",
    f"The HR desk answers on {PHONE} on weekdays.",
)
ANSWER = f"Leave requests are sent to {EMAIL} at least 30 days ahead."


def test_placeholders_are_the_same_for_the_same_value() -> None:
    session = Redactor.build(["email", "phone", "card"], {"employee_id": r"EMP-\d{6}"}).session()
    assert session.redact(f"{ASKER} wrote to {EMAIL}; cc {EMAIL.upper()}") == (
        "<EMAIL_1> wrote to <EMAIL_2>; cc <EMAIL_2>"
    )
    assert session.redact(f"call {PHONE} or +44 (20) 7946-0958") == "call <PHONE_1> or <PHONE_1>"
    assert session.redact("card 4111 1111 1111 1111, 4111-1111-1111-1111") == (
        "card <CARD_1>, <CARD_1>"
    )
    # Not a card (Luhn fails), not a phone (a date, a short number): left alone.
    kept = "ref 4111 1111 1111 1112 on 2024-01-15 after 90 days, room 1234"
    assert session.redact(kept) == kept
    assert session.redact("badge EMP-123456") == "badge <EMPLOYEE_ID_1>"
    assert session.counts == {"email": 3, "phone": 2, "card": 2, "employee_id": 1}
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")


def test_bad_patterns_are_refused_by_name() -> None:
    with pytest.raises(RedactionError, match="unknown redaction pattern 'emial'"):
        Redactor.build(["emial"])
    with pytest.raises(RedactionError, match="'id': not a regular expression"):
        Redactor.build([], {"id": "("})
    with pytest.raises(RedactionError, match="matches the empty text"):
        Redactor.build([], {"id": "x*"})
    with pytest.raises(ConfigError, match="RAGTRACE_REDACTION_PATTERNS: redaction.patterns"):
        load_config(env={"RAGTRACE_REDACTION_PATTERNS": "email,cards"})
    cfg = load_config(env={"RAGTRACE_REDACTION_CUSTOM": '{"ticket": "TCK-[0-9]+"}'})
    assert cfg.redaction.redactor().names == ("ticket",)


def test_offline_groundedness_of_a_faithful_answer_quoting_an_email_is_unchanged() -> None:
    judge = LexicalJudge()
    plain = judge.groundedness(ANSWER, list(CONTEXT))
    session = Redactor.build(["email", "phone"]).session()
    context = [session.redact(c) for c in CONTEXT]
    answer = session.redact(ANSWER)
    assert "<EMAIL_1>" in answer and "<EMAIL_1>" in context[0] and EMAIL not in answer
    redacted = judge.groundedness(answer, context)
    assert plain.score == 1.0
    assert redacted.score == plain.score


def _texts(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def test_the_judge_and_the_write_back_never_see_the_planted_values() -> None:
    clock = Clock()
    reader = InMemoryMetricReader()
    metrics = ConsumerMetrics(MeterProvider(metric_readers=[reader]))
    exporter = InMemorySpanExporter()
    settings = PipelineSettings(quiet_s=5.0, lease_s=60.0)
    sink = score_sink(exporter, settings)
    redactor = load_config(env={"RAGTRACE_REDACTION_PATTERNS": "email,phone"}).redaction
    state = SqliteState(":memory:")  # serve's results table: a write-back too
    with FakeAnthropic(lexical_responder) as api:
        pipeline = Pipeline(
            traces=MemoryTraceStore(clock=clock),
            labels=MemoryLabelStore((), clock=clock),
            cache=MemoryJudgeResultCache(clock=clock),
            idempotency=MemoryIdempotencyStore(clock=clock),
            budget=MemoryJudgeBudget(1000, 10_000_000, clock=clock),
            judge=AnthropicJudge(api_key="k", base_url=api.base_url),
            sink=RecordingSink(state.results, sink),
            metrics=metrics,
            sampler=Sampler(SamplerConfig()),
            settings=settings,
            clock=clock,
            redactor=redactor.redactor(),
        )
        spans = rag_spans(
            1, query=QUERY, retrieved=[("c-1", CONTEXT[0]), ("c-2", CONTEXT[1])], answer=ANSWER
        )
        pipeline.ingest(spans, T0)
        assert pipeline.process_due(T0) == 1
        requests = list(api.requests)
    assert requests, "the judge was never called"
    wire = _texts([r.body for r in requests])
    for planted in (EMAIL, ASKER, "7946", "corp.example"):
        assert planted not in wire, planted
    user = requests[0].user_text
    # The asker's address (in the query) is the first; the desk's the second, in the answer and
    # in its passage alike.
    assert user.count("<EMAIL_2>") == 2
    assert "<PHONE_1>" in user

    written = exporter.get_finished_spans()
    assert written
    dump = _texts(
        [
            {"a": dict(s.attributes or {}), "e": [dict(e.attributes or {}) for e in s.events]}
            for s in written
        ]
    )
    for planted in (EMAIL, ASKER, "7946", "corp.example"):
        assert planted not in dump, planted
    scores = [
        dict(e.attributes or {})
        for s in written
        for e in s.events
        if (e.attributes or {}).get(semconv.GEN_AI_EVALUATION_NAME) == "groundedness"
    ]
    assert scores and scores[0][semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0

    rows = [row.to_dict() for _, row in state.results.all()]
    state.close()
    assert (
        len(rows) == 1
        and rows[0]["query"] == "Where do I send my leave request? Reply to <EMAIL_1>"
    )
    assert rows[0]["answer"] == "Leave requests are sent to <EMAIL_2> at least 30 days ahead."
    for planted in (EMAIL, ASKER, "7946", "corp.example"):
        assert planted not in _texts(rows), planted

    counted = {
        dict(key)["pattern"]: metric_points.number(point)
        for key, point in metric_points.points(reader, semconv.METRIC_REDACTIONS).items()
    }
    # query: the asker; passages: the desk's address and phone; answer: the address.
    assert counted == {"email": 3, "phone": 1}


def test_a_retrieval_steps_own_query_and_passages_are_redacted() -> None:
    """An agent's sub-query and its search results reach the result's steps redacted, with the
    placeholders the rest of the trace uses."""
    from ragtrace.evaluation.redaction import Redactor
    from ragtrace_consumers.model import Chunk, RagTrace, RetrievalStep
    from ragtrace_consumers.scoring.redaction import TraceRedaction

    found = Chunk("c-1", "Write to Alice.Smith@corp.example for access.")
    trace = RagTrace(
        trace_id="1" * 32,
        service="svc",
        target_span_id="2" * 16,
        query="Who grants access?",
        retrieved=(found,),
        context=(found,),
        steps=(RetrievalStep("3" * 16, "access owner bob@corp.example", (found,), "search"),),
    )
    metrics = ConsumerMetrics(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    redacted, _ = TraceRedaction(Redactor.build(["email"]), metrics)(trace, None)
    (step,) = redacted.steps
    assert step.query == "access owner <EMAIL_2>"
    assert step.chunks == redacted.retrieved
    assert "Alice" not in _texts(redacted) and "bob@" not in _texts(redacted)
