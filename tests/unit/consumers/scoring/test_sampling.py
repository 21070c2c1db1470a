"""Sampler: deterministic by trace ID, nested rates, first-matching rule, every skip reason."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from ragtrace_consumers.model import SKIP_REASONS, Chunk, RagTrace, SamplingDecision
from ragtrace_consumers.scoring.sampling import (
    Sampler,
    SamplerConfig,
    SamplingRule,
    parse_rules,
    trace_position,
)

FULL = RagTrace(
    trace_id="0af7651916cd43dd8448eb211c80319c",
    service="support-bot",
    target_span_id="b7ad6b7169203331",
    pipeline="support",
    query="q",
    answer="a",
    retrieved=(Chunk("c1", "t1"),),
    context=(Chunk("c1", "t1"),),
    model="m",
    attributes={"http.route": "/chat", "tenant": "acme"},
    has_retrieval=True,
    has_generation=True,
)


def _ids(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(n)]


def test_trace_position_is_the_documented_hash() -> None:
    tid = FULL.trace_id
    digest = hashlib.blake2b(tid.encode(), digest_size=8).digest()
    assert trace_position(tid) == int.from_bytes(digest, "big") / 2.0**64
    assert trace_position(tid.upper()) == trace_position(tid)
    assert trace_position(tid, "salt") != trace_position(tid)
    assert 0.0 <= trace_position(tid) < 1.0


def test_full_rates_sample_everything() -> None:
    assert Sampler().decide(FULL) == SamplingDecision(recall=True, judge=True)
    assert Sampler().decide(FULL).reason is None


def test_rates_are_deterministic_nested_and_close_to_the_rate() -> None:
    sampler = Sampler(SamplerConfig(recall_rate=0.5, judge_rate=0.2))
    ids = _ids(4000)
    decisions = [sampler.decide(dataclasses.replace(FULL, trace_id=t)) for t in ids]
    assert decisions == [sampler.decide(dataclasses.replace(FULL, trace_id=t)) for t in ids]
    recall = sum(d.recall for d in decisions)
    judge = sum(d.judge for d in decisions)
    assert 1850 <= recall <= 2150 and 700 <= judge <= 900
    # Judged traces are a subset of the recall-scored ones (judge_rate <= recall_rate).
    assert all(d.recall for d in decisions if d.judge)
    for t, d in zip(ids, decisions, strict=False):
        u = trace_position(t)
        assert (d.recall, d.judge) == (u < 0.5, u < 0.2)
        if not d.judge:
            assert d.judge_reason == "sampled_out" and d.reason == "sampled_out"


def test_zero_rates_skip_with_sampled_out() -> None:
    d = Sampler(SamplerConfig(recall_rate=0.0, judge_rate=0.0)).decide(FULL)
    assert d == SamplingDecision(
        recall=False,
        judge=False,
        reason="sampled_out",
        recall_reason="sampled_out",
        judge_reason="sampled_out",
    )


@pytest.mark.parametrize(
    ("change", "recall_reason", "judge_reason"),
    [
        ({"has_retrieval": False}, "no_retrieval", None),
        ({"has_generation": False}, None, "no_generation"),
        ({"answer": None}, None, "no_answer"),
        ({"answer": ""}, None, "no_answer"),
        ({"context": ()}, None, "no_context"),
        ({"context": (Chunk("c1", "t"), Chunk("c2"))}, None, "context_text_missing"),
        ({"context_truncated": True}, None, "context_truncated"),
    ],
)
def test_skip_reasons(change, recall_reason, judge_reason) -> None:  # type: ignore[no-untyped-def]
    d = Sampler().decide(dataclasses.replace(FULL, **change))
    assert d == SamplingDecision(
        recall=recall_reason is None,
        judge=judge_reason is None,
        recall_reason=recall_reason,
        judge_reason=judge_reason,
    )
    assert d.reason == (judge_reason or recall_reason)
    assert {r for r in (recall_reason, judge_reason) if r} <= SKIP_REASONS


def test_truncated_context_can_be_judged_on_request() -> None:
    cfg = SamplerConfig(judge_truncated_context=True)
    assert Sampler(cfg).decide(dataclasses.replace(FULL, context_truncated=True)).judge


def test_first_matching_rule_wins_and_unset_rates_inherit() -> None:
    rules = (
        SamplingRule(
            {"service": "support-*", "http.route": "/admin*"}, judge_rate=0.0, name="admin"
        ),
        SamplingRule({"tenant": "acme"}, recall_rate=0.0),
        SamplingRule({"service": "support-bot"}, recall_rate=1.0, judge_rate=1.0),
    )
    sampler = Sampler(SamplerConfig(recall_rate=1.0, judge_rate=1.0, rules=rules))
    assert sampler.decide(FULL) == SamplingDecision(
        recall=False, judge=True, recall_reason="sampled_out", rule="tenant=acme"
    )
    admin = dataclasses.replace(FULL, attributes={"http.route": "/admin/users", "tenant": "acme"})
    assert sampler.decide(admin) == SamplingDecision(
        recall=True, judge=False, judge_reason="sampled_out", rule="admin"
    )
    other = dataclasses.replace(FULL, attributes={})
    assert sampler.decide(other).rule == "service=support-bot"
    missing_key = dataclasses.replace(FULL, service="x", attributes={})
    assert sampler.decide(missing_key).rule is None


def test_rule_fields_pipeline_and_model() -> None:
    rule = SamplingRule({"pipeline": "supp*", "model": "m"})
    assert rule.matches(FULL)
    assert not rule.matches(dataclasses.replace(FULL, pipeline=None))
    assert not SamplingRule({"model": "M"}).matches(FULL)  # case-sensitive


def test_bad_configuration_raises() -> None:
    with pytest.raises(ValueError, match="recall_rate must be between 0 and 1, got 1.5"):
        SamplerConfig(recall_rate=1.5)
    with pytest.raises(ValueError, match="judge_rate must be between 0 and 1, got -0.1"):
        SamplingRule({"a": "b"}, judge_rate=-0.1)
    with pytest.raises(ValueError, match="a sampling rule needs at least one match pattern"):
        SamplingRule({})
    with pytest.raises(TypeError, match="rules must be SamplingRule values"):
        SamplerConfig(rules=({"a": "b"},))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a sampled step has no skip reason"):
        SamplingDecision(recall=True, judge=True, recall_reason="x")


def test_parse_rules() -> None:
    rules = parse_rules(
        [
            {"match": {"service": "a*"}, "judge_rate": 0.5, "name": "a"},
            {"match": {"tenant": 7}, "recall_rate": 1},
        ]
    )
    assert rules == (
        SamplingRule({"service": "a*"}, judge_rate=0.5, name="a"),
        SamplingRule({"tenant": "7"}, recall_rate=1.0),
    )
    with pytest.raises(TypeError, match=r"rules\[0\]: expected a mapping, got list"):
        parse_rules([[]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"rules\[0\]: unknown keys \['rate'\]"):
        parse_rules([{"match": {"a": "b"}, "rate": 1}])
    with pytest.raises(TypeError, match=r"sampling\[1\].match: expected a mapping"):
        parse_rules([{"match": {"a": "b"}}, {"match": "x"}], where="sampling")
    with pytest.raises(ValueError, match=r"rules\[0\]: rate must be a number, got 'x'"):
        parse_rules([{"match": {"a": "b"}, "judge_rate": "x"}])
    with pytest.raises(ValueError, match=r"rules\[0\]: judge_rate must be between 0 and 1"):
        parse_rules([{"match": {"a": "b"}, "judge_rate": 2}])
