"""In-house instrumentation scored through the ``mapping`` config section alone: attribute keys
and JSON paths, spans from the real OpenTelemetry SDK over OTLP/HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace.cli import main
from ragtrace.cli.output import EXIT_OK
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


def _ask_all(tp: TracerProvider) -> list[dict[str, str]]:
    """The corpus questions answered by the in-house app: one trace each."""
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
                                for d, s in zip(corpus.RETRIEVED[q], corpus.SCORES, strict=False)
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
    return asked


def test_mapped_in_house_spans_get_the_known_truth(tmp_path: Path) -> None:
    with make_evaluator(tmp_path, mapping=MAPPING) as ev:
        ids = TraceIds()
        tp = TracerProvider(resource=Resource.create({"service.name": "acme-bot"}))
        tp.add_span_processor(ids)
        tp.add_span_processor(SimpleSpanProcessor(exporter(ev.endpoint)))
        asked = _ask_all(tp)
        tp.force_flush()
        results = scored(ev, asked)
        tp.shutdown()
    assert_known_truth(results)


def test_inspect_reads_with_the_configured_mapping_as_serve_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same spans, sent to ``serve`` and given to ``ragtrace inspect --config``: the same
    question, chunks and answer; without the mapping, inspect says they are unrecognised."""
    captured = InMemorySpanExporter()
    with make_evaluator(tmp_path, mapping=MAPPING) as ev:
        tp = TracerProvider(resource=Resource.create({"service.name": "acme-bot"}))
        tp.add_span_processor(SimpleSpanProcessor(exporter(ev.endpoint)))
        tp.add_span_processor(SimpleSpanProcessor(captured))
        asked = _ask_all(tp)
        tp.force_flush()
        results = scored(ev, asked)
        tp.shutdown()
    request = tmp_path / "trace.pb"
    request.write_bytes(encode_spans(captured.get_finished_spans()).SerializeToString())
    config = tmp_path / "consumer.yaml"
    config.write_text(yaml.safe_dump({"mapping": MAPPING}), encoding="utf-8")

    assert main(["inspect", "--config", str(config), str(request), "--json"]) == EXIT_OK
    views = {t["trace_id"]: t for t in json.loads(capsys.readouterr().out)}
    for a in asked:
        served, view = results[a["question"]], views[a["trace_id"]]["rag"]
        assert view is not None
        assert (view["query"], tuple(view["retrieved"]), view["answer"]) == (
            served.query,
            served.retrieved,
            served.answer,
        )

    assert main(["inspect", str(request), "--json"]) == EXIT_OK
    unmapped = json.loads(capsys.readouterr().out)
    assert {t["rag"] is None for t in unmapped} == {True}
    assert {str(t["skipped"]["trace"]).split(":")[0] for t in unmapped} == {"unrecognised"}
