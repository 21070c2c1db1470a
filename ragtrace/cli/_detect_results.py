"""The results file of ``ragtrace detect-eval``: one JSON line per judged answer, made durable
as it arrives, so a stopped run resumes without judging (or paying for) a finished answer twice.

Each line is the batch judging line of ``ragtrace groundedness --input`` (``{"id", "score",
"error", "judge", "units", ...}``), written and fsync'd before the next is started counting as
done. On reading, the last line of an id wins; a torn last line (a killed run) is ignored, so
that answer is judged again; a line whose ``error`` is set does not count as done either. A file
written by a different judge (name, model or prompt hash) is refused rather than mixed in.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ragtrace.errors import RagtraceError
from ragtrace.evaluation.detection_report import JudgedAnswer, locate_units
from ragtrace.evaluation.judges import JudgeInfo
from ragtrace.evaluation.judges.lexical.judge import OVERLAP_SHARE, ranking_score, word_overlap

__all__ = [
    "DurableLines",
    "ResultsFileError",
    "default_results_path",
    "judged",
    "overlap_share_of",
    "read_results",
]


class ResultsFileError(RagtraceError, ValueError):
    """The results file cannot be resumed from (another judge wrote it)."""


class DurableLines(io.TextIOWrapper):
    """A text file opened for appending whose ``flush`` also fsyncs: a line the batch writer
    flushed survives a crash or ``kill -9`` of the process. A torn last line (no newline) left
    by a killed run is ended first, so the next record does not run into it."""

    def __init__(self, path: str | Path) -> None:
        raw = open(path, "a+b")  # noqa: SIM115
        raw.seek(0, os.SEEK_END)
        torn = False
        if raw.tell():
            raw.seek(-1, os.SEEK_END)
            torn = raw.read(1) != b"\n"
        super().__init__(raw, encoding="utf-8", newline="\n")
        if torn:
            self.write("\n")

    def flush(self) -> None:
        super().flush()
        os.fsync(self.fileno())


def default_results_path(source: str | Path, info: JudgeInfo) -> Path:
    """``<input name>.<judge>-<prompt hash>.results.jsonl`` in the working directory: one file
    per input and judge, so re-running the same command resumes."""
    stem = Path(source).resolve().name.removesuffix(".jsonl")
    model = f"-{info.model}" if info.model else ""
    return Path(f"{stem}.{info.name}{model}-{info.prompt_sha256[:8]}.results.jsonl")


def read_results(path: Path, info: JudgeInfo) -> dict[str, Mapping[str, object]]:
    """id -> its last record in ``path`` (empty when the file does not exist)."""
    records: dict[str, Mapping[str, object]] = {}
    if not path.exists():
        return records
    want = info.to_dict()
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line from a killed run: that answer is judged again
            if not isinstance(doc, dict) or "id" not in doc:
                continue
            judge = doc.get("judge")
            if judge != want:
                raise ResultsFileError(
                    f"{path}, line {n}: written by judge {judge!r}, not the judge of this run "
                    f"({want!r}); give another --results file"
                )
            records[str(doc["id"])] = doc
    return records


def done_ids(records: Mapping[str, Mapping[str, object]]) -> set[str]:
    """Ids with a result that is not an error."""
    return {i for i, r in records.items() if r.get("error") is None and r.get("score") is not None}


def overlap_share_of(judge: object) -> float:
    """The share of word overlap in ``judge``'s ranking key (the lexical judge's; the fitted
    default for any other, whose records carry no supports)."""
    share = getattr(judge, "overlap_share", OVERLAP_SHARE)
    return float(share) if isinstance(share, (int, float)) else OVERLAP_SHARE


def judged(
    answer: str,
    record: Mapping[str, object],
    context: Sequence[str] = (),
    overlap_share: float = OVERLAP_SHARE,
) -> JudgedAnswer | None:
    """The judgement a record holds (None: the judge failed on that answer). The flagged spans
    are the units neither supported nor accepted as claimless, located in ``answer``. When the
    record's claims carry a support (the lexical judge's), the answer's ranking key is their mean
    blended with its word overlap with ``context``
    (:func:`~ragtrace.evaluation.judges.lexical.judge.ranking_score`, with the judge's
    ``overlap_share``)."""
    score = record.get("score")
    if record.get("error") is not None or not isinstance(score, (int, float)):
        return None
    claims = record.get("claims")
    supports = [
        float(c["support"])
        for c in (claims if isinstance(claims, list) else [])
        if isinstance(c, dict) and isinstance(c.get("support"), (int, float))
    ]
    rank = (
        ranking_score(score, supports, word_overlap(answer, context), overlap_share)
        if supports
        else None
    )
    units = record.get("units")
    if not isinstance(units, list) or not units:
        return JudgedAnswer(float(score), None, rank)
    located = locate_units(answer, [str(u.get("text", "")) for u in units])
    flagged = tuple(
        span
        for u, span in zip(units, located, strict=True)
        if span is not None and not u.get("supported") and not u.get("claimless")
    )
    return JudgedAnswer(float(score), flagged, rank)
