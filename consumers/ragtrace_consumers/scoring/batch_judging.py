"""Batch judge mode (``judge.mode: batch``): judgements go through the Message Batches API at
half the price, and a trace waits parked until its batch has ended.

Flow: a judge job that misses the result cache is handed to :meth:`BatchJudging.submit_later`
instead of being called, and its trace is parked (reason ``judge_batch_pending``). Every
``submit_every_s`` (or once ``max_requests`` wait) the waiting requests become one batch; its ID
and every request (cache key, paying trace, answer, context) are written to the
:class:`BatchStore` — the shared store, not a lease — so a restarted or different replica keeps
polling it. Every ``poll_every_s`` each pending batch is polled; once ended, its results are
matched by custom ID (the cache key's digest), verified against the stored context, and written
to the judge result cache as a realtime judgement would be. The parked trace, claimed again,
finds its judgement there (reported with its batch cost if it paid, else 0, as any cache hit).
A request that failed at the API is not cached: the trace's next claim submits it again. The
judge latency metric records each result's batch latency (creation to end): batch mode's extra
latency.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ragtrace.evaluation.judges import JudgeUnavailable
from ragtrace.evaluation.judges.error_types import judge_error_type
from ragtrace.evaluation.judges.model.anthropic_batch import (
    AnthropicBatchJudge,
    BatchNotFound,
    BatchRequest,
)
from ragtrace_consumers.errors import ConfigError
from ragtrace_consumers.model import BatchStore, JudgeResultCache
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = [
    "PARK_BATCH_PENDING",
    "BatchJudging",
    "build_batch_judging",
    "custom_id",
]

_log = logging.getLogger(__name__)

PARK_BATCH_PENDING = "judge_batch_pending"
"""The park reason of a trace whose judgement waits in a batch."""


def custom_id(cache_key: str) -> str:
    """The batch custom ID of a judge cache key (its hex digest, 64 characters)."""
    return cache_key.rsplit(":", 1)[-1][:64]


def build_batch_judging(
    judge: object, store: BatchStore, cache: JudgeResultCache, metrics: ConsumerMetrics
) -> BatchJudging:
    """Batch mode over ``judge``, which must be the Anthropic judge (ConfigError otherwise)."""
    from ragtrace.evaluation.judges import AnthropicJudge

    if not isinstance(judge, AnthropicJudge):
        raise ConfigError(
            "judge.mode: batch needs the anthropic judge (judge.name: anthropic, or auto with "
            f"an API key); got {type(judge).__name__}"
        )
    return BatchJudging(AnthropicBatchJudge(judge), store, cache, metrics)


class _Job(Protocol):
    key: str
    trace_id: str
    answer: str
    context: tuple[str, ...]


class BatchJudging:
    """Collects judge requests into batches, polls them, caches their results (module doc).
    Thread-safe; :meth:`start` runs :meth:`tick` on a daemon thread every ``tick_s``."""

    def __init__(
        self,
        judge: AnthropicBatchJudge,
        store: BatchStore,
        cache: JudgeResultCache,
        metrics: ConsumerMetrics,
        *,
        max_requests: int = 10_000,
        submit_every_s: float = 10.0,
        poll_every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_requests < 1 or submit_every_s <= 0 or poll_every_s <= 0:
            raise ValueError("max_requests, submit_every_s and poll_every_s must be > 0")
        self._judge = judge
        self._store = store
        self._cache = cache
        self._metrics = metrics
        self.max_requests = max_requests
        self.submit_every_s = submit_every_s
        self.poll_every_s = poll_every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[str, bytes] = {}
        self._first_waiting: float | None = None
        self._last_poll = -float("inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- intake (scoring threads) -------------------------------------------------------------
    def is_pending(self, cache_key: str) -> bool:
        """Whether the judgement of ``cache_key`` waits to be submitted or in a batch."""
        cid = custom_id(cache_key)
        with self._lock:
            if cid in self._waiting:
                return True
        return bool(self._store.submitted([cid])[0])

    def submit_later(self, job: _Job) -> None:
        """Queue ``job``'s request for the next batch (once per cache key)."""
        if self.is_pending(job.key):
            return
        item = json.dumps(
            {
                "key": job.key,
                "trace_id": job.trace_id,
                "answer": job.answer,
                "context": list(job.context),
            },
            separators=(",", ":"),
        ).encode()
        with self._lock:
            if not self._waiting:
                self._first_waiting = self._clock()
            self._waiting.setdefault(custom_id(job.key), item)

    # --- the batch loop -----------------------------------------------------------------------
    def tick(self) -> None:
        """Submit the waiting requests when due, then poll the pending batches when due."""
        now = self._clock()
        with self._lock:
            due = bool(self._waiting) and (
                len(self._waiting) >= self.max_requests
                or now - (self._first_waiting or now) >= self.submit_every_s
            )
            waiting = dict(list(self._waiting.items())[: self.max_requests]) if due else {}
        if waiting:
            self._submit(waiting)
        if now - self._last_poll >= self.poll_every_s:
            self._last_poll = now
            for batch_id in self._store.pending_batches():
                self._poll(batch_id)

    def _submit(self, waiting: dict[str, bytes]) -> None:
        requests = []
        for cid, raw in waiting.items():
            item = json.loads(raw)
            requests.append(BatchRequest(cid, item["answer"], tuple(item["context"])))
        try:
            batch_id = self._judge.submit(requests)
        except JudgeUnavailable:
            _log.warning(
                "submitting a judge batch of %d failed; retrying", len(requests), exc_info=True
            )
            return
        self._store.add_batch(batch_id, waiting)
        with self._lock:
            for cid in waiting:
                self._waiting.pop(cid, None)
            self._first_waiting = self._clock() if self._waiting else None
        _log.info("submitted judge batch %s (%d requests)", batch_id, len(requests))

    def _poll(self, batch_id: str) -> None:
        try:
            if not self._judge.status(batch_id).ended:
                return
            items = self._store.batch_items(batch_id)
            parsed = {cid: json.loads(raw) for cid, raw in items.items()}
            requests = {
                cid: BatchRequest(cid, p["answer"], tuple(p["context"]))
                for cid, p in parsed.items()
            }
            results = self._judge.results(batch_id, requests)
        except BatchNotFound:
            # Gone at the API: forget it; its traces submit their requests again when claimed.
            _log.warning("judge batch %s is unknown to the API; dropping it", batch_id)
            self._store.finish_batch(batch_id)
            return
        except JudgeUnavailable:
            _log.warning("polling judge batch %s failed; retrying", batch_id, exc_info=True)
            return
        entries: list[tuple[str, bytes]] = []
        info = self._judge.judge.info  # the configured model: the served one is on the result
        model = info.model or info.name
        for cid, result in results.items():
            u = result.usage
            self._metrics.judge_usage(
                model,
                u.input_tokens,
                u.output_tokens,
                u.cache_read_input_tokens,
                u.cache_creation_input_tokens,
                result.cost_usd,
                result.latency_s,
                error_type=None if result.error is None else judge_error_type(result.error),
                response_model=result.served_model,
            )
            if result.error is not None:
                self._metrics.judge_call(model, "error")
                self._metrics.judge_error(model, "invalid_output")
                continue
            self._metrics.judge_call(model, "ok")
            entries.append(
                (
                    parsed[cid]["key"],
                    json.dumps(
                        {"trace_id": parsed[cid]["trace_id"], "result": result.to_dict()},
                        separators=(",", ":"),
                    ).encode(),
                )
            )
        if entries:
            self._cache.put_many(entries)
        self._store.finish_batch(batch_id)
        _log.info(
            "judge batch %s ended: %d results cached, %d failed",
            batch_id,
            len(entries),
            len(results) - len(entries),
        )

    def start(self, tick_s: float = 1.0) -> BatchJudging:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, args=(tick_s,), daemon=True, name="ragtrace-judge-batches"
            )
            self._thread.start()
        return self

    def _run(self, tick_s: float) -> None:
        while not self._stop.wait(tick_s):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - a store outage must not end the loop
                _log.exception("judge batch loop failed; retrying")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
