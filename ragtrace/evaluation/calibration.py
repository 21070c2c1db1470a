"""Judge calibration against human per-claim labels.

A person marks each claim entailed or not by its supplied context; the judge gives its verdict on
the *same* claims (``judge_claims``: the claims are sent already split, so verdicts compare one
to one). The report gives agreement, Cohen's kappa, the confusion matrix and every disagreeing
claim, stamped with the judge's name, model and prompt hash.

The judge counts a claim entailed only with an evidence quote that passes every check (as in
scoring: :mod:`ragtrace.evaluation.judges.checks`), and the report counts how many claims each
check downgraded; ``require_verified_evidence=False`` compares its bare verdicts instead (a
"loose" judge).

The last calibration's stamp is kept in a small JSON file (``RAGTRACE_CALIBRATION_FILE``, default
``$XDG_CONFIG_HOME/ragtrace/calibration.json``, i.e. ``~/.config/ragtrace/calibration.json``);
:func:`calibration_warning` says when the judge in use differs from it, since a judge change
shifts every score and needs a re-run of the baseline.

Labels file (JSON Lines), one claim per line::

    {"id": "a1-c1", "claim": "Audit logs are kept 90 days.", "context": ["passage", ...],
     "human_entailed": true, "answer": "optional: the answer the claim came from"}

Consecutive lines with the same context are judged in one call.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from ragtrace.evaluation.judges.base import ClaimVerdict, GroundednessResult, JudgeInfo
from ragtrace.evaluation.judges.checks import CHECKS
from ragtrace.evaluation.judges.lexical.measured import HeldOut, held_out_for, held_out_from_dict
from ragtrace.evaluation.labels import InputFileError, read_json_lines

__all__ = [
    "ENV_CALIBRATION_FILE",
    "CalibrationItem",
    "CalibrationReport",
    "CalibrationStamp",
    "ClaimJudge",
    "Confusion",
    "HumanLabel",
    "calibrate",
    "calibration_report",
    "calibration_warning",
    "cohen_kappa",
    "default_stamp_path",
    "load_human_labels",
    "load_stamp",
    "save_stamp",
]

ENV_CALIBRATION_FILE = "RAGTRACE_CALIBRATION_FILE"
_log = logging.getLogger(__name__)


def _or_null(x: float) -> float | None:
    """A rate for JSON: NaN (nothing to rate) as null."""
    return None if math.isnan(x) else x


class ClaimJudge(Protocol):
    """A judge that can give verdicts on claims already split (both built-in judges can)."""

    def judge_claims(self, claims: Sequence[str], context: Sequence[str]) -> GroundednessResult: ...


@dataclass(frozen=True)
class HumanLabel:
    id: str
    claim: str
    context: tuple[str, ...]
    human_entailed: bool
    answer: str | None = None

    def __post_init__(self) -> None:
        if not self.id or not self.claim.strip():
            raise ValueError("HumanLabel needs a non-empty id and claim")


@dataclass(frozen=True)
class CalibrationItem:
    """One claim: the human label against the judge's verdict."""

    id: str
    claim: str
    human_entailed: bool
    judge_entailed: bool
    evidence: str | None = None
    evidence_verified: bool = False
    check: str | None = None
    """The check that downgraded the judge's "entailed" (see judges.checks), if one did."""

    @property
    def agrees(self) -> bool:
        return self.human_entailed == self.judge_entailed

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "id": self.id,
            "claim": self.claim,
            "human_entailed": self.human_entailed,
            "judge_entailed": self.judge_entailed,
            "evidence": self.evidence,
            "evidence_verified": self.evidence_verified,
        }
        if self.check is not None:
            d["check"] = self.check
        return d


@dataclass(frozen=True)
class Confusion:
    """Judge verdict against human label, "entailed" being positive."""

    both_entailed: int
    judge_only: int  # judge entailed, human not: the loose-judge failure
    human_only: int  # human entailed, judge not
    neither: int

    @property
    def total(self) -> int:
        return self.both_entailed + self.judge_only + self.human_only + self.neither

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Confusion:
        def count(key: str) -> int:
            value = d[key]
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"confusion.{key} must be a non-negative integer")
            return value

        return cls(
            count("both_entailed"), count("judge_only"), count("human_only"), count("neither")
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "both_entailed": self.both_entailed,
            "judge_only": self.judge_only,
            "human_only": self.human_only,
            "neither": self.neither,
        }


