"""The scored table's schema version 2: every answer gets a verdict, and a file of version 1 is
migrated in place without losing a row."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ragtrace_consumers.stores.scored_results import SCHEMA_VERSION, SEVERITY, ScoredResult
from ragtrace_consumers.stores.sqlite_state import SqliteState
from tests.unit.consumers.webview.rows import result

# Version 1 as it was written: the indexed columns without ``grounded``, the old severities,
# the partial index on the one unlabelled cell.
_VERSION_1 = """
CREATE TABLE scored (seq INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL UNIQUE,
    scored_at REAL NOT NULL, record TEXT NOT NULL, service TEXT, cell TEXT, judge TEXT,
    query TEXT, groundedness REAL, recall REAL, severity INTEGER, worst REAL);
CREATE TABLE scored_detail (trace_id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE INDEX scored_worst ON scored(severity, worst, seq);
CREATE INDEX scored_cell ON scored(cell, severity, worst, seq);
CREATE INDEX scored_unlabelled ON scored(query) WHERE cell = 'unlabelled';
PRAGMA user_version = 1;
"""
_OLD_SEVERITY = {"generation_failed": 1, "unjudged": 3, "unlabelled": 4, "fine": 5}
_UNANSWERABLE = {"gold_size": 0, "labels_version": "v1"}


def _version_1_file(path: Path, rows: list[ScoredResult]) -> None:
    old = sqlite3.connect(path)
    old.executescript(_VERSION_1)
    for r in rows:
        d = r.to_dict()
        del d["grounded"]  # version 1 had no verdict
        old.execute(
            "INSERT INTO scored (trace_id, scored_at, record, service, cell, judge, query, "
            "groundedness, recall, severity, worst) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                *(r.trace_id, r.scored_at, json.dumps(d), r.service, r.cell, r.judge_name),
                *(r.query, r.groundedness, r.recall, _OLD_SEVERITY[r.cell]),
            ),
        )
    old.commit()
    old.close()


def test_a_version_1_file_gets_a_verdict_for_every_answer(tmp_path: Path) -> None:
    unlabelled = {"recall": None, "k": None}
    rows = [
        result(1, "unlabelled", groundedness=0.5, **unlabelled),  # a hallucination, no label
        result(2, "unlabelled", groundedness=0.9, **unlabelled),
        result(3, "unlabelled", groundedness=None, **unlabelled),
        result(
            4,
            "unlabelled",
            recall=None,
            question_id="q-none",
            answer="I don't know; the passages do not say.",
            extra=_UNANSWERABLE,
        ),
        result(
            5,
            "unlabelled",
            recall=None,
            question_id="q-none",
            answer="Dark mode is under Profile, then Appearance.",
            extra=_UNANSWERABLE,
        ),
        # Configured at 0.9 then: the cell, not the default threshold, gives the verdict.
        result(6, "generation_failed", groundedness=0.85),
        result(7, "unjudged", groundedness=None, judge_error="judge timed out"),
        result(8, "fine", groundedness=0.79),  # configured at 0.7 then
    ]
    path = tmp_path / "v1.sqlite3"
    _version_1_file(path, rows)
    with SqliteState(path) as state:
        assert state.execute("PRAGMA user_version") == [(SCHEMA_VERSION,)]
        got = state.execute("SELECT cell, grounded, severity FROM scored ORDER BY seq")
        want = [
            ("unlabelled_not_grounded", 0),
            ("unlabelled", 1),
            ("unlabelled", None),
            ("unanswerable_declined", 1),
            ("unanswerable_answered", 1),
            ("generation_failed", 0),
            ("unjudged", None),
            ("fine", 1),
        ]
        assert got == [(cell, grounded, SEVERITY[cell]) for cell, grounded in want]
        # The record says the same as the columns, and nothing else of it changed.
        for before, (cell, grounded) in zip(rows, want, strict=True):
            after = state.results.get(before.trace_id)
            assert after is not None
            assert after.cell == cell
            assert after.grounded is (None if grounded is None else bool(grounded))
            assert after.to_dict() | {"cell": before.cell, "grounded": None} == before.to_dict()
        # Seen without a label: both unlabelled cells, through the rebuilt partial index.
        assert [q for q, _, _ in state.results.unlabelled_questions()] == [
            "question 1?",
            "question 2?",
            "question 3?",
        ]
        assert state.results.not_grounded_counts() == {
            "unlabelled_not_grounded": 1,
            "generation_failed": 1,
        }
    with SqliteState(path) as again:  # opening a migrated file changes nothing
        assert again.execute("SELECT cell FROM scored ORDER BY seq") == [(c,) for c, _ in want]
