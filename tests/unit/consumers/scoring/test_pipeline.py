"""The Pipeline over in-memory stores, an in-memory span exporter and metric reader: the whole
scoring path, replays, the crash window, parking, and bounded concurrency."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.evaluation.judges import GroundednessResult, JudgeUnavailable
from ragtrace_consumers.model import FAMILY_GROUNDEDNESS, FAMILY_RECALL, AttributeValue, SpanRecord
from ragtrace_consumers.scoring.pipeline import Outcome, PipelineSettings
from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig
from ragtrace_consumers.scoring.workers import UNBUDGETED_CAPACITY, ScoringWorkers
from ragtrace_consumers.writeback.span_content import evaluation_span_id
from tests.evaluation_names import RETRIEVAL_RESULTS
from tests.in_flight import InFlight
from tests.span_ids import parent_id_of, span_id_of, trace_id_of
from tests.unit.consumers.ingestion_spans import GEN, RET, ROOT, record
from tests.unit.consumers.readers.test_genai_logs import ANSWER, CONTEXT, older_input_events
from tests.unit.consumers.scoring_helpers import (
    MODEL,
    T0,
    FailingExporter,
    Rig,
    ScriptedJudge,
    grounded,
    rag_spans,
    rig,
    root_span_id,
    tid,
)

SVC = (("pipeline", "support"), ("service", "rag-app"))


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _events(r: Rig, span: ReadableSpan) -> dict[str, dict[str, Any]]:
    """Every gen_ai.evaluation.result of the summary span's trace, by metric: they sit on the
    per-family spans, each under the span it evaluates (at most one event per metric)."""
    trace_id = trace_id_of(span)
    events = [e for m in r.metric_spans() if trace_id_of(m) == trace_id for e in m.events]
    out = {
        str(a[semconv.GEN_AI_EVALUATION_NAME]): a
        for a in (dict(e.attributes or {}) for e in events)
    }
    assert len(out) == len(events)
    assert not span.events
    return out


def test_labelled_trace_scored_end_to_end() -> None:
    r = rig(grounded(1, 2, cost=0.004))
    assert r.pipeline.ingest(rag_spans(1), T0) == 3
    # The root arrived: due at once.
    assert r.pipeline.process_due(T0) == 1
    (span,) = r.spans()
    assert trace_id_of(span) == tid(1)
    assert parent_id_of(span) == root_span_id(1)
    assert span_id_of(span) == evaluation_span_id(tid(1), [FAMILY_RECALL, FAMILY_GROUNDEDNESS])
    a = _attrs(span)
    assert a[semconv.EVAL_RECALL] == 0.5  # c-1 of gold {c-1, c-9}
    assert a[semconv.EVAL_QUESTION_ID] == "q-audit"
    assert a[semconv.EVAL_MATCHED_BY] == "query_text"
    assert a[semconv.EVAL_LABELS_VERSION] == r.labels.version() != ""
    assert a[semconv.EVAL_GROUNDEDNESS] == 0.5
    assert a[semconv.EVAL_CELL] == "generation_failed"
    assert a[semconv.EVAL_JUDGE_COST_USD] == 0.004
    assert set(_events(r, span)) == {*RETRIEVAL_RESULTS, "groundedness"}
    assert r.judge.calls == [
        (
            "Audit logs are kept 90 days.",
            ("Audit logs are kept 90 days.", "Logs are deleted nightly."),
        )
    ]
    assert r.idempotency.written(tid(1), FAMILY_RECALL)
    assert r.idempotency.written(tid(1), FAMILY_GROUNDEDNESS)
    assert r.traces.pending() == 0
    assert r.points("ragtrace.traces.seen")[SVC] == 1
    assert r.points("ragtrace.traces.sampled")[SVC] == 1
    assert r.points("ragtrace.traces.scored")[SVC] == 1
    # The cell counter carries the judge, the cut-off and the app's model.
    generation_failed = (
        ("cell", "generation_failed"),
        ("judge_model", MODEL),
        ("k", "5"),
        ("model", "gen-model"),
        *SVC,
    )
    assert r.points("ragtrace.attribution")[generation_failed] == 1
    # The retrieval span names no gen_ai.data_source.id: "unknown"; the generator is "gen-model".
    retrieval_key = (("data_source", "unknown"), ("k", "5"), *SVC)
    assert r.points("ragtrace.recall")[retrieval_key].sum == 0.5
    assert r.points("ragtrace.hit_rate")[retrieval_key].sum == 1.0
    assert r.points("ragtrace.reciprocal_rank")[retrieval_key].sum == 1.0
    judged_key = (("judge_model", MODEL), ("model", "gen-model"), *SVC)
    assert r.points("ragtrace.groundedness")[judged_key].sum == 0.5
    # 0.5 is below the 0.8 threshold: one judged trace, one not grounded, same attributes.
    assert r.points("ragtrace.groundedness.failed")[judged_key] == 1
    assert a[semconv.EVAL_GENERATOR_MODEL] == "gen-model"
    assert semconv.GEN_AI_DATA_SOURCE_ID not in a
    delay = r.points("ragtrace.scoring.delay")[(("service", "rag-app"),)]
    assert delay.count == 1 and delay.sum == 0.0  # the fake clock did not move


def _declaring_top_k(spans: list[SpanRecord], k: int) -> list[SpanRecord]:
    """``spans`` with the retriever declaring ``gen_ai.request.top_k`` = ``k``, as
    ``@ragtrace.retrieve(top_k=k)`` records it."""
    return [
        replace(s, attributes={**s.attributes, semconv.GEN_AI_REQUEST_TOP_K: k})
        if s.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SpanKind.RETRIEVER
        else s
        for s in spans
    ]


@pytest.mark.parametrize(("k_from_trace", "k", "recall"), [(True, 1, 0.0), (False, 5, 0.5)])
def test_the_retrievers_declared_top_k_is_the_cutoff_unless_pinned(
    k_from_trace: bool, k: int, recall: float
) -> None:
    settings = PipelineSettings(quiet_s=5.0, lease_s=60.0, k_from_trace=k_from_trace)
    r = rig(grounded(1, 1), settings=settings)
    # c-1 (gold) is rank 2: outside a declared top 1, inside the configured k = 5
    retrieved = (("c-2", "Logs are deleted nightly."), ("c-1", "Audit logs are kept 90 days."))
    r.pipeline.ingest(_declaring_top_k(rag_spans(1, retrieved=retrieved), 1), T0)
    assert r.pipeline.process_due(T0) == 1
    (span,) = r.spans()
    a = _attrs(span)
    assert (a[semconv.EVAL_K], a[semconv.EVAL_RECALL]) == (k, recall)
    key = (("data_source", "unknown"), ("k", str(k)), *SVC)
    assert r.points("ragtrace.recall")[key].sum == recall
    assert r.points("ragtrace.hit_rate")[key].sum == (1.0 if recall else 0.0)


def test_matching_by_question_id() -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(2, query="something else", question_id="q-audit"), T0)
    r.pipeline.process_due(T0)
    (span,) = r.spans()
    assert _attrs(span)[semconv.EVAL_MATCHED_BY] == "question_id"


def test_unlabelled_trace_gets_groundedness_only() -> None:
    r = rig(grounded(1, 1))
    r.pipeline.ingest(rag_spans(3, query="Not a labelled question"), T0)
    assert r.pipeline.process_due(T0) == 1
    (span,) = r.spans()
    a = _attrs(span)
    assert a[semconv.EVAL_CELL] == "unlabelled"
    assert a[semconv.EVAL_GROUNDEDNESS] == 1.0
    assert semconv.EVAL_RECALL not in a
    assert set(_events(r, span)) == {"groundedness"}
    assert span_id_of(span) == evaluation_span_id(tid(3), [FAMILY_GROUNDEDNESS])
    assert not r.idempotency.written(tid(3), FAMILY_RECALL)


def test_unanswerable_question_is_written_without_a_recall_value() -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(4, query="What is the meaning of life?"), T0)
    r.pipeline.process_due(T0)
    (span,) = r.spans()
    events = _events(r, span)
    assert events["recall"][semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "unanswerable"
    assert events["declined"][semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "answered"
    assert _attrs(span)[semconv.EVAL_CELL] == "unanswerable_answered"
    assert r.points("ragtrace.recall") == {}


def test_an_unanswerable_question_declined_is_its_own_cell() -> None:
    r = rig()
    answer = "I'm sorry, I cannot find that in the documentation. Please contact support."
    r.pipeline.ingest(rag_spans(4, query="What is the meaning of life?", answer=answer), T0)
    r.pipeline.process_due(T0)
    (span,) = r.spans()
    declined = _events(r, span)["declined"]
    assert declined[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "declined"
    assert declined[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    assert _attrs(span)[semconv.EVAL_CELL] == "unanswerable_declined"
    # Summed over the model, k and judge labels, as an alert's ``sum by (cell)`` does.
    cells: dict[str, float] = {}
    for key, n in r.points("ragtrace.attribution").items():
        attrs = {name: str(value) for name, value in key}
        if (attrs["pipeline"], attrs["service"]) == (SVC[0][1], SVC[1][1]):
            cells[attrs["cell"]] = cells.get(attrs["cell"], 0) + float(n)
    assert (cells["unanswerable_declined"], cells["unanswerable_answered"]) == (1, 0)


def test_completion_waits_for_the_quiet_period_without_a_root() -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(5, root=False), T0)
    assert r.pipeline.process_due(T0 + 4.9) == 0
    assert r.pipeline.process_due(T0 + 5.0) == 1
    assert len(r.spans()) == 1
    # The generation span is the target when there is no pipeline span.
    assert parent_id_of(r.spans()[0]) == f"{5 * 10 + 3:016x}"


def test_a_replayed_trace_is_never_scored_twice() -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(6), T0)
    r.pipeline.process_due(T0)
    # Kafka redelivers the same message (offsets not committed before a crash).
    r.pipeline.ingest(rag_spans(6), T0 + 1)
    assert r.pipeline.process_due(T0 + 100) == 0
    assert len(r.spans()) == 1 and len(r.judge.calls) == 1


def test_spans_delivered_twice_before_scoring_score_as_once() -> None:
    """A replayed message, or the collector's two exporters when only one queued a request the
    app then sent again: the same spans twice in the store, scored as if sent once."""
    once, twice = rig(grounded(1, 2)), rig(grounded(1, 2))
    once.pipeline.ingest(rag_spans(6), T0)
    twice.pipeline.ingest(rag_spans(6), T0)
    twice.pipeline.ingest(rag_spans(6), T0)
    assert once.pipeline.process_due(T0) == twice.pipeline.process_due(T0) == 1
    (a,), (b,) = once.spans(), twice.spans()
    assert b.to_json() == a.to_json()
    assert twice.judge.calls == once.judge.calls


def test_already_written_families_are_skipped_on_a_fresh_store() -> None:
    # Another replica wrote both scores, then the spans reached a store that forgot them.
    r = rig()
    r.idempotency.mark_written(tid(7), FAMILY_RECALL)
    r.idempotency.mark_written(tid(7), FAMILY_GROUNDEDNESS)
    r.pipeline.ingest(rag_spans(7), T0)
    r.pipeline.process_due(T0)
    assert r.spans() == [] and r.judge.calls == []
    assert (
        r.points("ragtrace.traces.skipped")[
            (("pipeline", "support"), ("reason", "already_scored"), ("service", "rag-app"))
        ]
        == 1
    )


def test_crash_window_replay_yields_the_identical_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """Delivered, then the replica died before marking the keys: the retry (after the lease)
    re-sends exactly the same span, the judge result coming from the cache."""
    r = rig(grounded(1, 2))
    r.pipeline.ingest(rag_spans(8), T0)
    (trace_id,) = r.pipeline.claim_due(T0)
    original_mark = r.idempotency.mark_written

    def die(*_: object) -> None:
        raise SystemExit("killed")

    monkeypatch.setattr(r.idempotency, "mark_written", die)
    with pytest.raises(SystemExit):
        r.pipeline.process_trace(trace_id)
    monkeypatch.setattr(r.idempotency, "mark_written", original_mark)
    assert r.pipeline.process_due(T0 + 30) == 0  # still leased
    assert r.pipeline.process_due(T0 + 61) == 1  # lease ran out: due again
    first, second = r.spans()
    assert first.to_json() == second.to_json()
    assert len(r.judge.calls) == 1


def test_a_replica_whose_lease_ran_out_cannot_release_the_new_claimants_work() -> None:
    r = rig(grounded(1, 1))
    r.pipeline.ingest(rag_spans(12), T0)
    (slow,) = r.pipeline.claim_due(T0)
    (taken_over,) = r.pipeline.claim_due(T0 + 61)  # the first lease (60 s) ran out
    assert slow.trace_id == taken_over.trace_id == tid(12)
    assert r.pipeline.process_trace(slow) is Outcome.SCORED  # it still writes its score...
    assert r.traces.pending() == 1  # ...but leaves the trace to the current claimant
    assert r.pipeline.process_trace(taken_over) is Outcome.SKIPPED  # already scored
    assert r.traces.pending() == 0 and len(r.spans()) == 1 and len(r.judge.calls) == 1
    stats = r.traces.stats()
    assert (stats["released"], stats["lease_lost"], stats["lease_expired"]) == (1, 1, 1)


def test_unavailable_judge_parks_at_once_then_scores_on_retry() -> None:
    r = rig(JudgeUnavailable("529", retry_after=45.0), grounded(1, 1))
    r.pipeline.ingest(rag_spans(9), T0)
    (trace_id,) = r.pipeline.claim_due(T0)
    assert r.pipeline.process_trace(trace_id) is Outcome.PARKED
    # one call: the judge owns its retries, the scorer does not loop again on top
    assert r.spans() == [] and len(r.judge.calls) == 1
    assert r.points("ragtrace.traces.parked")[(("reason", "judge_unavailable"),)] == 1
    assert r.pipeline.process_due(T0 + 44) == 0  # retry after the API's 45 s
    assert r.pipeline.process_due(T0 + 45) == 1
    (span,) = r.spans()
    assert _attrs(span)[semconv.EVAL_CELL] == "fine"


def test_a_judge_never_coming_back_is_given_up_after_the_age_limit() -> None:
    settings = PipelineSettings(lease_s=60.0, give_up_after_s=100.0)
    judge = ScriptedJudge(*[JudgeUnavailable("down")] * 10)
    r = rig(judge=judge, settings=settings)
    r.pipeline.ingest(rag_spans(10, end_s=T0), T0)
    r.clock.now = T0 + 150  # the trace is older than give_up_after_s
    assert r.pipeline.process_due(T0 + 150) == 1
    (span,) = r.spans()
    a = _attrs(span)
    assert a[semconv.EVAL_CELL] == "unjudged" and semconv.EVAL_GROUNDEDNESS not in a
    assert set(_events(r, span)) == set(RETRIEVAL_RESULTS)
    assert not r.idempotency.written(tid(10), FAMILY_GROUNDEDNESS)
    assert (
        r.points("ragtrace.traces.skipped")[
            (("pipeline", "support"), ("reason", "judge_gave_up"), ("service", "rag-app"))
        ]
        == 0
    )
    # Scored (recall written), so not a skipped trace; the cell says what is missing.
    unjudged = (
        ("cell", "unjudged"),
        ("judge_model", "unknown"),
        ("k", "5"),
        ("model", "gen-model"),
        *SVC,
    )
    assert r.points("ragtrace.attribution")[unjudged] == 1


def test_failed_write_back_parks_and_marks_nothing() -> None:
    r = rig(exporter=FailingExporter())
    r.pipeline.ingest(rag_spans(11), T0)
    (trace_id,) = r.pipeline.claim_due(T0)
    assert r.pipeline.process_trace(trace_id) is Outcome.PARKED
    assert not r.idempotency.written(tid(11), FAMILY_RECALL)
    assert r.points("ragtrace.traces.parked")[(("reason", "writeback_failed"),)] == 1
    assert r.traces.pending() == 1


def test_budget_exhausted_scores_recall_only() -> None:
    r = rig(calls_per_minute=0)
    r.pipeline.ingest(rag_spans(12), T0)
    r.pipeline.process_due(T0)
    (span,) = r.spans()
    assert _attrs(span)[semconv.EVAL_CELL] == "unjudged"
    assert r.judge.calls == []
    assert r.points("ragtrace.judge.budget.exhausted")[(("service", "rag-app"),)] == 1


def test_unlabelled_and_budget_exhausted_means_skipped() -> None:
    r = rig(calls_per_minute=0)
    r.pipeline.ingest(rag_spans(13, query="unlabelled"), T0)
    r.pipeline.process_due(T0)
    assert r.spans() == []
    assert (
        r.points("ragtrace.traces.skipped")[
            (("pipeline", "support"), ("reason", "budget_exhausted"), ("service", "rag-app"))
        ]
        == 1
    )


def test_a_free_judge_calls_no_model_so_records_no_usage_or_genai_client_metrics() -> None:
    class FreeJudge(ScriptedJudge):
        paid = False  # as the lexical judge declares

    paid, free = rig(), rig(judge=FreeJudge())
    for r in (paid, free):
        r.pipeline.ingest(rag_spans(17), T0)
        assert r.pipeline.process_due(T0) == 1
        assert r.points("ragtrace.judge.calls")[(("judge_model", MODEL), ("outcome", "ok"))] == 1
    usage = (
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "ragtrace.judge.latency",
    )
    assert all(paid.points(name) for name in usage)
    assert not any(free.points(name) for name in usage)


def test_one_judge_call_for_a_repeated_answer() -> None:
    r = rig()
    for n in (14, 15, 16):
        r.pipeline.ingest(rag_spans(n), T0)
    assert r.pipeline.process_due(T0) == 3
    assert len(r.judge.calls) == 1 and len(r.spans()) == 3
    assert r.points("ragtrace.judge.calls")[(("judge_model", MODEL), ("outcome", "cached"))] == 2
    costs = sorted(_attrs(s)[semconv.EVAL_JUDGE_COST_USD] for s in r.spans())
    assert costs == [0.0, 0.0, 0.002]


def test_sampled_out_and_non_rag_traces_are_skipped_with_their_reason() -> None:
    r = rig(sampler=Sampler(SamplerConfig(recall_rate=0.0, judge_rate=0.0)))
    r.pipeline.ingest(rag_spans(17), T0)
    r.pipeline.process_due(T0)
    assert r.spans() == []
    assert (
        r.points("ragtrace.traces.skipped")[
            (("pipeline", "support"), ("reason", "sampled_out"), ("service", "rag-app"))
        ]
        == 1
    )
    assert r.points("ragtrace.traces.sampled")[SVC] == 0


def test_no_generation_means_recall_only() -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(18, answer=None), T0)
    # The root came without a generation: it may still be on its way, so the trace waits the
    # idle period, not the quiet one.
    assert r.pipeline.process_due(T0 + 59) == 0
    assert r.pipeline.process_due(T0 + 60) == 1
    (span,) = r.spans()
    assert _attrs(span)[semconv.EVAL_CELL] == "unjudged" and r.judge.calls == []


def test_our_own_evaluation_spans_are_never_ingested() -> None:
    r = rig()
    ev = SpanRecord(
        tid(19),
        "f" * 16,
        root_span_id(19),
        semconv.SPAN_EVALUATION,
        semconv.EVALUATION_SCOPE,
        "ragtrace-consumer",
        1,
        2,
        {semconv.EVAL_MARKER: True},
    )
    assert r.pipeline.ingest([ev], T0) == 0
    assert r.traces.pending() == 0


def test_without_a_judge_only_recall_is_scored() -> None:
    r = rig(with_judge=False)
    r.pipeline.ingest(rag_spans(20), T0)
    r.pipeline.process_due(T0)
    (span,) = r.spans()
    assert _attrs(span)[semconv.EVAL_CELL] == "unjudged"


def test_workers_bound_concurrency_and_report_backpressure() -> None:
    gate = threading.Event()
    r = rig(judge=ScriptedJudge(gate=gate, default=lambda a, c: grounded(1, 1)))
    for n in range(30, 36):  # six distinct answers: six judge calls
        r.pipeline.ingest(rag_spans(n, answer=f"answer {n}"), T0)
    workers = ScoringWorkers(r.pipeline, 2, depth=1)
    try:
        assert workers.capacity == 2
        assert workers.fill(T0) == 2
        assert workers.full and workers.in_flight == 2
        assert workers.fill(T0) == 0  # no room: nothing claimed
        assert r.traces.pending() == 6
        gate.set()
        while workers.in_flight or workers.fill(T0):
            workers.wait(1.0)
        assert workers.drain(5.0)
        assert workers.completed == 6 and workers.failed == 0
        assert len(r.spans()) == 6 and r.traces.pending() == 0
    finally:
        gate.set()
        workers.shutdown()


def test_a_judge_without_a_time_budget_is_called_on_the_preparing_thread_in_whole_claims() -> None:
    threads: set[str] = set()

    def judged(answer: str, context: object) -> GroundednessResult:
        threads.add(threading.current_thread().name)
        return grounded(1, 1)

    r = rig(judge=ScriptedJudge(default=judged))
    for n in range(100, 110):  # ten distinct answers: ten judge calls
        r.pipeline.ingest(rag_spans(n, answer=f"answer {n}"), T0)
    workers = ScoringWorkers(r.pipeline, 2, depth=1, budgeted=False)
    try:
        assert workers.capacity == UNBUDGETED_CAPACITY  # not 2 x 1: no lease to outlast
        assert workers.fill(T0) == 10  # one claim, not two traces
        assert workers.drain(5.0)
    finally:
        workers.shutdown()
    assert threads == {threading.current_thread().name}
    assert workers.completed == 10 and len(r.spans()) == 10 and r.traces.pending() == 0


class CountingExporter(InMemorySpanExporter):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def export(self, spans):  # type: ignore[no-untyped-def]
        self.batches.append(len(spans))
        return super().export(spans)


def test_workers_run_size_judge_calls_at_once_and_write_back_in_batches() -> None:
    gate = threading.Event()
    running = InFlight()

    def judged(answer: str, context: object) -> GroundednessResult:
        with running:
            gate.wait(10)
        return grounded(1, 1)

    exporter = CountingExporter()
    r = rig(judge=ScriptedJudge(default=judged), exporter=exporter)
    for n in range(50, 62):  # twelve distinct answers
        r.pipeline.ingest(rag_spans(n, answer=f"answer {n}"), T0)
    workers = ScoringWorkers(r.pipeline, 2, depth=3)
    try:
        assert workers.fill(T0) == 6  # claimed and prepared as one batch
        assert workers.full and r.traces.pending() == 12
        threading.Timer(0.2, gate.set).start()
        while workers.in_flight or workers.fill(T0):
            workers.wait(1.0)
        assert workers.drain(5.0)
    finally:
        gate.set()
        workers.shutdown()
    assert running.peak == 2  # never more judge calls than threads
    assert workers.completed == 12 and r.traces.pending() == 0
    # Per trace: the summary span plus one span per family (recall, groundedness).
    assert sum(exporter.batches) == 12 * 3 and len(exporter.batches) < 12


def test_a_repeated_answer_in_one_batch_is_judged_once() -> None:
    r = rig()
    for n in (70, 71, 72):
        r.pipeline.ingest(rag_spans(n), T0)
    assert r.pipeline.process_due(T0) == 3  # one batch
    assert len(r.judge.calls) == 1 and len(r.spans()) == 3
    costs = sorted(_attrs(s)[semconv.EVAL_JUDGE_COST_USD] for s in r.spans())
    assert costs == [0.0, 0.0, 0.002]  # the first trace paid; the others reused its score
    assert r.points("ragtrace.judge.calls")[(("judge_model", MODEL), ("outcome", "cached"))] == 2


def test_a_store_outage_in_a_worker_is_logged_and_the_trace_retried_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(40), T0)

    def broken(_: str) -> list[SpanRecord]:
        raise ConnectionError("redis down")

    original = r.traces.load
    monkeypatch.setattr(r.traces, "load", broken)
    workers = ScoringWorkers(r.pipeline, 1)
    try:
        assert workers.fill(T0) == 1
        assert workers.drain(5.0)
        assert workers.failed == 1
        monkeypatch.setattr(r.traces, "load", original)
        assert r.pipeline.process_due(T0 + 61) == 1  # the lease ran out
        assert len(r.spans()) == 1
    finally:
        workers.shutdown()


def test_an_agents_quiet_period_starts_at_its_answer_not_at_its_first_tool_call() -> None:
    """An agent's model call that only asked for tool calls does not start the quiet period:
    the tools and model calls after it may take longer, and the trace would be scored before
    its answer."""
    kind = semconv.OPENINFERENCE_SPAN_KIND
    scope = "openinference.instrumentation.openai_agents"
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."
    tool_turn: dict[str, AttributeValue] = {
        kind: "LLM",
        f"{call}id": "call_1",
        f"{call}function.name": "search",
        f"{call}function.arguments": '{"query": "audit log retention"}',
    }
    docs: dict[str, AttributeValue] = {
        kind: "RETRIEVER",
        "input.value": "audit log retention",
        "retrieval.documents.0.document.id": "c-1",
        "retrieval.documents.0.document.content": "Audit logs are kept for 90 days.",
    }
    answer: dict[str, AttributeValue] = {
        kind: "LLM",
        "llm.output_messages.0.message.content": "Audit logs are kept for 90 days.",
    }
    r = rig(with_judge=False)  # quiet period 5 s
    r.pipeline.ingest([record("1" * 16, parent=ROOT, scope=scope, attributes=tool_turn)], T0)
    assert r.pipeline.process_due(T0 + 6) == 0
    r.pipeline.ingest(
        [
            record(RET, parent=ROOT, scope=scope, attributes=docs),
            record(GEN, parent=ROOT, scope=scope, attributes=answer),
        ],
        T0 + 8,
    )
    assert r.pipeline.process_due(T0 + 12) == 0
    assert r.pipeline.process_due(T0 + 13) == 1


def test_input_log_events_reach_the_judge_through_the_store() -> None:
    """A GenAI input log event has no RAG role of its own, but what it records (the system
    context, the tool's documents) is the generation's evidence: it is stored whole, so the
    judge sees it on the live path as the view does."""
    r = rig(labels=())
    spans = older_input_events()
    assert r.pipeline.ingest(spans, T0) == 3
    assert r.pipeline.process_due(T0 + 10) == 1
    assert r.judge.calls == [(ANSWER, (ANSWER, CONTEXT))]
