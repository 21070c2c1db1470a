"""The embedded evaluator's label store: served from memory, every set kept in the state file.

Lookups (the scoring hot path) are a :class:`~ragtrace_consumers.stores.memory.MemoryLabelStore`'s.
:meth:`SqliteLabelStore.load` also records the set in the state file's ``label_sets`` table under
its version (the content hash ``ragtrace labels`` prints), so the set in use is known to
``ragtrace labels export --state`` without a running evaluator. Questions labelled from live
traffic (:meth:`SqliteLabelStore.add`) are kept apart in ``labels_added``: at start they are laid
over the labels file again (:meth:`SqliteLabelStore.start`), so a restart loses none of them,
with the time each was saved (:meth:`SqliteLabelStore.labelled_at`). A save that names the
version of the question it replaces is checked and written under one lock (the web view's
requests run on several threads of this one process): a stale form never overwrites a newer label.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.errors import LabelConflict
from ragtrace_consumers.model import question_from_json, question_to_json, question_version
from ragtrace_consumers.stores.memory import MemoryLabelStore
from ragtrace_consumers.stores.sqlite_state import SqliteState

__all__ = ["SqliteLabelStore", "current_label_set"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS label_sets (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "version TEXT NOT NULL, loaded_at REAL NOT NULL, source TEXT, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS labels_added (qid TEXT PRIMARY KEY, body TEXT NOT NULL, "
    "trace_id TEXT, added_at REAL NOT NULL)",
)


def _ensure(state: SqliteState) -> None:
    for statement in _SCHEMA:
        state.execute(statement)


def current_label_set(state: SqliteState) -> tuple[str, list[LabelledQuestion]] | None:
    """(version, questions) of the set last loaded into the state file (None: never)."""
    _ensure(state)
    rows = state.execute("SELECT version, body FROM label_sets ORDER BY seq DESC LIMIT 1")
    if not rows:
        return None
    version, body = rows[0]
    return str(version), [question_from_json(line) for line in json.loads(str(body))]


class SqliteLabelStore(MemoryLabelStore):
    """:class:`~ragtrace_consumers.model.LabelStore`: a
    :class:`~ragtrace_consumers.stores.memory.MemoryLabelStore` whose every set is also recorded
    in ``state`` (lookups never touch the file)."""

    def __init__(self, state: SqliteState) -> None:
        super().__init__()
        self._state = state
        self._writing = threading.Lock()
        _ensure(state)

    def start(self, base: Sequence[LabelledQuestion], *, source: str | None = None) -> str:
        """Load ``base`` (the labels file; may be empty) with the added questions laid over it."""
        added = [
            question_from_json(str(r[0]))
            for r in self._state.execute("SELECT body FROM labels_added ORDER BY added_at, qid")
        ]
        if not base and not added:
            return ""
        merged = {q.qid: q for q in base}
        merged.update((q.qid, q) for q in added)
        tail = f" + {len(added)} labelled from traces" if added else ""
        return self.load(list(merged.values()), source=(source or "none") + tail)

    def load(self, questions: Sequence[LabelledQuestion], *, source: str | None = None) -> str:
        """Replace the set (lookups switch atomically) and record it; returns its version."""
        version = super().load(questions, source=source)
        last = self._state.execute("SELECT version FROM label_sets ORDER BY seq DESC LIMIT 1")
        if last and last[0][0] == version:  # a restart with the same set records nothing
            return version
        body = json.dumps([question_to_json(q) for q in sorted(questions, key=lambda q: q.qid)])
        self._state.execute(
            "INSERT INTO label_sets (version, loaded_at, source, body) VALUES (?, ?, ?, ?)",
            (version, time.time(), source, body),
        )
        return version

    def add(
        self,
        question: LabelledQuestion,
        *,
        trace_id: str | None = None,
        replaces: str | None = None,
    ) -> str:
        """Add (or replace, by qid) one labelled question; returns the new set's version.
        ``replaces``: the version of the qid's label the caller read (``""``: none), else
        :class:`~ragtrace_consumers.errors.LabelConflict` and nothing is written."""
        with self._writing:
            if replaces is not None:
                current = question_version(self.by_id(question.qid))
                if current != replaces:
                    raise LabelConflict(question.qid, replaces, current)
            self._state.execute(
                "INSERT OR REPLACE INTO labels_added (qid, body, trace_id, added_at) "
                "VALUES (?, ?, ?, ?)",
                (question.qid, question_to_json(question), trace_id, time.time()),
            )
            kept = [q for q in self.questions() if q.qid != question.qid]
            where = f"trace {trace_id}" if trace_id else "the web view"
            return self.load([*kept, question], source=f"labelled from {where}")

    def labelled_at(self, qid: str) -> float | None:
        """When ``qid`` was last labelled from a trace (None: it comes from the labels file)."""
        rows = self._state.execute("SELECT added_at FROM labels_added WHERE qid = ?", (qid,))
        return float(rows[0][0]) if rows else None
