"""What Phoenix shows of one scored trace: its REST API's annotation payloads (pure).

* span annotations — one per metric on the span that metric evaluates (the targets of
  :mod:`~ragtrace_consumers.writeback.span_content`: recall metrics on the retrieval span,
  groundedness and the answer metrics on the generation span), plus ``cell`` on the trace's
  target (root) span, so Phoenix's default root-span view shows the headline;
* a trace annotation ``cell`` (label = the attribution cell, explanation = why), for Phoenix's
  trace table and trace-annotation charts;
* document annotations ``gold`` on the retrieval span, one per retrieved position: score 1 and
  label ``gold`` when the chunk is in the question's gold set, else 0 and ``not_gold``.

A judge failure is an annotation with no score and no label (a failure is not a result): its
message as explanation, its ``error.type`` in the metadata. Span and trace annotations carry an
``identifier`` derived from (trace, name), so a replay updates them instead of adding copies;
Phoenix keys document annotations by (span, name, position) already.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.util.types import AttributeValue

from ragtrace import semconv
from ragtrace_consumers.model import FAMILY_ANSWER, FAMILY_GROUNDEDNESS, TraceScores
from ragtrace_consumers.writeback.span_content import cell_event, metric_spans

__all__ = ["CELL", "GOLD", "PhoenixAnnotations", "phoenix_annotations", "span_annotations"]

CELL = "cell"
GOLD = "gold"
Annotation = dict[str, object]


@dataclass(frozen=True)
class PhoenixAnnotations:
    """The three kinds of annotation Phoenix takes, each for its own endpoint."""

    spans: tuple[Annotation, ...]
    traces: tuple[Annotation, ...]
    documents: tuple[Annotation, ...]


def _result(attrs: dict[str, AttributeValue]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, field in (
        (semconv.GEN_AI_EVALUATION_SCORE_VALUE, "score"),
        (semconv.GEN_AI_EVALUATION_SCORE_LABEL, "label"),
        (semconv.GEN_AI_EVALUATION_EXPLANATION, "explanation"),
    ):
        if key in attrs:
            result[field] = attrs[key]
    return result


def _metadata(scores: TraceScores, attrs: dict[str, AttributeValue]) -> dict[str, object]:
    meta: dict[str, object] = {
        "source": "ragtrace",
        "trace_id": scores.trace.trace_id,
        "cell": scores.cell.value,
    }
    if semconv.ERROR_TYPE in attrs:
        meta[semconv.ERROR_TYPE] = attrs[semconv.ERROR_TYPE]
    return meta


def span_annotations(
    scores: TraceScores,
    *,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> list[Annotation]:
    """Phoenix ``SpanAnnotationData`` for every metric of ``scores`` and the cell."""
    out: list[Annotation] = []
    g, a = scores.groundedness, scores.answers
    trace_id = scores.trace.trace_id
    for m in metric_spans(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    ):
        for _, attrs in m.events:
            name = str(attrs[semconv.GEN_AI_EVALUATION_NAME])
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
                    "result": _result(attrs),
                    "identifier": f"ragtrace:{trace_id}:{name}",
                    "metadata": _metadata(scores, attrs),
                }
            )
    _, cell = cell_event(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    )
    out.append(
        {
            "span_id": scores.trace.root_span_id or scores.trace.target_span_id,
            "name": CELL,
            "annotator_kind": "CODE",
            "result": _result(cell),
            "identifier": f"ragtrace:{trace_id}:{CELL}",
            "metadata": _metadata(scores, cell),
        }
    )
    return out


def phoenix_annotations(
    scores: TraceScores,
    *,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> PhoenixAnnotations:
    """Everything Phoenix is told about ``scores`` (module doc)."""
    spans = span_annotations(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    )
    trace_id = scores.trace.trace_id
    cell = spans[-1]
    traces = (
        {
            "trace_id": trace_id,
            "name": CELL,
            "annotator_kind": "CODE",
            "result": cell["result"],
            "identifier": f"ragtrace:{trace_id}:{CELL}",
            "metadata": cell["metadata"],
        },
    )
    documents: list[Annotation] = []
    r, retrieval_span = scores.retrieval, scores.trace.retrieval_span_id
    if r is not None and retrieval_span is not None:
        gold = set(r.gold_positions)
        for position, chunk in enumerate(scores.trace.retrieved):
            is_gold = position in gold
            documents.append(
                {
                    "span_id": retrieval_span,
                    "document_position": position,
                    "name": GOLD,
                    "annotator_kind": "CODE",
                    "result": {
                        "score": 1.0 if is_gold else 0.0,
                        "label": "gold" if is_gold else "not_gold",
                        "explanation": f"chunk {chunk.id} is "
                        + ("" if is_gold else "not ")
                        + f"in the gold set of question {r.question_id}",
                    },
                    "metadata": {"source": "ragtrace", "trace_id": trace_id},
                }
            )
    return PhoenixAnnotations(tuple(spans), traces, tuple(documents))
