"""The embedded OTLP/HTTP receiver: encodings, OTLP responses and every error path, over real
HTTP on loopback with the consumers' real decoders."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
from collections.abc import Iterator, Sequence

import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace_consumers.errors import ReceiverBusy
from ragtrace_consumers.intake.otlp_receiver import Accepted, OtlpHttpReceiver
from ragtrace_consumers.model import SpanRecord
from tests.metric_points import values
from tests.otlp_requests import export_request, otlp_json, otlp_span

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
ROOT_ID = "b7ad6b7169203331"
CHILD_ID = "00f067aa0ba902b7"


class Sink:
    """Records every batch; answers with a scripted outcome or exception."""

    def __init__(self) -> None:
        self.batches: list[list[SpanRecord]] = []
        self.outcome: Accepted | None = None
        self.error: Exception | None = None
        self.lock = threading.Lock()

    def __call__(self, spans: Sequence[SpanRecord]) -> Accepted | None:
        with self.lock:
            self.batches.append(list(spans))
        if self.error is not None:
            raise self.error
        return self.outcome


@pytest.fixture()
def receiver(sink: Sink, reader: InMemoryMetricReader) -> Iterator[OtlpHttpReceiver]:
    provider = MeterProvider(metric_readers=[reader])
    with OtlpHttpReceiver(sink, port=0, max_body_bytes=64 * 1024, meter_provider=provider) as r:
        yield r
    provider.shutdown()


def _request() -> trace_service_pb2.ExportTraceServiceRequest:
    question = {semconv.INPUT_VALUE: "How do I rotate an API key?"}
    documents = {
        semconv.retrieval_document_id(0): "c-3120",
        semconv.retrieval_document_score(0): 5.5,
        semconv.RAGTRACE_RETRIEVAL_COUNT: 1,
    }
    root = otlp_span(TRACE_ID, ROOT_ID, None, "rag.pipeline", (1_000, 9_000), question)
    child = otlp_span(
        TRACE_ID, CHILD_ID, ROOT_ID, "retrieve", (2_000, 3_000), documents, error=True
    )
    return export_request([root, child], service="demo-app", scope=semconv.INSTRUMENTATION_SCOPE)


def _json_body() -> bytes:
    """The OTLP/JSON encoding: hex IDs (not base64), lowerCamelCase, int64 as strings."""
    return otlp_json(_request())


EXPECTED = [
    SpanRecord(
        TRACE_ID,
        ROOT_ID,
        None,
        "rag.pipeline",
        semconv.INSTRUMENTATION_SCOPE,
        "demo-app",
        1_000,
        9_000,
        {semconv.INPUT_VALUE: "How do I rotate an API key?"},
        False,
    ),
    SpanRecord(
        TRACE_ID,
        CHILD_ID,
        ROOT_ID,
        "retrieve",
        semconv.INSTRUMENTATION_SCOPE,
        "demo-app",
        2_000,
        3_000,
        {
            semconv.retrieval_document_id(0): "c-3120",
            semconv.retrieval_document_score(0): 5.5,
            semconv.RAGTRACE_RETRIEVAL_COUNT: 1,
        },
        True,
    ),
]


def _post(
    receiver: OtlpHttpReceiver,
    body: bytes,
    headers: dict[str, str],
    path: str = "/v1/traces",
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(receiver.host, receiver.port, timeout=10)
    try:
        conn.request(method, path, body=body if method == "POST" else None, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _rejections(reader: InMemoryMetricReader) -> dict[str, int]:
    rejected = values(reader, semconv.METRIC_RECEIVER_REJECTED)
    return {str(dict(k)[semconv.ATTR_REASON]): int(v) for k, v in rejected.items()}


PB = {"Content-Type": "application/x-protobuf"}
JS = {"Content-Type": "application/json"}


def test_protobuf_request_reaches_the_sink_and_gets_an_empty_protobuf_response(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader
) -> None:
    status, headers, body = _post(receiver, _request().SerializeToString(), PB)
    assert status == 200
    assert headers["content-type"] == "application/x-protobuf"
    response = trace_service_pb2.ExportTraceServiceResponse.FromString(body)
    assert not response.HasField("partial_success")
    assert sink.batches == [EXPECTED]
    assert _rejections(reader) == {}


def test_json_request_with_hex_ids_is_decoded_the_same(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    status, headers, body = _post(
        receiver, _json_body(), {"Content-Type": "application/json; charset=utf-8"}
    )
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {}
    assert sink.batches == [EXPECTED]


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_gzip_content_encoding(receiver: OtlpHttpReceiver, sink: Sink, fmt: str) -> None:
    raw = _request().SerializeToString() if fmt == "protobuf" else _json_body()
    headers = dict(PB if fmt == "protobuf" else JS, **{"Content-Encoding": "gzip"})
    status, _, _ = _post(receiver, gzip.compress(raw), headers)
    assert status == 200
    assert sink.batches == [EXPECTED]


def test_empty_protobuf_request_is_a_valid_export_of_nothing(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    status, _, body = _post(receiver, b"", PB)
    assert status == 200
    assert body == b""
    assert sink.batches == []


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_partial_success_reports_the_spans_the_sink_rejected(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader, fmt: str
) -> None:
    sink.outcome = Accepted(1, "1 span is an evaluation span of another evaluator")
    raw = _request().SerializeToString() if fmt == "protobuf" else _json_body()
    status, headers, body = _post(receiver, raw, PB if fmt == "protobuf" else JS)
    assert status == 200
    if fmt == "protobuf":
        assert headers["content-type"] == "application/x-protobuf"
        response = trace_service_pb2.ExportTraceServiceResponse.FromString(body)
        assert response.partial_success.rejected_spans == 1
        assert response.partial_success.error_message == (
            "1 span is an evaluation span of another evaluator"
        )
    else:
        assert headers["content-type"] == "application/json"
        assert json.loads(body) == {
            "partialSuccess": {
                "rejectedSpans": "1",
                "errorMessage": "1 span is an evaluation span of another evaluator",
            }
        }
    assert _rejections(reader) == {"rejected_spans": 1}


def test_unknown_content_type_is_415(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader
) -> None:
    status, headers, body = _post(receiver, b"hello", {"Content-Type": "text/plain"})
    assert status == 415
    assert headers["content-type"].startswith("text/plain")
    assert body.decode() == (
        "unsupported content type 'text/plain': send application/x-protobuf or application/json"
    )
    status, _, _ = _post(receiver, b"hello", {})
    assert status == 415
    assert sink.batches == []
    assert _rejections(reader) == {"unsupported_content_type": 2}


def test_unknown_content_encoding_is_415(
    receiver: OtlpHttpReceiver, reader: InMemoryMetricReader
) -> None:
    status, _, body = _post(receiver, b"x", dict(PB, **{"Content-Encoding": "br"}))
    assert status == 415
    assert body.decode() == "unsupported content encoding 'br': send gzip or identity"
    assert _rejections(reader) == {"unsupported_content_encoding": 1}


def test_bad_protobuf_is_400_with_a_status_message(
    receiver: OtlpHttpReceiver, sink: Sink, reader: InMemoryMetricReader
) -> None:
    status, headers, body = _post(receiver, b"\xff\xff\xff", PB)
    assert status == 400
    assert headers["content-type"] == "application/x-protobuf"
    st = status_pb2.Status.FromString(body)
    assert st.code == 3  # INVALID_ARGUMENT
    assert st.message.startswith("cannot decode OTLP protobuf trace request: protobuf_parse_error")
    assert sink.batches == []
    assert _rejections(reader) == {"bad_payload": 1}


def test_bad_span_id_is_400_naming_the_field(receiver: OtlpHttpReceiver) -> None:
    request = _request()
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x01\x02"
    status, _, body = _post(receiver, request.SerializeToString(), PB)
    assert status == 400
    message = status_pb2.Status.FromString(body).message
    assert "bad_span_id" in message
    assert "resource_spans[0].scope_spans[0].spans[1]" in message


def test_bad_json_is_400_with_a_json_status(receiver: OtlpHttpReceiver) -> None:
    status, headers, body = _post(receiver, b"{not json", JS)
    assert status == 400
    assert headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["code"] == 3
    assert doc["message"].startswith("cannot decode OTLP JSON trace request: json_parse_error")


def test_body_that_is_not_gzip_is_400(receiver: OtlpHttpReceiver) -> None:
    status, _, body = _post(receiver, b"plainly not gzip", dict(PB, **{"Content-Encoding": "gzip"}))
    assert status == 400
    assert status_pb2.Status.FromString(body).message.startswith("body is not valid gzip")


def test_oversized_bodies_are_413_before_and_after_decompression(
    receiver: OtlpHttpReceiver, reader: InMemoryMetricReader
) -> None:
    status, _, _ = _post(receiver, b"\x00" * (64 * 1024 + 1), PB)
    assert status == 413
    bomb = gzip.compress(b"\x00" * (1024 * 1024))  # ~1 KB that inflates to 1 MiB
    assert len(bomb) < 64 * 1024
    status, _, body = _post(receiver, bomb, dict(PB, **{"Content-Encoding": "gzip"}))
    assert status == 413
    assert status_pb2.Status.FromString(body).message == "decompressed body exceeds 65536 bytes"
    assert _rejections(reader) == {"too_large": 2}


def test_busy_sink_is_503_with_retry_after(receiver: OtlpHttpReceiver, sink: Sink) -> None:
    sink.error = ReceiverBusy("too many traces waiting to be scored", retry_after=2.2)
    status, headers, body = _post(receiver, _request().SerializeToString(), PB)
    assert status == 503
    assert headers["retry-after"] == "2"
    st = status_pb2.Status.FromString(body)
    assert (st.code, st.message) == (14, "too many traces waiting to be scored")


def test_a_failing_sink_is_500_and_the_server_keeps_serving(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    sink.error = RuntimeError("boom")
    status, _, _ = _post(receiver, _request().SerializeToString(), PB)
    assert status == 500
    sink.error = None
    status, _, _ = _post(receiver, _request().SerializeToString(), PB)
    assert status == 200
    assert len(sink.batches) == 2


def test_other_paths_and_methods(receiver: OtlpHttpReceiver) -> None:
    # An app exporting every signal to the evaluator gets its metrics and logs acknowledged.
    for path in ("/v1/metrics", "/v1/logs"):
        assert _post(receiver, b"", PB, path=path)[0] == 200
    assert _post(receiver, b"", PB, path="/v1/other")[0] == 404
    status, headers, _ = _post(receiver, b"", {}, method="GET")
    assert (status, headers["allow"]) == (405, "POST")
    assert _post(receiver, b"", {}, path="/", method="GET")[0] == 404


def test_keep_alive_connection_serves_several_requests(
    receiver: OtlpHttpReceiver, sink: Sink
) -> None:
    conn = http.client.HTTPConnection(receiver.host, receiver.port, timeout=10)
    try:
        for _ in range(3):
            conn.request("POST", "/v1/traces", body=_request().SerializeToString(), headers=PB)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
    finally:
        conn.close()
    assert len(sink.batches) == 3


def test_defaults_are_loopback_4318_and_bad_arguments_raise(sink: Sink) -> None:
    import inspect

    params = inspect.signature(OtlpHttpReceiver).parameters
    assert (params["host"].default, params["port"].default) == ("127.0.0.1", 4318)
    with pytest.raises(ValueError, match="port"):
        OtlpHttpReceiver(sink, port=70000)
    with pytest.raises(ValueError, match="max_body_bytes"):
        OtlpHttpReceiver(sink, port=0, max_body_bytes=0)


def test_endpoint_and_urls(receiver: OtlpHttpReceiver) -> None:
    assert receiver.endpoint == f"http://127.0.0.1:{receiver.port}"
    assert receiver.traces_url == f"http://127.0.0.1:{receiver.port}/v1/traces"
    assert receiver.port > 0


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_sdk_otlp_exporter_is_understood(
    receiver: OtlpHttpReceiver, sink: Sink, compression: Compression
) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "exporter-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    with tracer.start_as_current_span("rag.pipeline"), tracer.start_as_current_span("retrieve"):
        pass
    provider.shutdown()
    exporter = OTLPSpanExporter(endpoint=receiver.traces_url, compression=compression)
    assert exporter.export(memory.get_finished_spans()) is SpanExportResult.SUCCESS
    exporter.shutdown()  # type: ignore[no-untyped-call]  # the exporter's method is untyped
    (batch,) = sink.batches
    assert sorted(s.name for s in batch) == ["rag.pipeline", "retrieve"]
    assert {s.service for s in batch} == {"exporter-test"}
    assert {s.scope for s in batch} == {semconv.INSTRUMENTATION_SCOPE}
