"""Scoring values and the judging step: retrieval scores, the cell, the judge cache, the budget,
retries and parking."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace.evaluation.attribution import Cell, Thresholds
from ragtrace.evaluation.judges import GroundednessResult, JudgeInfo, JudgeUnavailable
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.model import FAMILY_GROUNDEDNESS, FAMILY_RECALL, TraceScores
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.judging import (
    GroundednessScorer,
    JudgeOutcome,
    ParkTrace,
    cache_model,
    judge_cache_key,
)
from ragtrace_consumers.scoring.scores import combine, score_retrieval
from ragtrace_consumers.stores.memory import MemoryJudgeBudget, MemoryJudgeResultCache
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from tests.metric_points import Key, points
from tests.unit.consumers.scoring_helpers import MODEL, PROMPT, ScriptedJudge, grounded, rag_spans

MEAN = RecallDefinition.MEAN_RECALL


def _trace(**kw: object):  # type: ignore[no-untyped-def]
    trace = to_rag_trace(rag_spans(1, **kw))  # type: ignore[arg-type]
    assert trace is not None
    return trace


def test_seed_worked_example_one_of_two_gold_at_rank_three() -> None:
    # Gold holds two chunks; the first sits third, the second is missing: recall@5 = 1/2.
    docs = [(c, f"text {c}") for c in ("x1", "x2", "g1", "x3", "x4", "x5")]
    trace = _trace(retrieved=docs)
    q = LabelledQuestion("q1", "How long are audit logs kept?", frozenset({"g1", "g2"}))
    r = score_retrieval(trace, q, "query_text", "v1", 5, MEAN)
    assert r.scores.recall == 0.5
    assert r.scores.hit_rate == 1.0
    assert r.scores.precision == pytest.approx(0.2)
    assert r.scores.reciprocal_rank == pytest.approx(1 / 3)
    assert r.scores.gold_size == 2
    assert r.scores.k == 5
    assert r.question_id == "q1" and r.matched_by == "query_text" and r.labels_version == "v1"
    # Every retrieved chunk was supplied to generation; 1 of the 6 is gold.
    assert r.context_relevancy == pytest.approx(1 / 6)
    assert r.headline == 0.5
    hit = score_retrieval(trace, q, "query_text", "v1", 5, RecallDefinition.HIT_RATE)
    assert hit.headline == 1.0


def test_unanswerable_question_has_nan_scores_and_a_cell_by_what_the_answer_did() -> None:
    trace = _trace()
    q = LabelledQuestion("q0", "?", frozenset())
    r = score_retrieval(trace, q, "question_id", "v1", 5, MEAN)
    assert not r.answerable and math.isnan(r.scores.recall)
    assert r.context_relevancy is None
    # A grounded answer to a question the corpus cannot answer is still flagged.
    scores = combine(trace, r, grounded(1, 1), Thresholds())
    assert scores is not None and scores.cell is Cell.UNANSWERABLE_ANSWERED
    assert scores.grounded is True
    declining = _trace(answer="I don't know. The passages do not mention it.")
    r = score_retrieval(declining, q, "question_id", "v1", 5, MEAN)
    scores = combine(declining, r, None, Thresholds())
    assert scores is not None and scores.cell is Cell.UNANSWERABLE_DECLINED
    assert scores.grounded is None


def test_matched_by_is_validated() -> None:
    trace = _trace()
    q = LabelledQuestion("q1", "?", frozenset({"c-1"}))
    with pytest.raises(ValueError, match="matched_by"):
        score_retrieval(trace, q, "guess", "v1", 5, MEAN)


@pytest.mark.parametrize(
    "recall_gold, entailed, cell",
    [
        ({"c-1"}, 1, Cell.FINE),  # recall 1.0, groundedness 1.0
        ({"c-9"}, 1, Cell.RETRIEVAL_FAILED),  # recall 0.0
        ({"c-1"}, 0, Cell.GENERATION_FAILED),  # groundedness 0.0
        ({"c-9"}, 0, Cell.BOTH_FAILED),
    ],
)
def test_cell_from_both_scores(recall_gold: set[str], entailed: int, cell: Cell) -> None:
    trace = _trace()
    r = score_retrieval(
        trace, LabelledQuestion("q", "?", frozenset(recall_gold)), "question_id", "v", 5, MEAN
    )
    scores = combine(trace, r, grounded(entailed, 1), Thresholds())
    assert scores is not None and scores.cell is cell
    assert scores.families == (FAMILY_RECALL, FAMILY_GROUNDEDNESS)


def test_combine_families_and_cells_with_one_side_missing() -> None:
    trace = _trace()
    r = score_retrieval(
        trace, LabelledQuestion("q", "?", frozenset({"c-1"})), "question_id", "v", 5, MEAN
    )
    only_recall = combine(trace, r, None, Thresholds())
    assert only_recall is not None
    assert only_recall.cell is Cell.UNJUDGED and only_recall.families == (FAMILY_RECALL,)
    only_g = combine(trace, None, grounded(2, 2), Thresholds(), groundedness_cost_usd=0.5)
    assert only_g is not None
    assert only_g.cell is Cell.UNLABELLED and only_g.families == (FAMILY_GROUNDEDNESS,)
    assert only_g.groundedness_cost_usd == 0.5 and only_g.grounded is True
    # Unlabelled and judged below the threshold: a hallucination with no label is visible.
    not_grounded = combine(trace, None, grounded(1, 2), Thresholds())
    assert not_grounded is not None and not_grounded.cell is Cell.UNLABELLED_NOT_GROUNDED
    assert not_grounded.grounded is False
    # Recall already written: the cell still uses it, only groundedness is written.
    g_only = combine(trace, r, grounded(0, 1), Thresholds(), write_retrieval=False)
    assert g_only is not None
    assert g_only.cell is Cell.GENERATION_FAILED and g_only.families == (FAMILY_GROUNDEDNESS,)
    assert combine(trace, r, None, Thresholds(), write_retrieval=False) is None
    with pytest.raises(ValueError, match="at least one family"):
        TraceScores(trace, None, None, Cell.FINE)


def test_judge_cache_key_depends_on_every_input() -> None:
    base = judge_cache_key("a", ["c1", "c2"], "m", PROMPT)
    assert base == judge_cache_key("a", ["c1", "c2"], "m", PROMPT)
    assert base.startswith("groundedness:") and len(base) == len("groundedness:") + 64
    others = {
        judge_cache_key("b", ["c1", "c2"], "m", PROMPT),
        judge_cache_key("a", ["c2", "c1"], "m", PROMPT),
        judge_cache_key("a", ["c1c2"], "m", PROMPT),
        judge_cache_key("a", ["c1", "c2"], "m2", PROMPT),
        judge_cache_key("a", ["c1", "c2"], "m", "b" * 64),
    }
    assert base not in others and len(others) == 5


def _scorer(
    judge: ScriptedJudge, *, calls: int = 100
) -> tuple[GroundednessScorer, MemoryJudgeResultCache, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    metrics = ConsumerMetrics(MeterProvider(metric_readers=[reader]))
    cache = MemoryJudgeResultCache()
    scorer = GroundednessScorer(judge, cache, MemoryJudgeBudget(calls, 10**9), metrics)
    return scorer, cache, reader


def _counter(reader: InMemoryMetricReader, name: str) -> dict[Key, object]:
    return {k: getattr(p, "value", None) for k, p in points(reader, name).items()}


def test_scorer_caches_real_scores_and_a_repeat_costs_nothing() -> None:
    judge = ScriptedJudge(grounded(1, 2, cost=0.01))
    scorer, cache, reader = _scorer(judge)
    first = scorer.judge_trace("t" * 32, "svc", "answer", ["ctx"])
    assert first == JudgeOutcome(first.result, cost_usd=0.01)
    assert first.result is not None and first.result.score == 0.5
    # Same answer, context, model, prompt, another trace: no call, cost 0.
    second = scorer.judge_trace("u" * 32, "svc", "answer", ["ctx"])
    assert second.cached and second.cost_usd == 0.0 and second.result == first.result
    # The same trace again (a replay): the original cost, so an identical evaluation span.
    replay = scorer.judge_trace("t" * 32, "svc", "answer", ["ctx"])
    assert replay.cached and replay.cost_usd == 0.01
    assert len(judge.calls) == 1
    raw = cache.get(judge_cache_key("answer", ["ctx"], MODEL, PROMPT))
    assert raw is not None and json.loads(raw)["trace_id"] == "t" * 32
    calls = _counter(reader, "ragtrace.judge.calls")
    assert calls[(("judge_model", MODEL), ("outcome", "ok"))] == 1
    assert calls[(("judge_model", MODEL), ("outcome", "cached"))] == 2
    tokens = _counter(reader, "ragtrace.judge.tokens")
    assert tokens[(("judge_model", MODEL), ("token_type", "input"))] == 900
    assert tokens[(("judge_model", MODEL), ("token_type", "output"))] == 120
    assert tokens[(("judge_model", MODEL), ("token_type", "cache_read"))] == 50
    assert tokens[(("judge_model", MODEL), ("token_type", "cache_write"))] == 10
    assert _counter(reader, "ragtrace.judge.cost")[(("judge_model", MODEL),)] == pytest.approx(0.01)


class AliasJudge(ScriptedJudge):
    """Like AnthropicJudge: configured with an alias, its results report the dated model."""

    model = "claude-haiku-4-5"

    def __init__(self) -> None:
        super().__init__(model=self.model)
        self.default = lambda a, c: dataclasses.replace(
            grounded(1, 1, info=self.info), served_model="claude-haiku-4-5-20251001"
        )


def test_the_cache_key_uses_the_configured_model_before_and_after_the_first_call() -> None:
    used, fresh = AliasJudge(), AliasJudge()
    scorer, cache, _ = _scorer(used)
    first = scorer.judge_trace("t" * 32, "svc", "answer", ["ctx"])
    assert first.result is not None
    assert first.result.served_model == "claude-haiku-4-5-20251001"  # on the result only
    assert used.info.model == "claude-haiku-4-5"
    assert scorer.judge_trace("u" * 32, "svc", "answer", ["ctx"]).cached
    # Another replica finds the same entry.
    other = GroundednessScorer(
        fresh, cache, MemoryJudgeBudget(100, 10**9), ConsumerMetrics(MeterProvider())
    )
    assert other.judge_trace("v" * 32, "svc", "answer", ["ctx"]).cached
    assert len(used.calls) == 1 and fresh.calls == []
    assert len(cache._items) == 1
    assert cache.get(judge_cache_key("answer", ["ctx"], "claude-haiku-4-5", PROMPT)) is not None
    assert cache_model(used) == cache_model(fresh) == "claude-haiku-4-5"


def test_cache_model_of_the_anthropic_judge_is_its_configured_model() -> None:
    from ragtrace.evaluation.judges import AnthropicJudge

    judge = AnthropicJudge("claude-haiku-4-5", api_key="unused", base_url="http://127.0.0.1:9")
    assert cache_model(judge) == "claude-haiku-4-5"
    assert cache_model(ScriptedJudge(model=None)) == "anthropic"  # no model: the judge's name


def test_unreadable_cache_entry_is_a_miss() -> None:
    judge = ScriptedJudge()
    scorer, cache, _ = _scorer(judge)
    cache.put(judge_cache_key("a", ["c"], MODEL, PROMPT), b"{not json")
    out = scorer.judge_trace("t" * 32, "svc", "a", ["c"])
    assert not out.cached and len(judge.calls) == 1


def test_error_results_are_written_but_never_cached() -> None:
    info = JudgeInfo("anthropic", MODEL, PROMPT)
    judge = ScriptedJudge(GroundednessResult.failed("no tool_use block", info))
    scorer, cache, reader = _scorer(judge)
    out = scorer.judge_trace("t" * 32, "svc", "a", ["c"])
    assert out.result is not None and out.result.error == "no tool_use block"
    assert cache.get(judge_cache_key("a", ["c"], MODEL, PROMPT)) is None
    assert (
        _counter(reader, "ragtrace.judge.errors")[
            (("judge_model", MODEL), ("reason", "invalid_output"))
        ]
        == 1
    )
    assert (
        _counter(reader, "ragtrace.judge.calls")[(("judge_model", MODEL), ("outcome", "error"))]
        == 1
    )


def test_budget_exhausted_skips_the_judge_but_cache_hits_still_work() -> None:
    judge = ScriptedJudge()
    scorer, _, reader = _scorer(judge, calls=1)
    assert scorer.judge_trace("t" * 32, "svc", "a", ["c"]).result is not None
    out = scorer.judge_trace("u" * 32, "svc", "b", ["c"])
    assert out == JudgeOutcome(None, skipped="budget_exhausted")
    assert scorer.judge_trace("v" * 32, "svc", "a", ["c"]).cached
    assert len(judge.calls) == 1
    assert _counter(reader, "ragtrace.judge.budget.exhausted")[(("service", "svc"),)] == 1


def test_unavailable_judge_parks_at_once_with_the_apis_retry_after() -> None:
    judge = ScriptedJudge(JudgeUnavailable("429", 7.0), grounded(2, 2))
    scorer, _, reader = _scorer(judge)
    with pytest.raises(ParkTrace) as park:
        scorer.judge_trace("t" * 32, "svc", "a", ["c"])
    # one call: the judge owns the retries (its time budget); no second loop here
    assert park.value.reason == "judge_unavailable" and park.value.retry_after == 7.0
    assert len(judge.calls) == 1
    assert (
        _counter(reader, "ragtrace.judge.calls")[
            (("judge_model", MODEL), ("outcome", "unavailable"))
        ]
        == 1
    )
    # the parked trace's retry scores
    out = scorer.judge_trace("t" * 32, "svc", "a", ["c"])
    assert out.result is not None and out.result.score == 1.0 and len(judge.calls) == 2


def test_unexpected_judge_exception_parks_as_judge_failed() -> None:
    judge = ScriptedJudge(RuntimeError("bug"), RuntimeError("bug"))
    scorer, _, reader = _scorer(judge)
    with pytest.raises(ParkTrace) as park:
        scorer.judge_trace("t" * 32, "svc", "a", ["c"])
    assert park.value.reason == "judge_failed" and park.value.retry_after is None
    assert len(judge.calls) == 1
    assert (
        _counter(reader, "ragtrace.judge.errors")[(("judge_model", MODEL), ("reason", "exception"))]
        == 1
    )


def test_judge_outcome_is_validated() -> None:
    with pytest.raises(ValueError):
        JudgeOutcome(None)
    with pytest.raises(ValueError):
        JudgeOutcome(grounded(1, 1), skipped="budget_exhausted")


def test_metrics_are_labelled_with_the_configured_model_never_the_served_one() -> None:
    judge = AliasJudge()
    scorer, cache, reader = _scorer(judge)
    scorer.judge_trace("t" * 32, "svc", "a", ["c"])
    assert scorer.judge_trace("u" * 32, "svc", "a", ["c"]).cached
    assert cache.get(judge_cache_key("a", ["c"], "claude-haiku-4-5", PROMPT)) is not None
    assert len(judge.calls) == 1
    calls = _counter(reader, "ragtrace.judge.calls")
    assert calls[(("judge_model", "claude-haiku-4-5"), ("outcome", "ok"))] == 1
    assert calls[(("judge_model", "claude-haiku-4-5"), ("outcome", "cached"))] == 1
    labels = {
        value
        for name in ("ragtrace.judge.calls", "ragtrace.judge.tokens", "ragtrace.judge.cost")
        for key in _counter(reader, name)
        for attr, value in key
        if attr == "judge_model"
    }
    assert labels == {"claude-haiku-4-5"}  # no series under the served (dated) model
