"""The embedded evaluator's SQLite state: each store's contract, and that it survives a reopen."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.stores.sqlite_state import SqliteState

TRACE_A = "a" * 32
TRACE_B = "b" * 32


def _result(trace_id: str = TRACE_A, **over: object) -> ScoredResult:
    fields: dict[str, object] = {
        "trace_id": trace_id,
        "scored_at": 1700000000.5,
        "service": "support-bot",
        "cell": "retrieval_failed",
        "pipeline": "rag",
        "question_id": "q-audit-team",
        "query": "How long are audit logs kept on the Team plan?",
        "matched_by": "query_text",
        "k": 5,
        "recall": 0.0,
        "hit_rate": 0.0,
        "reciprocal_rank": 0.0,
        "groundedness": 1.0,
        "claims": 2,
        "unsupported_claims": (),
        "judge_name": "lexical",
        "judge_model": None,
        "retrieved": ("c-9930", "c-1200"),
        "answer": "Audit logs are retained for 90 days.",
        "extra": {"labels_version": "abc123"},
    }
    fields.update(over)
    return ScoredResult(**fields)  # type: ignore[arg-type]


def test_judge_cache_get_put_and_overwrite(tmp_path: Path) -> None:
    with SqliteState(tmp_path / "s.db") as state:
        cache = state.judge_cache
        assert cache.get("k1") is None
        cache.put("k1", b"\x00result")
        assert cache.get("k1") == b"\x00result"
        cache.put("k1", b"second")
        assert cache.get("k1") == b"second"
        assert len(cache) == 1


def test_batched_cache_and_idempotency_calls_match_the_per_item_ones(tmp_path: Path) -> None:
    with SqliteState(tmp_path / "s.db") as state:
        cache, marks = state.judge_cache, state.idempotency
        assert cache.get_many([]) == [] and marks.written_many([]) == []
        cache.put_many([("k1", b"one"), ("k2", b"\x00two")])
        cache.put_many([])
        assert cache.get_many(["k2", "nope", "k1"]) == [b"\x00two", None, b"one"]
        keys = [f"k{i}" for i in range(1200)]  # more than one IN (...) query
        cache.put_many([(k, k.encode()) for k in keys])
        assert cache.get_many(keys) == [k.encode() for k in keys]
        marks.mark_written_many([(TRACE_A, "recall"), (TRACE_B, "groundedness")])
        marks.mark_written_many([(TRACE_A, "recall")])  # a second mark is harmless
        assert marks.written_many(
            [(TRACE_A, "recall"), (TRACE_A, "groundedness"), (TRACE_B, "groundedness")]
        ) == [True, False, True]
        assert marks.written(TRACE_B, "groundedness") and not marks.written(TRACE_B, "recall")


def test_idempotency_is_per_trace_and_metric(tmp_path: Path) -> None:
    with SqliteState(tmp_path / "s.db") as state:
        store = state.idempotency
        assert not store.written(TRACE_A, "groundedness")
        store.mark_written(TRACE_A, "groundedness")
        store.mark_written(TRACE_A, "groundedness")  # a second mark is harmless
        assert store.written(TRACE_A, "groundedness")
        assert not store.written(TRACE_A, "recall")
        assert not store.written(TRACE_B, "groundedness")


def test_results_round_trip_every_field(tmp_path: Path) -> None:
    with SqliteState(tmp_path / "s.db") as state:
        r = _result(unsupported_claims=("The export API returns CSV.",), judge_error=None)
        state.results.put(r)
        assert state.results.get(TRACE_A) == r
        assert state.results.get(TRACE_B) is None


def test_nan_scores_are_stored_as_none(tmp_path: Path) -> None:
    with SqliteState(tmp_path / "s.db") as state:
        state.results.put(_result(recall=math.nan, cell="unlabelled"))
        got = state.results.get(TRACE_A)
        assert got is not None and got.recall is None and got.cell == "unlabelled"


def test_rescoring_replaces_the_record_and_keeps_its_position(tmp_path: Path) -> None:
    with SqliteState(tmp_path / "s.db") as state:
        state.results.put(_result(TRACE_A))
        state.results.put(_result(TRACE_B, cell="fine"))
        state.results.put(_result(TRACE_A, cell="both_failed", groundedness=0.5))
        rows = state.results.all()
        assert [(seq, r.trace_id, r.cell) for seq, r in rows] == [
            (1, TRACE_A, "both_failed"),
            (2, TRACE_B, "fine"),
        ]
        assert [r.trace_id for _, r in state.results.all(after_seq=1)] == [TRACE_B]
        assert [r.trace_id for _, r in state.results.all(limit=1)] == [TRACE_A]
        assert len(state.results) == 2


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "state.db"
    with SqliteState(path) as state:
        state.judge_cache.put("key", b"value")
        state.idempotency.mark_written(TRACE_A, "recall")
        state.results.put(_result())
    with SqliteState(path) as reopened:
        assert reopened.judge_cache.get("key") == b"value"
        assert reopened.idempotency.written(TRACE_A, "recall")
        assert [r for _, r in reopened.results.all()] == [_result()]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"trace_id": "abc"}, "trace_id"),
        ({"cell": ""}, "cell"),
        ({"recall": 1.5}, "recall"),
        ({"groundedness": -0.1}, "groundedness"),
    ],
)
def test_invalid_results_are_refused(over: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _result(**over)
