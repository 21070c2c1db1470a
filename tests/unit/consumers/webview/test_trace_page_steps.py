"""The trace page of an answer drawn from several retrieval steps: each step's query and
ranked IDs, the ranks below its top k marked, and no single cut-off over the union."""

from __future__ import annotations

from dataclasses import replace

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.model import Chunk, RagTrace, RetrievalStep
from ragtrace_consumers.scoring.scores import combine, score_retrieval
from ragtrace_consumers.webview.trace_page import TraceView, render_trace
from ragtrace_consumers.writeback.recording_sink import to_scored_result, trace_detail

STEPS = (
    RetrievalStep(
        "1" * 16, "audit log retention", (Chunk("doc-audit"), Chunk("doc-pricing")), "search"
    ),
    RetrievalStep("2" * 16, "data regions", (Chunk("doc-pricing"), Chunk("doc-regions")), "search"),
)


def _page(steps: tuple[RetrievalStep, ...]) -> tuple[str, dict[str, object]]:
    retrieved = tuple({c.id: c for s in steps for c in s.chunks}.values())
    trace = RagTrace(
        trace_id="b" * 32,
        service="svc",
        target_span_id="c" * 16,
        query="Audit logs and regions?",
        retrieved=retrieved,
        steps=steps,
        has_retrieval=True,
    )
    question = LabelledQuestion("q", "Audit logs and regions?", frozenset({"doc-regions"}))
    r = score_retrieval(trace, question, "question_id", "v1", 1, RecallDefinition.MEAN_RECALL)
    scores = combine(trace, r, None, Thresholds())
    assert scores is not None
    result = to_scored_result(scores, 0.0, None)
    view = TraceView(result, trace_detail(scores, frozenset({"doc-regions"})), None, None, "csrf")
    return render_trace(view)[1], dict(result.extra)


def test_each_step_is_listed_with_its_query_and_its_top_k() -> None:
    body, extra = _page(STEPS)
    assert "2 retrieval steps: recall@1 counts each step's top 1" in body
    assert "step 1 <span class=muted>(tool search)</span> &#x27;audit log retention&#x27;" in body
    assert "<code class=gold>doc-regions</code><span class=muted>↓</span>" in body
    assert "cut-off: recall@" not in body  # no single cut-off over the union
    assert extra["step_recall"] == [0.0, 0.0]
    assert [s["ids"] for s in extra["steps"]] == [  # type: ignore[attr-defined]
        ["doc-audit", "doc-pricing"],
        ["doc-pricing", "doc-regions"],
    ]


def test_one_step_keeps_the_rank_cut_off() -> None:
    body, extra = _page(STEPS[:1])
    assert "cut-off: recall@1 counts ranks 1–1 only" in body
    assert "retrieval steps" not in body and "step_recall" not in extra


def test_steps_declaring_different_top_k_are_each_cut_at_their_own() -> None:
    first, second = STEPS
    body, extra = _page((replace(first, top_k=1), replace(second, top_k=2)))
    # doc-regions is rank 2 of a step declaring top 2: counted, no ↓
    assert "recall counts each step's own top k (the k its span declares)" in body
    assert "step 2 <span class=muted>(tool search top 2)</span>" in body
    assert "<code class=gold>doc-regions</code><span class=muted>↓</span>" not in body
    assert "<code>doc-pricing</code><span class=muted>↓</span>" in body  # rank 2 of step 1
    assert (extra["step_k"], extra["step_recall"], extra["k_from"]) == ([1, 2], [0.0, 1.0], "trace")
    assert "k=2, the top-k the retrieval span declares" in body


def test_one_step_declaring_its_top_k_sets_the_cut_off() -> None:
    body, extra = _page((replace(STEPS[1], top_k=2),))
    assert "cut-off: recall@2 counts ranks 1–2 only" in body
    assert extra["k_from"] == "trace" and "step_k" not in extra
    body, extra = _page(STEPS[1:])
    assert "cut-off: recall@1 counts ranks 1–1 only" in body
    assert "k=1, the configured scoring.k" in body and extra["k_from"] == "scoring.k"
