"""The ``error.type`` of a failed judgement: a low-cardinality class of why the judge gave no
score, as the GenAI conventions ask of ``gen_ai.evaluation.result`` and of the
``gen_ai.client.operation.duration`` metric ("Instrumentations SHOULD document the list of
errors they report"). The list:

* ``too_large`` — refused before any call (:mod:`~ragtrace.evaluation.judges.bounds`), or the
  API answered 413;
* ``malformed_output`` — the model's answer (or the response body) could not be read as the
  verdict, after the one retry;
* ``rate_limit`` — the API kept answering 429 until the time budget ran out;
* ``timeout`` — requests timed out (or 408 / 504) until the budget ran out, or a batch request
  expired;
* ``budget`` — the judgement's time budget was spent before an answer;
* ``batch_errored`` / ``batch_canceled`` — a Message Batches request came back so;
* ``unavailable`` — the API could not be reached (connection errors, 5xx) within the budget;
* the HTTP status code (``"400"``, ``"401"``, …) — any other request the API rejected;
* ``_OTHER`` — the conventions' fallback, for a message none of the above matches.

The judges report failures as messages (``GroundednessResult.error``, ``MetricResult.error``,
:class:`~ragtrace.evaluation.judges.base.JudgeUnavailable`); their forms are fixed by the judges
in this package and a unit test pins each one here.
"""

from __future__ import annotations

import re
from typing import Final

from .bounds import is_too_large

__all__ = ["ERROR_TYPES", "OTHER", "judge_error_type"]

OTHER: Final = "_OTHER"
ERROR_TYPES: Final = (
    "too_large",
    "malformed_output",
    "rate_limit",
    "timeout",
    "budget",
    "batch_errored",
    "batch_canceled",
    "unavailable",
)
_STATUS = re.compile(r"HTTP (\d{3})")
_MALFORMED = ("malformed judge output", "unreadable response body", "response body is not the")
_BY_STATUS = {"413": "too_large", "429": "rate_limit", "408": "timeout", "504": "timeout"}


def judge_error_type(message: str | None) -> str:
    """The ``error.type`` of a judge failure reported as ``message`` (module doc lists them)."""
    if not message:
        return OTHER
    if is_too_large(message):
        return "too_large"
    if message.startswith(_MALFORMED):
        return "malformed_output"
    if message.startswith("batch request "):
        kind = message.removeprefix("batch request ").strip()
        return {"expired": "timeout", "errored": "batch_errored", "canceled": "batch_canceled"}.get(
            kind, OTHER
        )
    statuses: list[str] = _STATUS.findall(message)
    status = statuses[-1] if statuses else None  # the last attempt's reason
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if "Timeout" in message or "timed out" in message:
        return "timeout"
    if message.startswith("judge request rejected:") and status is not None:
        return status
    if message.startswith("judge budget of"):
        return "budget"
    if message.startswith(("judge would retry after", "judge asked to retry after")):
        return "unavailable"
    if message.startswith("message batches API:"):
        return "unavailable"
    return OTHER
