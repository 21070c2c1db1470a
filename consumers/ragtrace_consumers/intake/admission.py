"""Sampling decided at decode: a trace that no rate can select and that cannot be labelled is
dropped before it is stored, assembled or recognised, so ingest work scales with the rates.

The decision is the :class:`~ragtrace_consumers.scoring.sampling.Sampler`'s, taken early and
conservatively, from the spans of one message (the collector's kafka exporter puts one trace
per message) and the trace ID's position ``u`` (:func:`~ragtrace_consumers.scoring.sampling.trace_position`):

* ``u`` below the lowest judge rate of any rule or the default: kept without looking further;
  at or above the highest rate of all (judge or recall): dropped without looking further;
* otherwise the rules are evaluated on the attributes at hand, in order, as the Sampler does:
  a rule whose patterns all match decides; a rule some pattern of which is not decidable yet
  (its attribute is on a span not in this message) may still apply, so its rates count too;
* kept when ``u`` is below the judge rate that may apply, or below the recall rate that may
  apply and the trace can be labelled: it names a question ID (``ragtrace.question.id``), or its
  query's digest (``ragtrace.query.sha256``, else that of ``input.value``) is in
  :class:`LabelDigests`, an in-memory set refreshed from the label store.

A trace kept here still goes through the Sampler after assembly (which reports its skip
reasons); one dropped here would have been skipped there as ``sampled_out`` and is counted so,
once per batch (``ConsumerMetrics.traces_sampled_out``). The trade-off: a labelled trace whose
spans arrive in several messages, the first of which carries neither its question ID nor its
query, loses those first spans when its ``u`` is outside the judge rate.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ragtrace import semconv
from ragtrace.normalize import question_sha256
from ragtrace_consumers.model import EMPTY_QUESTION_SHA256, LabelIndex, SpanRecord
from ragtrace_consumers.readers.view import RESERVED_PREFIXES, attribute_text
from ragtrace_consumers.scoring.sampling import SamplerConfig, SamplingRule, trace_position

__all__ = ["DEFAULT_REFRESH_S", "EarlySampler", "LabelDigests"]

_log = logging.getLogger(__name__)

DEFAULT_REFRESH_S = 10.0
"""Seconds between checks of the label store's version."""
_MODEL_KEYS = (semconv.LLM_MODEL_NAME, semconv.GEN_AI_RESPONSE_MODEL, semconv.GEN_AI_REQUEST_MODEL)
_QUERY_KEYS = (semconv.INPUT_VALUE, semconv.GEN_AI_RETRIEVAL_QUERY_TEXT)
_FLUSH_EVERY_S = 1.0


class _Labels(Protocol):
    def version(self) -> str: ...

    def questions(self) -> Sequence[Any]: ...


