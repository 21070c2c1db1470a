"""Sampling at decode: what the EarlySampler drops the Sampler would never have sampled, and what
it keeps is what a rate or a label can still select."""

from __future__ import annotations

import dataclasses
from typing import Any

from ragtrace import semconv
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.intake.admission import EarlySampler, LabelDigests
from ragtrace_consumers.intake.decode import decode_request
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.label_match import match_label
from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig, SamplingRule, trace_position
from ragtrace_consumers.stores.memory import MemoryLabelStore, MemoryTraceStore
from tests.otlp_requests import records_request
from tests.store_appends import append_read
from tests.unit.consumers.scoring_helpers import rag_spans, tid

LABELLED_QUERY = "Which regions can workspace data be hosted in?"


def _labels() -> MemoryLabelStore:
    return MemoryLabelStore(
        [
            LabelledQuestion("q-1", "How long are audit logs kept?", frozenset({"c-1"})),
            LabelledQuestion("q-2", LABELLED_QUERY, frozenset({"c-2"})),
        ]
    )


def _with(spans: list[SpanRecord], name: str, **attrs: Any) -> list[SpanRecord]:
    """``spans`` with ``attrs`` added to the span called ``name``."""
    return [
        dataclasses.replace(s, attributes={**s.attributes, **attrs}) if s.name == name else s
        for s in spans
    ]


def _trace(n: int) -> list[SpanRecord]:
    """A varied trace: some name a question ID, some ask a labelled question, some carry a
    tenant attribute a rule matches."""
    query = LABELLED_QUERY if n % 5 == 0 else f"An unlabelled question number {n}?"
    spans = rag_spans(n, query=query, question_id="q-1" if n % 7 == 0 else None)
    if n % 3 == 0:
        spans = _with(spans, semconv.SPAN_PIPELINE, tenant="gold-7")
    return spans


CONFIG = SamplerConfig(
    recall_rate=0.6,
    judge_rate=0.1,
    rules=(
        SamplingRule({"tenant": "gold*"}, judge_rate=0.5),
        SamplingRule({"pipeline": "other"}, recall_rate=0.9),
    ),
)


def test_never_drops_a_trace_the_sampler_would_sample() -> None:
    labels = _labels()
    early = EarlySampler(CONFIG, LabelDigests(labels))
    sampler = Sampler(CONFIG)
    dropped = 0
    for n in range(1, 1201):
        spans = _trace(n)
        decision = sampler.decide(to_rag_trace(spans))  # type: ignore[arg-type]
        labelled = match_label(to_rag_trace(spans), labels)[0] is not None  # type: ignore[arg-type]
        wanted = decision.judge or (decision.recall and labelled)
        kept = early.admit_records(spans)
        assert kept in ([], spans)
        if wanted:
            assert kept == spans, n
        dropped += not kept
    assert early.dropped == dropped and early.kept == 1200 - dropped
    # Everything outside every rate and unlabelled goes: the unlabelled, untenanted traces above
    # the default judge rate are more than half of all.
    assert dropped > 500


def test_the_decision_follows_the_trace_position_and_labels() -> None:
    early = EarlySampler(SamplerConfig(recall_rate=1.0, judge_rate=0.1), LabelDigests(_labels()))
    for n in range(1, 400):
        u = trace_position(tid(n))
        plain = rag_spans(n, query=f"Unlabelled {n}?")
        assert bool(early.admit_records(plain)) == (u < 0.1)
        # Labelled by its query's digest, or by a question ID: recall may score it.
        assert early.admit_records(rag_spans(n, query=LABELLED_QUERY))
        assert early.admit_records(rag_spans(n, query=f"Other {n}?", question_id="q-x"))


def test_a_rule_whose_attribute_has_not_arrived_keeps_the_trace() -> None:
    config = SamplerConfig(
        recall_rate=0.0, judge_rate=0.0, rules=(SamplingRule({"tenant": "gold*"}, judge_rate=1.0),)
    )
    early = EarlySampler(config)
    n = 5
    children = rag_spans(n, root=False)  # the tenant is on the pipeline span, not here yet
    assert early.admit_records(children) == children
    other = _with(rag_spans(n), semconv.SPAN_PIPELINE, tenant="silver")
    assert early.admit_records(other) == []
    gold = _with(rag_spans(n), semconv.SPAN_PIPELINE, tenant="gold-1")
    assert early.admit_records(gold) == gold


def test_a_rule_on_an_instrumentor_namespace_decides_as_the_sampler_does() -> None:
    """Rules match user attributes only: a key in a dialect's own namespace (here Langfuse's) is
    never a user attribute, at decode as in the Sampler, so neither samples by it."""
    config = SamplerConfig(
        recall_rate=0.0,
        judge_rate=0.0,
        rules=(SamplingRule({"langfuse.trace.name": "gold*"}, judge_rate=1.0),),
    )
    spans = _with(rag_spans(5), semconv.SPAN_PIPELINE, **{"langfuse.trace.name": "gold-1"})
    assert Sampler(config).decide(to_rag_trace(spans)).judge is False  # type: ignore[arg-type]
    assert EarlySampler(config).admit_records(spans) == []


def test_label_digests_follow_the_label_store() -> None:
    labels = MemoryLabelStore()
    now = [0.0]
    digests = LabelDigests(labels, refresh_s=10, clock=lambda: now[0])
    early = EarlySampler(SamplerConfig(recall_rate=1.0, judge_rate=0.0), digests)
    spans = rag_spans(3, query=LABELLED_QUERY)
    assert early.admit_records(spans) == []
    labels.load(_labels().questions())
    assert early.admit_records(spans) == []  # not re-read before refresh_s
    now[0] = 11.0
    assert early.admit_records(spans) == spans


def _request(traces: list[list[SpanRecord]]) -> bytes:
    return records_request(
        [s for spans in traces for s in spans],
        service="rag-app",
        scope=semconv.INSTRUMENTATION_SCOPE,
    )


def test_decode_drops_before_building_records_and_reports_per_batch() -> None:
    reports: list[tuple[str, int]] = []
    early = EarlySampler(
        SamplerConfig(recall_rate=1.0, judge_rate=0.2),
        LabelDigests(_labels()),
        report=lambda service, n: reports.append((service, n)),
    )
    traces = [_trace(n) for n in range(1, 201)]
    payload = _request(traces)
    everything = decode_request(payload)
    kept = decode_request(payload, early)
    assert kept == [s for s in everything if s.trace_id in {k.trace_id for k in kept}]
    kept_ids = {s.trace_id for s in kept}
    for spans in traces:
        by_rate = trace_position(spans[0].trace_id) < 0.2
        labelled = any(
            semconv.RAGTRACE_QUESTION_ID in s.attributes
            or s.attributes.get(semconv.INPUT_VALUE) == LABELLED_QUERY
            for s in spans
        )
        assert (spans[0].trace_id in kept_ids) == (by_rate or labelled)
    early.flush()
    assert reports == [("rag-app", 200 - len(kept_ids))]
    # Dropped traces never reach the store: nothing is created for them.
    store = MemoryTraceStore()
    append_read(store, kept, {})
    assert store.stats()["traces_created"] == len(kept_ids)
