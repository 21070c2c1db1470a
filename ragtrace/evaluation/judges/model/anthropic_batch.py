"""Groundedness through the Message Batches API: half the price, answered within hours.

:class:`AnthropicBatchJudge` rides on an :class:`~ragtrace.evaluation.judges.model.anthropic.AnthropicJudge`:
each request's params are that judge's :meth:`~AnthropicJudge.groundedness_request` for the answer
and context, and each result message is parsed and checked by its
:meth:`~AnthropicJudge.groundedness_from_message`, so the prompt, the tool schema and the
checks are the realtime judge's own. Results are matched by ``custom_id`` (the API returns
them in any order). The cost of a result is the price table's cost of the usage the API reports
times :data:`BATCH_PRICE_FACTOR`; its ``latency_s`` is the batch's time from creation to its
end as the API reports them (the extra latency of batch mode).

Prompt caching applies to batch requests as to realtime ones (the realtime judge marks the
instructions cacheable only when they reach the model's minimum, see
:func:`~ragtrace.evaluation.judges.model.caching.should_cache`); the discounts stack.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.errors import RagtraceError

from ..base import GroundednessResult, JudgeUnavailable
from .anthropic import AnthropicJudge

__all__ = [
    "BATCH_PRICE_FACTOR",
    "AnthropicBatchJudge",
    "BatchNotFound",
    "BatchRequest",
    "BatchStatus",
]

BATCH_PRICE_FACTOR = 0.5
"""Message Batches API price relative to the Messages API (50 % off, input and output)."""
_CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class BatchNotFound(RagtraceError, LookupError):
    """The API does not know the batch (deleted, or older than its retention)."""


@dataclass(frozen=True)
class BatchRequest:
    """One judgement to make: ``custom_id`` (1–64 of ``[A-Za-z0-9_-]``) names its result."""

    custom_id: str
    answer: str
    context: tuple[str, ...]

    def __post_init__(self) -> None:
        if not _CUSTOM_ID.fullmatch(self.custom_id):
            raise ValueError(f"custom_id must be 1-64 of [A-Za-z0-9_-], got {self.custom_id!r}")
        object.__setattr__(self, "context", tuple(self.context))


@dataclass(frozen=True)
class BatchStatus:
    """A batch as the API reports it: ``ended`` once results can be read; ``latency_s`` from
    creation to end (None while it runs)."""

    batch_id: str
    ended: bool
    latency_s: float | None


class AnthropicBatchJudge:
    """Submit, poll and read groundedness batches (module doc). API failures raise
    :class:`~ragtrace.evaluation.judges.JudgeUnavailable`; an unknown batch ID
    :class:`BatchNotFound`."""

    def __init__(self, judge: AnthropicJudge) -> None:
        if judge.provider != "anthropic":
            raise ValueError(
                f"the Message Batches API is the Anthropic API's: not available on {judge.provider}"
            )
        self.judge = judge
        self._anthropic = judge._anthropic
        self._batches = judge._client.messages.batches

    def submit(self, requests: Sequence[BatchRequest]) -> str:
        """Create one batch of ``requests``; returns its ID."""
        if not requests:
            raise ValueError("a batch needs at least one request")
        ids = [r.custom_id for r in requests]
        if len(set(ids)) != len(ids):
            raise ValueError("custom IDs must be unique within a batch")
        items = [
            {
                "custom_id": r.custom_id,
                "params": self.judge.groundedness_request(r.answer, r.context),
            }
            for r in requests
        ]
        batch = self._call(self._batches.create, requests=items)
        return str(batch.id)

    def status(self, batch_id: str) -> BatchStatus:
        batch = self._call(self._batches.retrieve, batch_id)
        ended = batch.processing_status == "ended"
        latency = (
            (batch.ended_at - batch.created_at).total_seconds()
            if ended and batch.ended_at is not None
            else None
        )
        return BatchStatus(batch_id, ended, latency)

    def results(
        self, batch_id: str, requests: Mapping[str, BatchRequest]
    ) -> dict[str, GroundednessResult]:
        """The results of an ended batch by custom ID, for the ``requests`` (by custom ID) it was
        submitted with (their contexts verify the evidence quotes). A request that errored,
        expired or was canceled at the API gets an error result (its cost is 0)."""
        latency = self.status(batch_id).latency_s or 0.0
        out: dict[str, GroundednessResult] = {}
        for item in self._call(self._batches.results, batch_id):
            request = requests.get(item.custom_id)
            if request is None:
                continue
            result: Any = item.result
            if result.type == "succeeded":
                out[item.custom_id] = self.judge.groundedness_from_message(
                    result.message,
                    request.answer,
                    request.context,
                    price_factor=BATCH_PRICE_FACTOR,
                    latency_s=latency,
                )
            else:
                out[item.custom_id] = GroundednessResult.failed(
                    f"batch request {result.type}", self.judge.info, latency_s=latency
                )
        return out

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except self._anthropic.NotFoundError as exc:
            raise BatchNotFound(f"message batches API: {exc}") from None
        except self._anthropic.APIError as exc:
            raise JudgeUnavailable(f"message batches API: {exc}") from None
