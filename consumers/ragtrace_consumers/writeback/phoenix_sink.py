"""Scores into Phoenix's own evaluation columns: span annotations over its REST API.

Phoenix stores our evaluation spans like any other span but shows annotations, not span
events, in its evaluation columns. :class:`PhoenixSink` posts one span annotation per metric
(``POST /v1/span_annotations?sync=true``) on the span that metric evaluates — the same targets
as the per-family evaluation spans (:mod:`~ragtrace_consumers.writeback.family_spans`): recall metrics
on the retrieval span, groundedness and the answer metrics on the generation span. ``identifier`` is derived from
(trace, metric), so a replay updates the annotation instead of adding a second one.

It wraps an optional ``inner`` sink (the OTLP sink): ``write`` delivers there first, then
annotates; any failure raises :class:`~ragtrace_consumers.errors.WriteBackError` and the
trace is parked and retried, as for every sink. The annotated spans must already be in Phoenix
(the app exports its spans there too).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence

from ragtrace import semconv
from ragtrace_consumers.errors import WriteBackError
from ragtrace_consumers.model import FAMILY_ANSWER, FAMILY_GROUNDEDNESS, ScoreSink, TraceScores
from ragtrace_consumers.writeback.family_spans import metric_spans
from ragtrace_consumers.writeback.span_content import deliver_each

__all__ = ["PhoenixSink", "span_annotations"]

ANNOTATIONS_PATH = "/v1/span_annotations"


def span_annotations(
    scores: TraceScores,
    *,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> list[dict[str, object]]:
    """Phoenix ``SpanAnnotationData`` for every metric of ``scores`` (pure)."""
    out: list[dict[str, object]] = []
    g, a = scores.groundedness, scores.answers
    for m in metric_spans(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    ):
        for _, attrs in m.events:
            name = str(attrs[semconv.GEN_AI_EVALUATION_NAME])
            result: dict[str, object] = {}
            for key, field in (
                (semconv.GEN_AI_EVALUATION_SCORE_VALUE, "score"),
                (semconv.GEN_AI_EVALUATION_SCORE_LABEL, "label"),
                (semconv.GEN_AI_EVALUATION_EXPLANATION, "explanation"),
            ):
                if key in attrs:
                    result[field] = attrs[key]
            llm_judged = (
                m.family == FAMILY_GROUNDEDNESS and g is not None and bool(g.judge.model)
            ) or (
                m.family == FAMILY_ANSWER
                and a is not None
                and any(r.metric == name and r.judge.model for r in a.results)
            )
            out.append(
                {
                    "span_id": m.parent_span_id,
                    "name": name,
                    "annotator_kind": "LLM" if llm_judged else "CODE",
                    "result": result,
                    "identifier": f"ragtrace:{scores.trace.trace_id}:{name}",
                    "metadata": {
                        "source": "ragtrace",
                        "trace_id": scores.trace.trace_id,
                        "cell": scores.cell.value,
                    },
                }
            )
    return out


class PhoenixSink:
    """A :class:`~ragtrace_consumers.model.ScoreSink` annotating spans in Phoenix at
    ``base_url`` (e.g. ``http://127.0.0.1:6006``), after ``inner`` delivered."""

    def __init__(
        self,
        base_url: str,
        inner: ScoreSink | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        recall_threshold: float | None = None,
        groundedness_threshold: float | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + ANNOTATIONS_PATH + "?sync=true"
        self._inner = inner
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        self._timeout_s = timeout_s
        self._thresholds = (recall_threshold, groundedness_threshold)

    def write(self, scores: TraceScores) -> None:
        if self._inner is not None:
            self._inner.write(scores)
        recall_t, ground_t = self._thresholds
        data = span_annotations(scores, recall_threshold=recall_t, groundedness_threshold=ground_t)
        if not data:
            return
        request = urllib.request.Request(
            self._url,
            data=json.dumps({"data": data}).encode(),
            headers=self._headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise WriteBackError(
                f"Phoenix refused the annotations of trace "
                f"{scores.trace.trace_id}: HTTP {exc.code} {detail}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise WriteBackError(
                f"Phoenix annotations of trace {scores.trace.trace_id} not delivered: {exc}"
            ) from None

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        return deliver_each(self.write, batch)

    def shutdown(self) -> None:
        if self._inner is not None:
            self._inner.shutdown()