def cohen_kappa(confusion: Confusion) -> float:
    """(p_o − p_e) / (1 − p_e); NaN when undefined (p_e = 1: both raters constant and equal)."""
    n = confusion.total
    if n == 0:
        return math.nan
    p_o = (confusion.both_entailed + confusion.neither) / n
    judge_yes = (confusion.both_entailed + confusion.judge_only) / n
    human_yes = (confusion.both_entailed + confusion.human_only) / n
    p_e = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    return math.nan if p_e == 1 else (p_o - p_e) / (1 - p_e)


@dataclass(frozen=True)
class CalibrationReport:
    judge: JudgeInfo
    items: tuple[CalibrationItem, ...]
    require_verified_evidence: bool = True
    errors: int = 0  # claims the judge returned an error for (left out of every figure)

    @property
    def confusion(self) -> Confusion:
        def count(h: bool, j: bool) -> int:
            return sum(1 for i in self.items if i.human_entailed is h and i.judge_entailed is j)

        return Confusion(
            count(True, True), count(False, True), count(True, False), count(False, False)
        )

    @property
    def agreement(self) -> float:
        return sum(i.agrees for i in self.items) / len(self.items) if self.items else math.nan

    @property
    def kappa(self) -> float:
        return cohen_kappa(self.confusion)

    @property
    def disagreements(self) -> tuple[CalibrationItem, ...]:
        return tuple(i for i in self.items if not i.agrees)

    @property
    def downgrades_by_check(self) -> dict[str, int]:
        """How many claims the judge called entailed each check downgraded (every check named,
        0 included; the first failed check counts). In ``--loose`` mode these are the claims
        the checks *would* have downgraded."""
        counts = dict.fromkeys(CHECKS, 0)
        for item in self.items:
            if item.check is not None:
                counts[item.check] = counts.get(item.check, 0) + 1
        return counts

    @property
    def judge_entailed_rate(self) -> float:
        """Mean judge verdict over the claims (what a groundedness average would report)."""
        return (
            sum(i.judge_entailed for i in self.items) / len(self.items) if self.items else math.nan
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "judge": self.judge.to_dict(),
            "claims": len(self.items),
            "errors": self.errors,
            "require_verified_evidence": self.require_verified_evidence,
            "agreement": _or_null(self.agreement),
            "kappa": _or_null(self.kappa),
            "confusion": self.confusion.to_dict(),
            "downgrades_by_check": self.downgrades_by_check,
            "disagreements": [i.to_dict() for i in self.disagreements],
        }


def _items(
    labels: Sequence[HumanLabel], verdicts: Sequence[ClaimVerdict], require_verified_evidence: bool
) -> list[CalibrationItem]:
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(labels)} labels but {len(verdicts)} judge verdicts")
    return [
        CalibrationItem(
            label.id,
            label.claim,
            label.human_entailed,
            v.entailed if require_verified_evidence else v.judge_entailed,
            v.evidence,
            v.evidence_verified,
            _check_of(v),
        )
        for label, v in zip(labels, verdicts, strict=True)
    ]


def _check_of(v: ClaimVerdict) -> str | None:
    if not v.downgraded:
        return None
    if v.check is not None:
        return v.check
    return "no_quote" if not (v.evidence and v.evidence.strip()) else "verbatim"


def calibration_report(
    labels: Sequence[HumanLabel],
    verdicts: Sequence[ClaimVerdict],
    judge: JudgeInfo,
    *,
    require_verified_evidence: bool = True,
) -> CalibrationReport:
    """Compare human labels with the judge's verdicts on the same claims, in the same order."""
    return CalibrationReport(
        judge, tuple(_items(labels, verdicts, require_verified_evidence)), require_verified_evidence
    )


def _groups(labels: Sequence[HumanLabel]) -> list[list[HumanLabel]]:
    groups: list[list[HumanLabel]] = []
    for label in labels:
        if groups and groups[-1][0].context == label.context:
            groups[-1].append(label)
        else:
            groups.append([label])
    return groups


def calibrate(
    labels: Sequence[HumanLabel], judge: ClaimJudge, *, require_verified_evidence: bool = True
) -> CalibrationReport:
    """Judge every labelled claim (one call per run of lines sharing a context) and compare.
    A group the judge fails on (error result) is counted in ``errors`` and left out; an
    unreachable judge raises ``JudgeUnavailable``."""
    items: list[CalibrationItem] = []
    errors = 0
    info: JudgeInfo | None = None
    for group in _groups(labels):
        result = judge.judge_claims([x.claim for x in group], list(group[0].context))
        info = result.judge
        if result.error is not None:
            _log.warning("judge error on claims %s: %s", [x.id for x in group], result.error)
            errors += len(group)
            continue
        items.extend(_items(group, result.claims, require_verified_evidence))
    if info is None:
        raise ValueError("no labelled claims to calibrate")
    return CalibrationReport(info, tuple(items), require_verified_evidence, errors)


