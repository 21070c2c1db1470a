"""Batch judge mode through the Pipeline: the trace parks, its request goes out in a Message
Batch (the real client against the fake API's batches endpoints), a restarted poller finds the
batch in the store, caches the result, and the trace is scored at half the realtime cost."""

from __future__ import annotations

from typing import Any

from ragtrace import semconv
from ragtrace.evaluation.judges import AnthropicJudge, make_judge
from ragtrace.evaluation.judges.model.anthropic_batch import BATCH_PRICE_FACTOR, AnthropicBatchJudge
from ragtrace_consumers.scoring.batch_judging import (
    PARK_BATCH_PENDING,
    BatchJudging,
    build_batch_judging,
    custom_id,
)
from ragtrace_consumers.scoring.pipeline import Outcome, Pipeline
from ragtrace_consumers.stores.memory import MemoryBatchStore
from tests.fakes.anthropic_server import FakeAnthropic, entail_all
from tests.unit.consumers.scoring_helpers import T0, rag_spans, rig


def _batched(
    r: Any, judge: AnthropicJudge, store: MemoryBatchStore, *, poll_every_s: float
) -> tuple[BatchJudging, Pipeline]:
    """The rig's pipeline with ``judge`` in batch mode: it submits at once and polls every
    ``poll_every_s``."""
    batch = BatchJudging(
        AnthropicBatchJudge(judge),
        store,
        r.cache,
        r.metrics,
        submit_every_s=1e-9,
        poll_every_s=poll_every_s,
    )
    p = r.pipeline
    return batch, Pipeline(
        traces=r.traces,
        labels=r.labels,
        cache=r.cache,
        idempotency=r.idempotency,
        budget=r.budget,
        judge=judge,
        sink=r.sink,
        metrics=r.metrics,
        sampler=p.sampler,
        settings=p.settings,
        clock=r.clock,
        judge_batch=batch,
    )


def test_a_trace_waits_for_its_batch_and_is_scored_at_half_price() -> None:
    with FakeAnthropic(entail_all) as api:
        api.batches.processing_s = 3600  # runs until the "restart" below
        judge = AnthropicJudge(api_key="k", base_url=api.base_url)
        r = rig()
        r.clock.now = T0 + 1
        store = MemoryBatchStore()
        batch, pipeline = _batched(r, judge, store, poll_every_s=1e-9)
        spans = rag_spans(1)
        pipeline.ingest(spans)
        (lease,) = pipeline.claim_due()
        assert pipeline.process_trace(lease) is Outcome.PARKED
        assert not any(q.path == "/v1/messages" for q in api.requests)  # no realtime call
        batch.tick()  # submits
        assert len(store.pending_batches()) == 1 and len(api.batches.batches) == 1

        # Claimed again before the batch is read: parked again, nothing submitted twice.
        r.clock.now += 31
        (lease,) = pipeline.claim_due()
        assert pipeline.process_trace(lease) is Outcome.PARKED
        batch.tick()  # polls: still running
        assert len(store.pending_batches()) == 1 and len(api.batches.batches) == 1

        # A restarted replica: a new poller over the same store reads the ended batch.
        api.batches.processing_s = 0
        restarted = BatchJudging(
            AnthropicBatchJudge(judge), store, r.cache, r.metrics, poll_every_s=1e-9
        )
        restarted.tick()
        assert store.pending_batches() == [] and len(api.batches.batches) == 1
        r.clock.now += 61
        (lease,) = pipeline.claim_due()
        assert pipeline.process_trace(lease) is Outcome.SCORED

        (evaluation,) = [s for s in r.spans() if s.name == semconv.SPAN_EVALUATION]
        realtime = judge.groundedness(
            str((spans[1].attributes or {})[semconv.OUTPUT_VALUE]),
            [
                t
                for _, t in (
                    ("c-1", "Audit logs are kept 90 days."),
                    ("c-2", "Logs are deleted nightly."),
                )
            ],
        )
        assert realtime.cost_usd > 0
        assert (evaluation.attributes or {})[
            semconv.EVAL_JUDGE_COST_USD
        ] == BATCH_PRICE_FACTOR * realtime.cost_usd
        parked = r.points(semconv.METRIC_PARKED)
        assert parked[((semconv.ATTR_REASON, PARK_BATCH_PENDING),)] == 2


def test_the_same_answer_is_submitted_once_and_batch_mode_needs_the_anthropic_judge() -> None:
    with FakeAnthropic(entail_all) as api:
        judge = AnthropicJudge(api_key="k", base_url=api.base_url)
        r = rig()
        store = MemoryBatchStore()
        batch, pipeline = _batched(r, judge, store, poll_every_s=3600)
        r.clock.now = T0 + 1
        for n in (1, 2, 3):  # same answer and context: one cache key
            pipeline.ingest(rag_spans(n))
        leases = pipeline.claim_due()
        assert len(leases) == 3
        works = pipeline.prepare(leases)
        for work in works:
            pipeline.judge(work)
        assert pipeline.finish(works) == [Outcome.PARKED] * 3
        batch.tick()
        (created,) = [q for q in api.requests if q.method == "POST"]
        (item,) = created.body["requests"]
        job = works[0].job
        assert job is not None
        assert item["custom_id"] == custom_id(job.key)
    try:
        build_batch_judging(make_judge("lexical"), store, r.cache, r.metrics)
    except ValueError as exc:
        assert "anthropic" in str(exc)
    else:
        raise AssertionError("batch mode accepted the lexical judge")


def test_the_embedded_evaluator_refuses_batch_mode(tmp_path: Any) -> None:
    from ragtrace_consumers.config import ConfigError, load_config
    from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator

    config = load_config(None, env={"RAGTRACE_JUDGE_MODE": "batch"})
    assert config.judge.mode == "batch"
    try:
        EmbeddedEvaluator(
            config.replace(serve={"state": tmp_path / "s.sqlite3", "port": 0, "metrics": False})
        )
    except ConfigError as exc:
        assert "judge.mode" in str(exc)
    else:
        raise AssertionError("serve accepted judge.mode batch")
    assert not (tmp_path / "s.sqlite3").exists()


def test_a_batch_unknown_to_the_api_is_dropped_from_the_store() -> None:
    with FakeAnthropic(entail_all) as api:
        judge = AnthropicJudge(api_key="k", base_url=api.base_url)
        r = rig()
        store = MemoryBatchStore()
        store.add_batch(
            "msgbatch_gone",
            {
                "a" * 64: b'{"key": "groundedness:'
                + b"a" * 64
                + b'", "trace_id": "t", "answer": "x", "context": []}'
            },
        )
        BatchJudging(
            AnthropicBatchJudge(judge), store, r.cache, r.metrics, poll_every_s=1e-9
        ).tick()
        assert store.pending_batches() == [] and store.submitted(["a" * 64]) == [False]
