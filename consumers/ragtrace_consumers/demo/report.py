"""What ``ragtrace demo`` prints: per-question scores, the unsupported claims, the four-cell table
(and the cells outside it: unlabelled, grounded or not; unanswerable, declined or answered;
unjudged) and the totals, every answer not grounded counted whether labelled or not — as text
for a person, or as one JSON document for tests and scripts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragtrace.evaluation.hallucination_rate import HallucinationRate, hallucination_rate
from ragtrace.evaluation.judges.base import JudgeInfo
from ragtrace.evaluation.rates import WILSON, Rate, bootstrap_mean, wilson
from ragtrace_consumers.demo.run import DemoQuestion, DemoRun

__all__ = [
    "CELL_LABELS",
    "cell_counts",
    "format_text",
    "not_grounded_rate",
    "rates",
    "to_json",
    "totals",
]

CELL_LABELS = {
    "fine": "fine",
    "retrieval_failed": "retrieval failed",
    "generation_failed": "generation failed",
    "both_failed": "both failed",
    "unlabelled": "unlabelled",
    "unlabelled_not_grounded": "unlabelled · not grounded",
    "unanswerable_declined": "unanswerable · declined",
    "unanswerable_answered": "unanswerable · answered",
    "unjudged": "unjudged",
}
_OUTSIDE = (
    "unlabelled",
    "unlabelled_not_grounded",
    "unanswerable_declined",
    "unanswerable_answered",
    "unjudged",
)
_ESCALATIONS = (
    "retrieval_failed",
    "generation_failed",
    "both_failed",
    "unlabelled_not_grounded",
    "unanswerable_answered",
)
_DEFINITIONS = {"mean_recall": "mean recall", "hit_rate": "hit rate"}


def _num(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}"


def cell_counts(questions: Sequence[DemoQuestion]) -> dict[str, int]:
    """Questions per cell, every cell present (0 when empty), in :data:`CELL_LABELS` order."""
    counts = dict.fromkeys(CELL_LABELS, 0)
    for q in questions:
        counts[q.cell] = counts.get(q.cell, 0) + 1
    return counts


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _not_grounded(run: DemoRun) -> list[DemoQuestion]:
    """The questions whose answer was judged below the threshold, whatever their cell."""
    t = run.groundedness_threshold
    return [q for q in run.questions if q.groundedness is not None and q.groundedness < t]


def totals(run: DemoRun) -> dict[str, Any]:
    qs = run.questions
    recalls = [q.recall for q in qs if q.recall is not None]
    hits = [q.hit_rate for q in qs if q.hit_rate is not None]
    grounded = [q.groundedness for q in qs if q.groundedness is not None]
    labelled = [q for q in qs if q.gold]
    return {
        "questions": len(qs),
        "labelled": len(labelled),
        "scored_for_recall": len(recalls),
        "judged": len(grounded),
        "mean_recall": _mean(recalls),
        "mean_hit_rate": _mean(hits),
        "mean_groundedness": _mean(grounded),
        "avg_gold_size": _mean([float(len(q.gold)) for q in labelled]),
        "unsupported_claims": sum(len(q.unsupported_claims) for q in qs),
        "not_grounded": len(_not_grounded(run)),
        "escalations": sum(1 for q in qs if q.cell in _ESCALATIONS),
    }


def _judge_info(run: DemoRun) -> JudgeInfo | None:
    j = run.judge
    return None if j.prompt_sha256 is None else JudgeInfo(j.name, j.model, j.prompt_sha256)


def not_grounded_rate(run: DemoRun) -> HallucinationRate:
    """Judged answers below the groundedness threshold, raw and corrected by the run's
    calibration stamp when it is of this judge."""
    scores = [q.groundedness for q in run.questions if q.groundedness is not None]
    failed = sum(1 for g in scores if g < run.groundedness_threshold)
    return hallucination_rate(failed, len(scores), _judge_info(run), run.calibration)


def rates(run: DemoRun) -> dict[str, Rate]:
    """Every share and mean of the totals with its n and 95 % interval: each cell's share of
    the questions and the hit rate (Wilson), mean recall and mean groundedness (bootstrap)."""
    qs = run.questions
    counts = cell_counts(qs)
    hits = [q.hit_rate for q in qs if q.hit_rate is not None]
    out = {f"cell {CELL_LABELS[c]}": wilson(n, len(qs)) for c, n in counts.items()}
    out[f"recall@{run.k}"] = bootstrap_mean([q.recall for q in qs if q.recall is not None])
    out[f"hit rate@{run.k}"] = wilson(sum(1 for h in hits if h >= 1.0), len(hits))
    out["groundedness"] = bootstrap_mean([q.groundedness for q in qs if q.groundedness is not None])
    return out


def to_json(run: DemoRun) -> dict[str, object]:
    return {
        "judge": {"name": run.judge.name, "model": run.judge.model, "summary": run.judge.summary},
        "k": run.k,
        "recall_definition": run.recall_definition,
        "thresholds": {"recall": run.recall_threshold, "groundedness": run.groundedness_threshold},
        "questions": [q.to_dict() for q in run.questions],
        "cells": cell_counts(run.questions),
        "totals": totals(run),
        "rates": {name: r.to_dict() for name, r in rates(run).items()},
        "not_grounded": not_grounded_rate(run).to_dict(),
    }


def _cell_names(run: DemoRun, cell: str) -> str:
    numbers = [f"#{q.number}" for q in run.questions if q.cell == cell]
    count = len(numbers)
    return f"{count}  {' '.join(numbers)}".rstrip()


def format_text(run: DemoRun) -> str:
    k = run.k
    lines = ["", "Per question"]
    width = max(len(q.question) for q in run.questions)
    header = f"  {'#':>2}  {'question':<{width}}  recall@{k}  grounded  cell"
    lines += [header, "  " + "-" * (len(header) - 2 + len("generation failed") - len("cell"))]
    for q in run.questions:
        lines.append(
            f"  {q.number:>2}  {q.question:<{width}}  {_num(q.recall):>8}  "
            f"{_num(q.groundedness):>8}  {CELL_LABELS.get(q.cell, q.cell)}"
        )
        if q.gold and q.recall is not None and q.recall < run.recall_threshold:
            lines.append(
                f"  {'':>2}  gold {', '.join(q.gold)} not in the top {k}: "
                f"retrieved {', '.join(q.retrieved)}"
            )
        for claim in q.unsupported_claims:
            lines.append(f'  {"":>2}  not supported by the context: "{claim}"')
        if q.judge_error:
            lines.append(f"  {'':>2}  judge error: {q.judge_error}")

    lines += [
        "",
        (
            f"Four cells (recall@{k} passes at >= {run.recall_threshold:g}, "
            f"groundedness at >= {run.groundedness_threshold:g})"
        ),
    ]
    rows = [
        ("", "grounded", "not grounded"),
        (
            "retrieval ok",
            "fine " + _cell_names(run, "fine"),
            "generation failed " + _cell_names(run, "generation_failed"),
        ),
        (
            "retrieval failed",
            "retrieval failed " + _cell_names(run, "retrieval_failed"),
            "both failed " + _cell_names(run, "both_failed"),
        ),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        lines.append(
            "  " + "  |  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
        )
    counts = cell_counts(run.questions)
    outside = [
        f"{counts[c]} {CELL_LABELS[c]} {_cell_names(run, c).split('  ', 1)[-1]}".rstrip()
        for c in _OUTSIDE
        if counts[c]
    ]
    if outside:
        lines.append(
            "  outside the table (no label, unanswerable, or no judgement): " + "; ".join(outside)
        )

    t = totals(run)
    definition = _DEFINITIONS.get(run.recall_definition, run.recall_definition)
    recall_line = (
        f"  recall@{k} ({definition}, average gold-set size "
        f"{_num(t['avg_gold_size'])}): {_num(t['mean_recall'])} over "
        f"{t['scored_for_recall']} labelled questions"
    )
    grounded_line = (
        f"  groundedness: {_num(t['mean_groundedness'])} over {t['judged']} "
        f"answers, {t['unsupported_claims']} unsupported claim(s)"
    )
    lines += [
        "",
        "Totals",
        f"  questions {t['questions']}, labelled {t['labelled']}, judged {t['judged']}",
        recall_line,
        grounded_line,
        "  answers not grounded, labelled or not: "
        + f"{t['not_grounded']}  {' '.join(f'#{q.number}' for q in _not_grounded(run))}".rstrip(),
        f"  escalations: {t['escalations']} (each in its own cell: a different owner fixes it)",
        f"  judge: {run.judge.summary}",
        "",
        "Rates (value [95 % interval] n: Wilson for shares, bootstrap for means; "
        "docs/statistics.md)",
    ]
    all_rates = rates(run)
    width = max(len(name) for name in all_rates)
    for name, rate in all_rates.items():
        lines.append(f"  {name:<{width}}  {rate.describe(percent=rate.method == WILSON)}")
    lines += ["  " + line for line in not_grounded_rate(run).lines()]
    return "\n".join(lines)
