"""The standing audit of the judge: which judged traces are re-checked, and the audit labels.

A share of judged traces is marked "to audit" by :func:`marked_for_audit`, a pure function of
the trace ID, so every replica marks the same ones. A person (or a second judge) then agrees or
disagrees with each unit verdict the judge gave; each answer is an :class:`AuditLabel`, kept in
the state file by :class:`SqliteAuditLabels` — one per (trace, unit, auditor), a later answer
replacing the earlier one.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragtrace.evaluation.calibration import Confusion

if TYPE_CHECKING:
    from ragtrace_consumers.stores.sqlite_state import SqliteState

__all__ = ["AuditLabel", "SqliteAuditLabels", "calibration_record", "marked_for_audit"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_labels (
    trace_id TEXT NOT NULL,
    unit TEXT NOT NULL,
    auditor TEXT NOT NULL,
    unit_text TEXT NOT NULL,
    judge_supported INTEGER NOT NULL,
    human_supported INTEGER NOT NULL,
    judge_name TEXT NOT NULL,
    judge_model TEXT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    at REAL NOT NULL,
    sampled INTEGER NOT NULL,
    PRIMARY KEY (trace_id, unit, auditor)
);
CREATE INDEX IF NOT EXISTS audit_labels_at ON audit_labels (at);
"""
_COLUMNS = (
    "trace_id, unit, auditor, unit_text, judge_supported, human_supported, judge_name, "
    "judge_model, prompt_sha256, at, sampled"
)


def marked_for_audit(trace_id: str, share: float) -> bool:
    """Whether the trace is among the ``share`` (0..1) audited: the first 64 bits of the
    SHA-256 of its lower-case ID, as a fraction of 2**64, fall below ``share``."""
    if not 0.0 <= share <= 1.0 or math.isnan(share):
        raise ValueError(f"audit share must be within 0..1, got {share!r}")
    digest = hashlib.sha256(trace_id.lower().encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


@dataclass(frozen=True)
class AuditLabel:
    """One auditor's verdict on one unit of a judged answer, beside the judge's:
    ``judge_supported`` / ``human_supported`` are the two verdicts (the auditor agrees when they
    are equal); ``auditor`` is ``"web"`` for a person in the web view (``"judge:<name>"`` for a
    second judge); the judge's name, configured model and prompt hash say whose verdict it was."""

    trace_id: str
    unit: str
    unit_text: str
    judge_supported: bool
    human_supported: bool
    judge_name: str
    judge_model: str
    prompt_sha256: str
    at: float
    auditor: str = "web"
    sampled: bool = True
    """Whether the trace was marked to audit when the answer was given (False: a unit
    audited on a page opened for another reason — not a random sample of the judge's work)."""

    @property
    def agrees(self) -> bool:
        return self.judge_supported == self.human_supported


def calibration_record(label: AuditLabel, detail: Mapping[str, Any] | None) -> dict[str, object]:
    """``label`` as a line of ``ragtrace calibrate``'s labels file: the unit as the claim, the
    trace's context passages (as judged) as its context, the auditor's verdict as the human
    label; {} when the trace kept no passage texts (scored before details were kept, or
    redacted)."""
    passages: list[str] = []
    for key in ("context", "retrieved"):
        found = detail.get(key) if detail is not None else None
        if isinstance(found, list):
            passages = [str(c["text"]) for c in found if isinstance(c, Mapping) and c.get("text")]
        if passages:
            break
    if not passages or not label.unit_text.strip():
        return {}
    return {
        "id": f"audit-{label.trace_id}-{label.unit}",
        "claim": label.unit_text,
        "context": passages,
        "human_entailed": label.human_supported,
    }


def _label(row: tuple[object, ...]) -> AuditLabel:
    trace_id, unit, auditor, text, judge, human, name, model, prompt, at, sampled = row
    return AuditLabel(
        trace_id=str(trace_id),
        unit=str(unit),
        unit_text=str(text),
        judge_supported=bool(judge),
        human_supported=bool(human),
        judge_name=str(name),
        judge_model=str(model),
        prompt_sha256=str(prompt),
        at=float(at),  # type: ignore[arg-type]
        auditor=str(auditor),
        sampled=bool(sampled),
    )


class SqliteAuditLabels:
    """The audit labels in the state file (its ``audit_labels`` table)."""

    def __init__(self, state: SqliteState) -> None:
        self._state = state
        with state.transaction() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)

    def add(self, label: AuditLabel) -> None:
        """Store ``label``, replacing the same auditor's earlier answer on the same unit."""
        self._state.execute(
            f"INSERT OR REPLACE INTO audit_labels ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                label.trace_id,
                label.unit,
                label.auditor,
                label.unit_text,
                int(label.judge_supported),
                int(label.human_supported),
                label.judge_name,
                label.judge_model,
                label.prompt_sha256,
                label.at,
                int(label.sampled),
            ),
        )

    def for_trace(self, trace_id: str) -> list[AuditLabel]:
        """The trace's audit labels, by unit then auditor."""
        rows = self._state.execute(
            f"SELECT {_COLUMNS} FROM audit_labels WHERE trace_id = ? ORDER BY unit, auditor",
            (trace_id,),
        )
        return [_label(r) for r in rows]

    def all(
        self, *, judge_name: str | None = None, prompt_sha256: str | None = None
    ) -> list[AuditLabel]:
        """Every audit label, oldest first; only the judge's (and its prompt's) when named."""
        where, params = [], []
        if judge_name is not None:
            where.append("judge_name = ?")
            params.append(judge_name)
        if prompt_sha256 is not None:
            where.append("prompt_sha256 = ?")
            params.append(prompt_sha256)
        sql = f"SELECT {_COLUMNS} FROM audit_labels"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [_label(r) for r in self._state.execute(sql + " ORDER BY at, trace_id", params)]

    def confusion(self, judge_name: str, prompt_sha256: str, *, auditor: str = "web") -> Confusion:
        """The judge's (and its prompt's) audited units by judge verdict and ``auditor``'s
        verdict, "supported" being positive (the human of a calibration is the auditor here)."""
        rows = self._state.execute(
            "SELECT judge_supported, human_supported, COUNT(*) FROM audit_labels WHERE "
            "judge_name = ? AND prompt_sha256 = ? AND auditor = ? "
            "GROUP BY judge_supported, human_supported",
            (judge_name, prompt_sha256, auditor),
        )
        n = {(bool(j), bool(h)): int(count) for j, h, count in rows}
        return Confusion(
            both_entailed=n.get((True, True), 0),
            judge_only=n.get((True, False), 0),
            human_only=n.get((False, True), 0),
            neither=n.get((False, False), 0),
        )

    def pending(self, share: float, *, last: int = 5000, limit: int = 100) -> list[str]:
        """Judged traces among the ``last`` scored that are marked to audit under ``share`` and
        have no audit label yet, newest first, at most ``limit``."""
        if share <= 0:
            return []
        rows = self._state.execute(
            "SELECT s.trace_id FROM (SELECT trace_id, groundedness, seq FROM scored "
            "ORDER BY seq DESC LIMIT ?) AS s WHERE s.groundedness IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM audit_labels a WHERE a.trace_id = s.trace_id) ORDER BY s.seq DESC",
            (last,),
        )
        marked = [str(r[0]) for r in rows if marked_for_audit(str(r[0]), share)]
        return marked[:limit]