class LabelDigests:
    """The question IDs and query digests of the labelled questions, in memory; re-read from
    ``labels`` when its version changed, checked at most every ``refresh_s`` seconds. A failed
    refresh keeps the previous set (logged)."""

    def __init__(
        self,
        labels: _Labels,
        *,
        refresh_s: float = DEFAULT_REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._labels = labels
        self._refresh_s = refresh_s
        self._clock = clock
        self._lock = threading.Lock()
        self._version: str | None = None
        self._checked = -float("inf")
        self.digests: frozenset[str] = frozenset()

    def refresh(self) -> None:
        now = self._clock()
        if now - self._checked < self._refresh_s:
            return
        with self._lock:
            if now - self._checked < self._refresh_s:
                return
            self._checked = now
            try:
                version = self._labels.version()
                if version != self._version:
                    index = LabelIndex.build(list(self._labels.questions()))
                    self.digests = frozenset(index.by_sha256)
                    self._version = version
            except Exception:  # noqa: BLE001 - a label store outage keeps the last set
                _log.warning("refreshing the labelled question digests failed", exc_info=True)


class EarlySampler:
    """Decides at decode which traces to keep (module doc). Thread-safe; counts the dropped
    traces per service and hands them to ``report(service, n)`` at most once a second and on
    :meth:`flush`."""

    def __init__(
        self,
        config: SamplerConfig,
        labels: LabelDigests | None = None,
        *,
        report: Callable[[str, int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._labels = labels
        self._report = report
        self._clock = clock
        judge = [config.judge_rate] + [_or(r.judge_rate, config.judge_rate) for r in config.rules]
        recall = [config.recall_rate] + [
            _or(r.recall_rate, config.recall_rate) for r in config.rules
        ]
        self._keep_below = min(judge)
        self._drop_from = max(judge + recall)
        self._interest = frozenset(
            {
                semconv.RAGTRACE_QUESTION_ID,
                semconv.RAGTRACE_QUERY_SHA256,
                semconv.RAGTRACE_PIPELINE_NAME,
                *_MODEL_KEYS,
                *_QUERY_KEYS,
            }
            | {
                k
                for rule in config.rules
                for k in rule.match
                if k not in ("service", "pipeline", "model")
            }
        )
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}
        self._flushed = clock()
        self.kept = 0
        self.dropped = 0

    # --- the decision ------------------------------------------------------------------------
    def admit(self, trace_id: str, service: str, facts: Callable[[], Mapping[str, str]]) -> bool:
        """Keep the trace ``trace_id`` (32 hex digits)? ``facts()`` gives the attributes of its
        spans at hand that :attr:`interest` names (the first value of each), called only when
        the trace ID alone cannot decide."""
        u = trace_position(trace_id, self._config.salt)
        if u < self._keep_below:
            keep = True
        elif u >= self._drop_from:
            keep = False
        else:
            known = facts()
            judge, recall = self._rates(service, known)
            keep = u < judge or (u < recall and self._labelled(known))
        self._count(service, keep)
        return keep

    @property
    def interest(self) -> frozenset[str]:
        """The attribute keys :meth:`admit` may look at."""
        return self._interest

    def _rates(self, service: str, facts: Mapping[str, str]) -> tuple[float, float]:
        """The highest judge and recall rates that may apply to a trace with ``facts``."""
        cfg = self._config
        judge = recall = 0.0
        for rule in cfg.rules:
            status = _rule_status(rule, service, facts)
            if status is False:
                continue
            judge = max(judge, _or(rule.judge_rate, cfg.judge_rate))
            recall = max(recall, _or(rule.recall_rate, cfg.recall_rate))
            if status:
                return judge, recall
        return max(judge, cfg.judge_rate), max(recall, cfg.recall_rate)

    def _labelled(self, facts: Mapping[str, str]) -> bool:
        if facts.get(semconv.RAGTRACE_QUESTION_ID):
            return True
        if self._labels is None:
            return False
        self._labels.refresh()
        digests = self._labels.digests
        if not digests:
            return False
        recorded = facts.get(semconv.RAGTRACE_QUERY_SHA256)
        if recorded:
            return recorded in digests
        for key in _QUERY_KEYS:
            query = facts.get(key)
            if query is not None:
                digest = question_sha256(query)
                return digest != EMPTY_QUESTION_SHA256 and digest in digests
        return False

    # --- span records (the embedded evaluator) ------------------------------------------------
    def admit_records(self, spans: Sequence[SpanRecord]) -> list[SpanRecord]:
        """The spans of ``spans`` whose traces are kept."""
        by_trace: dict[str, list[SpanRecord]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        kept: list[SpanRecord] = []
        for trace_id, group in by_trace.items():
            if self.admit(trace_id, group[0].service, functools.partial(self._record_facts, group)):
                kept += group
        self.maybe_flush()
        return kept

    def _record_facts(self, spans: Iterable[SpanRecord]) -> dict[str, str]:
        out: dict[str, str] = {}
        for span in spans:
            for key, value in span.attributes.items():
                if key in self._interest and key not in out:
                    out[key] = attribute_text(value)
        return out

    # --- counting ----------------------------------------------------------------------------
    def _count(self, service: str, keep: bool) -> None:
        with self._lock:
            if keep:
                self.kept += 1
            else:
                self.dropped += 1
                self._pending[service] = self._pending.get(service, 0) + 1

    def maybe_flush(self) -> None:
        """:meth:`flush` when a second has passed since the last one."""
        if self._pending and self._clock() - self._flushed >= _FLUSH_EVERY_S:
            self.flush()

    def flush(self) -> None:
        """Report the drops counted since the last flush."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._flushed = self._clock()
        if self._report is not None:
            for service, n in pending.items():
                try:
                    self._report(service, n)
                except Exception:  # noqa: BLE001 - metrics never stop the intake
                    _log.warning("recording dropped traces failed", exc_info=True)


def _or(rate: float | None, default: float) -> float:
    return default if rate is None else rate


def _rule_status(rule: SamplingRule, service: str, facts: Mapping[str, str]) -> bool | None:
    """True: every pattern matches; False: one cannot match; None: not decidable yet."""
    undecided = False
    for key, pattern in rule.match.items():
        if key == "service":
            value: str | None = service
        elif key == "pipeline":
            value = facts.get(semconv.RAGTRACE_PIPELINE_NAME)
        elif key == "model":
            value = next((facts[k] for k in _MODEL_KEYS if k in facts), None)
        elif key.startswith(RESERVED_PREFIXES):
            return False  # the Sampler matches user attributes only: never present
        else:
            value = facts.get(key)
        if value is None:
            undecided = True
        elif not fnmatch.fnmatchcase(value, pattern):
            return False
    return None if undecided else True
