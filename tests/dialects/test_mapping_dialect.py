"""In-house instrumentation scored through the ``mapping`` config section alone: attribute keys
and JSON paths, spans from the real OpenTelemetry SDK over OTLP/HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import TraceIds, exporter
from tests.dialects.kit import assert_known_truth, make_evaluator, scored

MAPPING = {
    "role_attribute": "acme.rag.step",
    "retrieval_value": "search",
    "generation_value": "llm",
    "query": "acme.search.input:$.q",
    "chunk_ids": "acme.search.result:$.hits[*].doc_key",
    "chunk_texts": "acme.search.result:$.hits[*].body",
    "chunk_scores": "acme.search.result:$.hits[*].sim",
    "answer": "acme.llm.output:$.reply.text",
}


def test_mapped_in_house_spans_get_the_known_truth(tmp_path: Path) -> None:
    with make_evaluator(tmp_path, mapping=MAPPING) as ev:
        ids = TraceIds()
        tp = TracerProvider(resource=Resource.create({"service.name": "acme-bot"}))
        tp.add_span_processor(ids)
        tp.add_span_processor(SimpleSpanProcessor(exporter(ev.endpoint)))
        tracer = tp.get_tracer("acme.tracing")
        asked = []
        for q in corpus.QUESTIONS:
            with tracer.start_as_current_span("handle") as root:
                with tracer.start_as_current_span(
                    "search",
                    attributes={
                        "acme.rag.step": "search",
                        "acme.search.input": json.dumps({"q": q}),
                        "acme.search.result": json.dumps(
                            {
                                "hits": [
                                    {"doc_key": d, "body": corpus.PASSAGES[d], "sim": s}
                                    for d, s in zip(
                                        corpus.RETRIEVED[q], corpus.SCORES, strict=False
                                    )
                                ]
                            }
                        ),
                    },
                ):
                    pass
                with tracer.start_as_current_span(
                    "llm",
                    attributes={
                        "acme.rag.step": "llm",
                        "acme.llm.output": json.dumps({"reply": {"text": corpus.ANSWERS[q]}}),
                    },
                ):
                    pass
            asked.append({"question": q, "trace_id": f"{root.get_span_context().trace_id:032x}"})
        tp.force_flush()
        results = scored(ev, asked)
        tp.shutdown()
    assert_known_truth(results)
