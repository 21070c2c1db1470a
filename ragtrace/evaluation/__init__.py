"""Evaluation core shared by the online consumers and the offline tools.

Retrieval metrics need no model call (:mod:`.retrieval`, aggregated in :mod:`.report`, compared
question by question in :mod:`.compare`); groundedness needs a judge (:mod:`.judges`, checked
against human labels in :mod:`.calibration`); :mod:`.attribution` places a question in one of the
four cells. Nothing here imports Kafka, Redis or Anthropic at import time.
"""

from __future__ import annotations

from .attribution import Cell, Thresholds, attribute
from .calibration import CalibrationReport, calibrate, cohen_kappa, load_human_labels
from .compare import Comparison, compare_reports, paired_bootstrap_ci
from .judges import ClaimVerdict, GroundednessResult, Judge, JudgeInfo, JudgeUnavailable, make_judge
from .labels import InputFileError, LabelledQuestion, label_set_version, load_labels, load_run
from .report import RetrievalReport, evaluate_run, load_report
from .retrieval import (
    QuestionScores,
    RecallDefinition,
    context_relevancy,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_question,
)

__all__ = [
    "CalibrationReport",
    "Cell",
    "ClaimVerdict",
    "Comparison",
    "GroundednessResult",
    "InputFileError",
    "Judge",
    "JudgeInfo",
    "JudgeUnavailable",
    "LabelledQuestion",
    "QuestionScores",
    "RecallDefinition",
    "RetrievalReport",
    "Thresholds",
    "attribute",
    "calibrate",
    "cohen_kappa",
    "compare_reports",
    "context_relevancy",
    "evaluate_run",
    "hit_rate_at_k",
    "label_set_version",
    "load_human_labels",
    "load_labels",
    "load_report",
    "load_run",
    "make_judge",
    "ndcg_at_k",
    "paired_bootstrap_ci",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "score_question",
]
