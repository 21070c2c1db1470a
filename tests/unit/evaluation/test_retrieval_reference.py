"""Agreement with trec_eval (through pytrec_eval) and ir_measures on random runs.

Naming across the three: our recall@k is trec_eval ``recall_k`` / ir_measures ``R@k``; hit
rate@k is ``success_k`` / ``Success@k``; precision@k is ``P_k`` / ``P@k``; reciprocal rank is
``recip_rank`` / ``RR`` (``RR@k`` with a cutoff, from ir_measures' msmarco provider); nDCG@k is
``ndcg_cut_k`` / ``nDCG@k``.

A trec run is a ``{doc: score}`` mapping ranked by score, so it cannot hold a duplicate and
ir_measures keeps the *last* score given for a repeated doc. We de-duplicate keeping the *first*
occurrence, so the references are fed our de-duplicated list with strictly decreasing scores;
the random runs below contain duplicates so this path is exercised.
"""

from __future__ import annotations

import math
import random

import ir_measures
import pytest
import pytrec_eval
from ir_measures import RR, R, Success, nDCG
from ir_measures import P as Prec

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.report import evaluate_run
from ragtrace.evaluation.retrieval import (
    RecallDefinition,
    dedupe,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

KS = (1, 3, 5, 10, 25)  # 25 exceeds every list below


def _random_collection(
    seed: int, queries: int = 300
) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    gold: dict[str, set[str]] = {}
    run: dict[str, list[str]] = {}
    for n in range(queries):
        qid = f"q{n}"
        gold[qid] = set(rng.sample(docs, rng.choice([0, 1, 1, 1, 2, 3, 5])))
        retrieved = rng.sample(docs, rng.randint(0, 20))
        for _ in range(rng.choice([0, 0, 1, 3])):  # inject duplicates
            if retrieved:
                retrieved.insert(rng.randint(0, len(retrieved)), rng.choice(retrieved))
        run[qid] = retrieved
    return gold, run


def _trec_run(run: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    # Strictly decreasing scores reproduce our (de-duplicated) order; no ties to break.
    return {
        qid: {doc: float(100 - i) for i, doc in enumerate(dedupe(ranked))}
        for qid, ranked in run.items()
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_agrees_with_pytrec_eval_per_question(seed: int) -> None:
    gold, run = _random_collection(seed)
    qrels = {qid: {doc: 1 for doc in g} for qid, g in gold.items() if g}
    measures = {
        "recip_rank",
        *(f"recall.{k}" for k in KS),
        *(f"P.{k}" for k in KS),
        *(f"success.{k}" for k in KS),
        *(f"ndcg_cut.{k}" for k in KS),
    }
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(_trec_run(run))
    # trec_eval skips questions with no relevant document; we score them NaN.
    assert set(ref) == set(qrels)
    compared = 0
    for qid, g in gold.items():
        ranked = run[qid]
        if not g:
            assert math.isnan(recall_at_k(ranked, g, 5))
            continue
        r = ref[qid]
        assert reciprocal_rank(ranked, g) == pytest.approx(r["recip_rank"], abs=1e-12)
        for k in KS:
            assert recall_at_k(ranked, g, k) == pytest.approx(r[f"recall_{k}"], abs=1e-12)
            assert precision_at_k(ranked, g, k) == pytest.approx(r[f"P_{k}"], abs=1e-12)
            assert hit_rate_at_k(ranked, g, k) == pytest.approx(r[f"success_{k}"], abs=1e-12)
            assert ndcg_at_k(ranked, g, k) == pytest.approx(r[f"ndcg_cut_{k}"], abs=1e-12)
            compared += 1
    assert compared > 200 * len(KS)


def test_report_means_agree_with_pytrec_eval_means() -> None:
    gold, run = _random_collection(7)
    questions = [LabelledQuestion(q, f"question {q}", frozenset(g)) for q, g in gold.items()]
    report = evaluate_run(questions, run, KS, RecallDefinition.MEAN_RECALL)
    qrels = {qid: {doc: 1 for doc in g} for qid, g in gold.items() if g}
    measures = {"recip_rank", *(f"recall.{k}" for k in KS), *(f"success.{k}" for k in KS)}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(_trec_run(run))

    def ref_mean(name: str) -> float:
        return sum(r[name] for r in ref.values()) / len(ref)

    assert report.unanswerable == sum(1 for g in gold.values() if not g) > 0
    assert report.metrics["mrr"] == pytest.approx(ref_mean("recip_rank"), abs=1e-12)
    for k in KS:
        assert report.metrics[f"recall@{k}"] == pytest.approx(ref_mean(f"recall_{k}"), abs=1e-12)
        assert report.metrics[f"hit_rate@{k}"] == pytest.approx(ref_mean(f"success_{k}"), abs=1e-12)
    hit = evaluate_run(questions, run, KS, RecallDefinition.HIT_RATE)
    for k in KS:
        assert hit.metrics[f"recall@{k}"] == pytest.approx(ref_mean(f"success_{k}"), abs=1e-12)


def test_agrees_with_ir_measures_including_rr_at_k() -> None:
    gold, run = _random_collection(11, queries=150)
    qrels = [ir_measures.Qrel(qid, doc, 1) for qid, g in gold.items() for doc in sorted(g)]
    scored = [
        ir_measures.ScoredDoc(qid, doc, float(100 - i))
        for qid, ranked in run.items()
        for i, doc in enumerate(dedupe(ranked))
    ]
    measures = [RR, *(m @ k for k in KS for m in (R, Prec, Success, nDCG))]
    ref = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc(measures, qrels, scored)
    }
    rr_at = [RR @ k for k in KS]
    ref.update(
        {
            (m.query_id, str(m.measure)): m.value
            for m in ir_measures.msmarco.iter_calc(rr_at, qrels, scored)
        }
    )
    compared = 0
    for qid, g in gold.items():
        ranked = run[qid]
        if not g or not ranked:  # no qrels, or no run entry: ir_measures reports nothing
            continue
        assert reciprocal_rank(ranked, g) == pytest.approx(ref[(qid, "RR")], abs=1e-12)
        for k in KS:
            assert recall_at_k(ranked, g, k) == pytest.approx(ref[(qid, f"R@{k}")], abs=1e-12)
            assert precision_at_k(ranked, g, k) == pytest.approx(ref[(qid, f"P@{k}")], abs=1e-12)
            assert hit_rate_at_k(ranked, g, k) == pytest.approx(
                ref[(qid, f"Success@{k}")], abs=1e-12
            )
            assert ndcg_at_k(ranked, g, k) == pytest.approx(ref[(qid, f"nDCG@{k}")], abs=1e-12)
            assert reciprocal_rank(ranked, g, k) == pytest.approx(ref[(qid, f"RR@{k}")], abs=1e-12)
            compared += 1
    assert compared > 100 * len(KS)


def test_reference_keeps_the_last_score_of_a_duplicate_we_keep_the_first() -> None:
    """Why the references are fed de-duplicated lists: handed a repeat, ir_measures ranks the
    document at its later position."""
    qrels = [ir_measures.Qrel("q", "g", 1)]
    raw = [("g", 3.0), ("x", 2.0), ("g", 1.0)]
    ref = ir_measures.calc_aggregate(
        [RR], qrels, [ir_measures.ScoredDoc("q", d, s) for d, s in raw]
    )
    assert ref[RR] == 0.5
    assert reciprocal_rank([d for d, _ in raw], {"g"}) == 1.0
