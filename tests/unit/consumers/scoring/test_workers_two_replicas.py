"""A slow judge (429 + retry-after, then a slow answer) through the real pipeline on two replicas
sharing their stores: with a lease that passes ``check_lease`` no trace is judged twice; with a
lease sized without the judge's retries (the old arithmetic) traces are — the control that shows
the count can fail.

Each replica is a Pipeline with its own ScoringWorkers (1 thread, depth 2) and its own
AnthropicJudge talking to the wire-level fake API; the trace store, cache, idempotency store,
labels and call budget are shared, as Redis shares them between consumer replicas.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.evaluation.judges import AnthropicJudge, PriceTable
from ragtrace_consumers.config import ConfigError
from ragtrace_consumers.scoring.pipeline import Pipeline, PipelineSettings
from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig
from ragtrace_consumers.scoring.workers import ScoringWorkers, check_lease, lease_needed_s
from ragtrace_consumers.stores.memory import (
    MemoryIdempotencyStore,
    MemoryJudgeBudget,
    MemoryJudgeResultCache,
    MemoryLabelStore,
    MemoryTraceStore,
)
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
from tests.fakes.anthropic_server import FakeAnthropic, Reply, entail_all, rate_limited
from tests.unit.consumers.scoring_helpers import rag_spans, tid

DEPTH = 2
RETRY_AFTER_S = 0.4  # the first request of each judgement is rate limited...
ANSWER_DELAY_S = 0.4  # ...and the retry takes this long to answer
TIMEOUT_S = 1.0
BUDGET_S = 1.5
MARGIN_S = 0.5
TRACES = 4


class SlowApi:
    """Per trace: 429 with retry-after first, then slow 200s. Counts the 200s per trace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()

    def __call__(self, request: Mapping[str, Any]) -> Reply:
        answer = _answer_of(request)
        with self._lock:
            self.requests[answer] += 1
            first = self.requests[answer] == 1
            if not first:
                self.answered[answer] += 1
        if first:
            return rate_limited(RETRY_AFTER_S)
        reply = entail_all(request)
        reply.delay = ANSWER_DELAY_S
        return reply


def _answer_of(request: Mapping[str, Any]) -> str:
    """The trace's number, from its answer ("... for tenant N.")."""
    match = re.search(r"tenant (\d+)\.", str(request["messages"][0]["content"]))
    assert match is not None
    return match.group(1)


@dataclass
class Replica:
    pipeline: Pipeline
    workers: ScoringWorkers

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.workers.fill()
            self.workers.wait(0.05)
        self.workers.drain(10.0)
        self.workers.shutdown()


@pytest.fixture
def api() -> Iterator[tuple[FakeAnthropic, SlowApi]]:
    slow = SlowApi()
    with FakeAnthropic(responder=slow) as fake:
        yield fake, slow


def _run(api: FakeAnthropic, lease_s: float) -> InMemorySpanExporter:
    """Two replicas on shared stores; the first claims its traces before the second starts."""
    traces = MemoryTraceStore()
    shared: dict[str, Any] = {
        "traces": traces,
        "labels": MemoryLabelStore(),
        "cache": MemoryJudgeResultCache(),
        "idempotency": MemoryIdempotencyStore(),
        "budget": MemoryJudgeBudget(1000, 10**9),
    }
    exporter = InMemorySpanExporter()
    settings = PipelineSettings(quiet_s=0.0, lease_s=lease_s, park_backoff_s=30.0)
    now = time.time()
    replicas = []
    for _ in range(2):
        judge = AnthropicJudge(
            api_key="k",
            base_url=api.base_url,
            timeout=TIMEOUT_S,
            budget_s=BUDGET_S,
            prices=PriceTable(),
        )
        pipeline = Pipeline(
            **shared,
            judge=judge,
            sink=OtlpScoreSink(exporter, Resource.create({}), timeout_s=5.0),
            metrics=ConsumerMetrics(MeterProvider()),
            sampler=Sampler(SamplerConfig()),
            settings=settings,
        )
        replicas.append(Replica(pipeline, ScoringWorkers(pipeline, 1, depth=DEPTH)))
    for n in range(1, TRACES + 1):
        replicas[0].pipeline.ingest(
            rag_spans(n, answer=f"Audit logs are kept 90 days for tenant {n}.", end_s=now), now
        )
    stop = threading.Event()
    threads = [threading.Thread(target=r.run, args=(stop,), daemon=True) for r in replicas]
    threads[0].start()
    deadline = time.monotonic() + 5
    while replicas[0].workers.in_flight < DEPTH and time.monotonic() < deadline:
        time.sleep(0.01)
    threads[1].start()
    deadline = time.monotonic() + 30
    while traces.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(15)
    assert traces.pending() == 0, "every trace is finished"
    return exporter


def _judged(slow: SlowApi) -> dict[str, int]:
    return dict(slow.answered)


def test_a_lease_that_passes_the_check_never_lets_a_trace_be_judged_twice(
    api: tuple[FakeAnthropic, SlowApi],
) -> None:
    fake, slow = api
    lease_s = lease_needed_s(BUDGET_S, DEPTH, MARGIN_S) + 0.1  # 4.1 s
    check_lease(lease_s, BUDGET_S, DEPTH, MARGIN_S)
    exporter = _run(fake, lease_s)
    assert _judged(slow) == {str(n): 1 for n in range(1, TRACES + 1)}  # one paid answer each
    assert set(slow.requests.values()) == {2}  # the 429, then the answer: no other request
    summaries = [s for s in exporter.get_finished_spans() if s.name == semconv.SPAN_EVALUATION]
    assert sorted(f"{s.context.trace_id:032x}" for s in summaries if s.context) == [
        tid(n) for n in range(1, TRACES + 1)
    ]
    for span in summaries:
        attrs = span.attributes or {}
        assert attrs[semconv.EVAL_JUDGE_MODEL] == "claude-haiku-4-5"
        assert attrs[semconv.GEN_AI_RESPONSE_MODEL] == "claude-haiku-4-5-20251001"


def test_control_a_lease_sized_without_the_retries_lets_a_second_replica_pay_again(
    api: tuple[FakeAnthropic, SlowApi],
) -> None:
    fake, slow = api
    # DEPTH x one answer's time, the wait the API asks for left out: what check_lease refuses
    lease_s = DEPTH * ANSWER_DELAY_S + 0.2  # 1.0 s, while a replica's second trace needs ~1.6 s
    with pytest.raises(ConfigError, match="assembly.lease_s"):
        check_lease(lease_s, BUDGET_S, DEPTH, MARGIN_S)
    _run(fake, lease_s)
    assert max(_judged(slow).values()) >= 2  # some trace was judged (and paid) twice
