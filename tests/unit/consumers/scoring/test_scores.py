"""The recall cut-off of a trace: each retrieval step's declared top-k unless configuration pins
one, read from GenAI retrieval spans (the SDK's own decorators: tests/unit/consumers/readers/
test_reading.py)."""

from __future__ import annotations

import json

import pytest

from ragtrace import semconv
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.model import RetrievalScores, SpanRecord
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.scores import score_retrieval

TRACE = "2" * 32
Q = "How long are audit logs kept?"
GOLD = LabelledQuestion("q", Q, frozenset({"c1", "c3"}))


def retrieval(span_id: str, ids: list[str], start: int, **top_k: object) -> SpanRecord:
    """A GenAI retrieval span returning ``ids``; ``top_k`` maps an attribute key's last part
    (``retrieval`` or ``request``) to the k it declares."""
    attrs: dict[str, object] = {
        semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_RETRIEVAL,
        semconv.GEN_AI_RETRIEVAL_QUERY_TEXT: Q,
        semconv.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps(
            [{"id": i, "content": f"passage {i}", "score": 0.5} for i in ids]
        ),
    }
    for which, k in top_k.items():
        attrs[f"gen_ai.{which}.top_k"] = k
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id * 16,
        parent_span_id="a" * 16,
        name="retrieval docs",
        scope="app",
        service="app",
        start_ns=start,
        end_ns=start + 1,
        attributes=attrs,  # type: ignore[arg-type]
    )


def scored(spans: list[SpanRecord], k: int = 5, *, k_from_trace: bool = True) -> RetrievalScores:
    trace = to_rag_trace(spans)
    assert trace is not None
    return score_retrieval(
        trace, GOLD, "query_text", "v1", k, RecallDefinition.MEAN_RECALL, k_from_trace=k_from_trace
    )


def test_a_declared_top_k_is_the_traces_cutoff() -> None:
    spans = [retrieval("b", ["c1", "c2", "c3"], 1, retrieval=2)]
    r = scored(spans)
    # c3 is rank 3: outside the declared top 2, although inside scoring.k = 5
    assert (r.scores.k, r.scores.recall, r.scores.precision) == (2, 0.5, 0.5)


def test_configuration_pins_k_over_the_trace() -> None:
    r = scored([retrieval("b", ["c1", "c2", "c3"], 1, retrieval=2)], k_from_trace=False)
    assert (r.scores.k, r.scores.recall) == (5, 1.0)


def test_without_a_declared_top_k_the_configured_k_applies() -> None:
    r = scored([retrieval("b", ["c1", "c2", "c3"], 1)], k=1)
    assert (r.scores.k, r.scores.recall) == (1, 0.5)


@pytest.mark.parametrize(
    ("declared", "k"),
    [
        ({"retrieval": 2, "request": 4}, 2),  # the retrieval key wins over the legacy one
        ({"request": 2}, 2),  # where semantic-conventions 1.36 put a retriever's k
        ({"retrieval": 2.0}, 2),  # OTLP/JSON may carry an integer as a double
        ({"retrieval": 0}, 5),  # not a cut-off: the configured k
        ({"retrieval": "2"}, 5),
        ({"retrieval": True}, 5),
        ({"retrieval": 2.5}, 5),
    ],
)
def test_what_counts_as_a_declared_top_k(declared: dict[str, object], k: int) -> None:
    trace = to_rag_trace([retrieval("b", ["c1"], 1, **declared)])
    assert trace is not None
    (step,) = trace.steps
    assert (step.top_k or 5) == k
    assert step.summary()["top_k"] == step.top_k


def test_each_step_is_cut_at_its_own_declared_top_k() -> None:
    spans = [
        retrieval("b", ["c2", "c1"], 1, retrieval=1),  # c1 is rank 2: outside its top 1
        retrieval("c", ["c4", "c5", "c3"], 2, retrieval=3),
    ]
    r = scored(spans)
    assert r.scores.k == 3  # the largest step cut-off
    assert r.scores.recall == 0.5 and r.step_recall == (0.0, 0.5)
    assert r.scores.precision == pytest.approx(1 / 4)  # one gold in 1 + 3 slots
    pinned = scored(spans, k_from_trace=False)
    assert pinned.scores.recall == 1.0 and pinned.step_recall == (0.5, 0.5)
