"""``ragtrace inspect``: every span's reader and extraction, unrecognised spans with their keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace.cli import main
from tests.span_ids import trace_id_of


def _request(tmp_path: Path, *, as_json: bool) -> tuple[Path, str]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openinference.instrumentation.langchain")
    other = provider.get_tracer("opentelemetry.instrumentation.fastapi")
    with other.start_as_current_span("POST /chat", attributes={"http.route": "/chat"}) as root:
        with tracer.start_as_current_span(
            "R",
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": "How long?",
                "retrieval.documents.0.document.content": "Kept 90 days.",
                "retrieval.documents.0.document.metadata": json.dumps({"id": "lc-01"}),
                "retrieval.documents.1.document.content": "No ID here.",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "FakeListLLM",
            attributes={
                "openinference.span.kind": "LLM",
                "output.mime_type": "application/json",
                "output.value": json.dumps({"generations": [[{"text": "Kept 90 days."}]]}),
            },
        ):
            pass
    request = encode_spans(exporter.get_finished_spans())
    path = tmp_path / ("request.json" if as_json else "request.pb")
    if as_json:
        path.write_text(json_format.MessageToJson(request))
    else:
        path.write_bytes(request.SerializeToString())
    return path, trace_id_of(root)


@pytest.mark.parametrize("as_json", [True, False])
def test_inspect_shows_each_reader_and_what_it_extracted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    path, trace_id = _request(tmp_path, as_json=as_json)
    assert main(["inspect", str(path), "--json"]) == 0
    (trace,) = json.loads(capsys.readouterr().out)
    assert trace["trace_id"] == trace_id
    rows = {r["name"]: r for r in trace["spans"]}
    assert rows["POST /chat"]["reader"] == "unrecognised"
    assert rows["POST /chat"]["attribute_keys"] == ["http.route"]
    assert rows["R"]["reader"] == "openinference" and rows["R"]["role"] == "retrieval"
    assert rows["R"]["query"] == "How long?"
    assert rows["R"]["chunks"][0] == {"id": "lc-01", "text": "Kept 90 days."}
    assert rows["R"]["chunks"][1]["hashed"] is True
    assert rows["FakeListLLM"]["answer"] == "Kept 90 days."
    assert trace["rag"]["answer"] == "Kept 90 days."
    assert trace["rag"]["recall_na_reason"].startswith("1 of 2 retrieved chunks carry no ID")


def test_inspect_text_names_unrecognised_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _request(tmp_path, as_json=True)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "POST /chat  [opentelemetry.instrumentation.fastapi]  -> unrecognised  keys: "
        "http.route" in out
    )
    assert "(hashed: no ID field or metadata ID)" in out


def test_inspect_json_to_a_file_keeps_the_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, trace_id = _request(tmp_path, as_json=True)
    target = tmp_path / "readings.json"
    assert main(["inspect", str(path), "--json-file", str(target)]) == 0
    assert capsys.readouterr().out.startswith(f"trace {trace_id}\n")
    (trace,) = json.loads(target.read_text())
    assert trace["trace_id"] == trace_id and trace["rag"]["answer"] == "Kept 90 days."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"qid": "q1", "question": "How long?", "gold": ["c-1"]}\n'
            '{"qid": "q2", "question": "Why?", "gold": []}\n',
            "line 1: not an OTLP trace request: a JSON object without resourceSpans (its keys: "
            "gold, qid, question) (it looks like a labels file",
        ),
        (
            '{"qid": "q1", "question": "How long?", "gold": ["c-1"]}',
            "not an OTLP trace request: a JSON object without resourceSpans",
        ),
        ('{"spans": []}', "(its keys: spans)"),
    ],
)
def test_a_json_file_that_is_no_otlp_request_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(text)
    assert main(["inspect", str(path)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert "no spans" not in captured.out


def test_an_empty_otlp_request_has_no_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"resourceSpans": []}')
    assert main(["inspect", str(path)]) == 0
    assert capsys.readouterr().out == "no spans\n"


def test_trace_takes_a_prefix_of_the_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, trace_id = _request(tmp_path, as_json=True)
    assert main(["inspect", str(path), "--trace", trace_id[:8].upper()]) == 0
    assert capsys.readouterr().out.startswith(f"trace {trace_id}\n")
