"""select_spans and the completion rule (completion_due), and the in-memory trace store's
behaviour under concurrency. The store contract itself is tests/e2e/test_stores.py, run here
against the in-memory implementation."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtrace import semconv
from ragtrace_consumers.readers import creates_trace
from ragtrace_consumers.scoring.assembly import (
    DEFAULT_IDLE_S,
    completion_due,
    earliest,
    select_spans,
)
from ragtrace_consumers.stores.memory import MemoryTraceStore
from tests.e2e.test_stores import *  # noqa: F403 - the shared store contract, run on the memory side
from tests.e2e.test_stores import Kit, memory_kit
from tests.store_appends import append_read
from tests.unit.consumers.ingestion_spans import GEN, RET, ROOT, TRACE, record

OTHER = "1" * 32
LLM = {semconv.OPENINFERENCE_SPAN_KIND: "LLM"}
RETRIEVER = {semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER"}


@pytest.fixture(name="kit")
def memory_only_kit() -> Kit:  # overrides the shared suite's parametrized fixture
    return memory_kit()


def test_select_spans_keeps_rag_spans_and_strips_a_non_rag_root() -> None:
    http_root = record(
        ROOT,
        scope="opentelemetry.instrumentation.fastapi",
        attributes={"http.route": "/chat", "http.request.body": "secret"},
    )
    child_db = record("7777777777777777", parent=ROOT, scope="redis", attributes={"db": "x"})
    retrieval = record(RET, parent=ROOT, attributes=RETRIEVER)
    evaluation = record(
        "8888888888888888", parent=ROOT, scope=semconv.EVALUATION_SCOPE, attributes=LLM
    )
    kept = select_spans([http_root, child_db, retrieval, evaluation])
    assert kept == [record(ROOT, scope="opentelemetry.instrumentation.fastapi"), retrieval]


def test_only_rag_spans_create_a_trace() -> None:
    assert creates_trace([record(RET, attributes=RETRIEVER)])
    assert not creates_trace([record(ROOT, scope="other")])
    assert not creates_trace([])


def test_completion_rule() -> None:
    now = 1000.0
    spans = [
        # trace A: root arrived with the generation -> due now (+ grace)
        record(RET, parent=ROOT, attributes=RETRIEVER),
        record(GEN, parent=ROOT, attributes=LLM),
        record(ROOT, scope="other"),
        # trace B: generation arrived -> quiet period
        record(GEN, parent=ROOT, trace_id=OTHER, attributes=LLM),
        # trace C: retrieval only -> idle
        record(RET, parent=ROOT, trace_id="2" * 32, attributes=RETRIEVER),
        # trace D: only our own evaluation span -> nothing
        record(GEN, parent=ROOT, trace_id="3" * 32, scope=semconv.EVALUATION_SCOPE),
        # trace E: root and retrieval, the generation still on its way (the collector split
        # the request; its part is being retried) -> idle, not due at once
        record(ROOT, trace_id="4" * 32, scope="other"),
        record(RET, parent=ROOT, trace_id="4" * 32, attributes=RETRIEVER),
    ]
    assert completion_due(spans, now, 5.0) == {
        TRACE: 1000.0,
        OTHER: 1005.0,
        "2" * 32: 1000.0 + DEFAULT_IDLE_S,
        "4" * 32: 1000.0 + DEFAULT_IDLE_S,
    }
    assert completion_due(spans, now, 5.0, idle_s=30.0, root_grace_s=2.0) == {
        TRACE: 1002.0,
        OTHER: 1005.0,
        "2" * 32: 1030.0,
        "4" * 32: 1030.0,
    }
    # idle is never shorter than quiet
    assert completion_due(spans, now, 90.0, idle_s=30.0)["2" * 32] == 1090.0
    assert completion_due([], now, 5.0) == {}


def test_completion_rule_rejects_negative_periods() -> None:
    with pytest.raises(ValueError, match="quiet_s and root_grace_s must be >= 0"):
        completion_due([], 0.0, -1.0)
    with pytest.raises(ValueError, match="idle_s must be >= 0"):
        completion_due([], 0.0, 1.0, idle_s=-1.0)


def test_earliest_merge_is_order_independent() -> None:
    a, b = {TRACE: 5.0, OTHER: 9.0}, {TRACE: 7.0, "2" * 32: 1.0}
    assert earliest(a, b) == earliest(b, a) == {TRACE: 5.0, OTHER: 9.0, "2" * 32: 1.0}


def test_memory_store_claims_each_trace_once_across_threads() -> None:
    store = MemoryTraceStore()
    ids = [f"{i:032x}" for i in range(1, 201)]
    append_read(
        store, [record(RET, trace_id=t, attributes=RETRIEVER) for t in ids], dict.fromkeys(ids, 0.0)
    )
    claimed: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            got = store.claim_due(1.0, 7, 60.0)
            if not got:
                return
            with lock:
                claimed.extend(got)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == ids


@given(
    order=st.permutations([0, 1, 2]), gaps=st.lists(st.floats(0.0, 30.0), min_size=3, max_size=3)
)
def test_the_due_time_does_not_depend_on_the_order_batches_arrive_in(
    order: list[int], gaps: list[float]
) -> None:
    batches = [
        [record(RET, parent=ROOT, attributes=RETRIEVER)],
        [record(GEN, parent=ROOT, attributes=LLM)],
        [record(ROOT, scope="fastapi")],
    ]
    store = MemoryTraceStore(clock=lambda: 0.0)
    now, expected = 100.0, float("inf")
    stored: set[str] = set()
    for index, gap in zip(order, gaps, strict=False):
        now += gap
        due = completion_due(batches[index], now, 5.0, idle_s=40.0)
        append_read(store, batches[index], due)
        if index == 2 and not stored:
            continue  # a non-RAG root alone cannot create the trace
        expected = min(expected, due[TRACE])
        stored |= {s.span_id for s in batches[index]}
    assert store.claim_due(expected - 0.001, 10, 60.0) == []
    assert store.claim_due(expected, 10, 60.0) == [TRACE]
    assert {s.span_id for s in store.load(TRACE)} == stored


def test_a_question_id_on_the_apps_own_root_survives_assembly() -> None:
    """``ragtrace.set_question_id()`` outside ``@ragtrace.pipeline`` records on the app's own
    (non-RAG) root span; only the ``ragtrace.*`` keys are kept, and the trace is labelled."""
    from ragtrace_consumers.readers import to_rag_trace

    http_root = record(
        ROOT,
        scope="opentelemetry.instrumentation.fastapi",
        attributes={"http.route": "/chat", semconv.RAGTRACE_QUESTION_ID: "q-17"},
    )
    inner = record(
        "7777777777777777",
        parent=ROOT,
        scope="app",
        attributes={"app.secret": "x", semconv.RAGTRACE_QUESTION_ID: "q-18"},
    )
    retrieval = record(RET, parent=ROOT, attributes=RETRIEVER)
    kept = select_spans([http_root, inner, retrieval])
    assert kept == [
        record(
            ROOT,
            scope="opentelemetry.instrumentation.fastapi",
            attributes={semconv.RAGTRACE_QUESTION_ID: "q-17"},
        ),
        record(
            "7777777777777777",
            parent=ROOT,
            scope="app",
            attributes={semconv.RAGTRACE_QUESTION_ID: "q-18"},
        ),
        retrieval,
    ]
    rag = to_rag_trace(kept)
    assert rag is not None and rag.question_id == "q-17"