def load_human_labels(path: str | Path) -> list[HumanLabel]:
    """Read the labels file (module docstring); errors name the file, line and field."""
    labels: list[HumanLabel] = []
    seen: set[str] = set()
    for number, record in read_json_lines(path):

        def need_str(field: str, record: dict[str, object] = record, number: int = number) -> str:
            value = record.get(field)
            if not isinstance(value, str) or not value.strip():
                raise InputFileError(path, number, field, "must be a non-empty string")
            return value

        label_id, claim = need_str("id"), need_str("claim")
        if label_id in seen:
            raise InputFileError(path, number, "id", f"duplicate id {label_id!r}")
        seen.add(label_id)
        context = record.get("context")
        if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
            raise InputFileError(path, number, "context", "must be a list of strings")
        human = record.get("human_entailed")
        if not isinstance(human, bool):
            raise InputFileError(path, number, "human_entailed", "must be true or false")
        answer = record.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise InputFileError(path, number, "answer", "must be a string when given")
        labels.append(HumanLabel(label_id, claim, tuple(context), human, answer))
    if not labels:
        raise InputFileError(path, None, None, "no labelled claims")
    return labels


# --- the last calibration's stamp -----------------------------------------------------------
@dataclass(frozen=True)
class CalibrationStamp:
    """The last calibration: which judge, how well it agreed, and its confusion matrix (None in
    a stamp written before the matrix was kept: such a stamp cannot correct a rate); for the
    offline judge, also what the benchmark measured of that version held out
    (``held_out``; None for any other judge or version)."""

    judge: JudgeInfo
    agreement: float | None
    kappa: float | None
    claims: int
    calibrated_at: str
    confusion: Confusion | None = None
    held_out: HeldOut | None = None

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "judge": self.judge.to_dict(),
            "agreement": self.agreement,
            "kappa": self.kappa,
            "claims": self.claims,
            "calibrated_at": self.calibrated_at,
        }
        if self.confusion is not None:
            d["confusion"] = self.confusion.to_dict()
        if self.held_out is not None:
            d["held_out"] = asdict(self.held_out)
        return d

    def matches(self, judge: JudgeInfo) -> bool:
        """Same judge name, model and prompt hash as ``judge``."""
        return all(
            getattr(self.judge, f) == getattr(judge, f) for f in ("name", "model", "prompt_sha256")
        )


def default_stamp_path() -> Path:
    env = os.environ.get(ENV_CALIBRATION_FILE, "").strip()
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    return Path(base) / "ragtrace" / "calibration.json"


def save_stamp(report: CalibrationReport, path: str | Path | None = None) -> CalibrationStamp:
    stamp = CalibrationStamp(
        report.judge,
        _or_null(report.agreement),
        _or_null(report.kappa),
        len(report.items),
        datetime.now(timezone.utc).isoformat(timespec="seconds"),
        report.confusion,
        held_out_for(report.judge),
    )
    target = Path(path) if path is not None else default_stamp_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".tmp")
    tmp.write_text(json.dumps(stamp.to_dict(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(target)
    return stamp


def load_stamp(path: str | Path | None = None) -> CalibrationStamp | None:
    """The last stamp, or None when there is none (an unreadable file warns and counts as none)."""
    target = Path(path) if path is not None else default_stamp_path()
    if not target.exists():
        return None
    try:
        d = json.loads(target.read_text(encoding="utf-8"))
        return CalibrationStamp(
            JudgeInfo.from_dict(d["judge"]),
            d.get("agreement"),
            d.get("kappa"),
            int(d.get("claims", 0)),
            str(d["calibrated_at"]),
            Confusion.from_dict(d["confusion"]) if d.get("confusion") is not None else None,
            held_out_from_dict(d["held_out"]) if d.get("held_out") is not None else None,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _log.warning("ignoring unreadable calibration stamp %s: %s", target, exc)
        return None


def calibration_warning(judge: JudgeInfo, path: str | Path | None = None) -> str | None:
    """A warning when ``judge`` differs from the last calibrated judge (None when it matches or
    when nothing was ever calibrated)."""
    stamp = load_stamp(path)
    if stamp is None:
        return None
    last = stamp.judge
    changes = [
        f"{field} {getattr(last, field)!r} -> {getattr(judge, field)!r}"
        for field in ("name", "model", "prompt_sha256")
        if getattr(last, field) != getattr(judge, field)
    ]
    if not changes:
        return None
    return (
        "the judge differs from the one last calibrated ("
        + "; ".join(changes)
        + f", calibrated {stamp.calibrated_at}): scores are not comparable with the "
        "calibrated baseline; run `ragtrace calibrate` again"
    )
