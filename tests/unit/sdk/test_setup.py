"""Settings precedence, bad values, decorator option checks, and ``configure`` (in subprocesses,
because a process can install its global tracer provider only once)."""

from __future__ import annotations

import http.server
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import ragtrace
from ragtrace import _config

REPO = Path(__file__).resolve().parents[3]


def test_defaults() -> None:
    assert ragtrace.settings() == _config.Settings(
        enabled=True,
        capture_content=True,
        max_attribute_length=16_384,
        max_span_content_bytes=65_536,
        max_documents=20,
        redact=None,
    )


def test_env_values_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_ENABLED, " Off ")
    monkeypatch.setenv(_config.ENV_CAPTURE_CONTENT, "0")
    monkeypatch.setenv(_config.ENV_MAX_ATTRIBUTE_LENGTH, "100")
    monkeypatch.setenv(_config.ENV_MAX_SPAN_CONTENT_BYTES, "2000")
    monkeypatch.setenv(_config.ENV_MAX_DOCUMENTS, "7")
    assert _config.reload() == _config.Settings(False, False, 100, 2000, 7, None)
    monkeypatch.setenv(_config.ENV_MAX_TRACE_EXPORT_BYTES, "1000000")
    assert _config.reload().max_trace_export_bytes == 1_000_000


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        (_config.ENV_ENABLED, "maybe"),
        (_config.ENV_CAPTURE_CONTENT, "2"),
        (_config.ENV_MAX_ATTRIBUTE_LENGTH, "-5"),
        (_config.ENV_MAX_SPAN_CONTENT_BYTES, "lots"),
        (_config.ENV_MAX_DOCUMENTS, "0"),
        (_config.ENV_MAX_TRACE_EXPORT_BYTES, "8 MiB"),
    ],
)
def test_bad_env_value_warns_and_falls_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, name: str, raw: str
) -> None:
    monkeypatch.setenv(name, raw)
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        assert _config.reload() == _config.Settings()
    (record,) = caplog.records
    assert name in record.getMessage() and repr(raw) in record.getMessage()


def test_configure_argument_beats_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_MAX_DOCUMENTS, "7")
    _config.reload()
    ragtrace.configure(max_documents=3, capture_content=False)
    assert (ragtrace.settings().max_documents, ragtrace.settings().capture_content) == (3, False)
    ragtrace.configure(max_attribute_length=50)  # None arguments leave the others as they are
    assert (ragtrace.settings().max_documents, ragtrace.settings().max_attribute_length) == (3, 50)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_documents": 0},
        {"max_attribute_length": "10"},
        {"capture_content": "no"},
        {"enabled": 1},
        {"redact": "strip"},
        {"service_name": ""},
        {"endpoint": "localhost:4318"},
        {"endpoint": "ftp://collector"},
        {"max_queue_size": 0},
    ],
)
def test_configure_bad_argument_raises(kwargs: dict[str, Any]) -> None:
    before = ragtrace.settings()
    with pytest.raises(ValueError):
        ragtrace.configure(**kwargs)
    assert ragtrace.settings() == before


def fn(query: str) -> str:
    return query


@pytest.mark.parametrize(
    ("decorator", "kwargs", "message"),
    [
        (ragtrace.retrieve, {"top_k": 0}, "top_k must be a positive integer"),
        (ragtrace.retrieve, {"top_k": True}, "top_k must be a positive integer"),
        (ragtrace.retrieve, {"name": ""}, "name must be a non-empty string"),
        (ragtrace.retrieve, {"name": 3}, "name must be a non-empty string"),
        (ragtrace.retrieve, {"id_of": "id"}, "id_of must be callable"),
        (
            ragtrace.retrieve,
            {"query_arg": "missing"},
            "query_arg='missing': fn has no parameter of that name",
        ),
        (ragtrace.retrieve, {"query_arg": 3}, "query_arg=3: fn has only 1 positional parameters"),
        (ragtrace.retrieve, {"data_source": 1}, "data_source must be a string"),
        (ragtrace.generate, {"model": 5}, "model must be a string"),
        (
            ragtrace.generate,
            {"capture_content": "yes"},
            "capture_content must be True, False or None",
        ),
        (ragtrace.generate, {"context_arg": -1}, "context_arg must be a position >= 0"),
        (ragtrace.pipeline, {"attributes": ["a"]}, "attributes must be a mapping"),
        (ragtrace.pipeline, {"attributes": {"": 1}}, "attribute keys must be non-empty strings"),
        (ragtrace.pipeline, {"question_id": 7}, "question_id must be a string"),
        (ragtrace.pipeline, {"redact": 1}, "redact must be callable"),
    ],
)
def test_bad_decorator_option_raises_when_decorating(
    decorator: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        decorator(**kwargs)(fn)
    assert message in str(info.value)


def test_decorator_rejects_non_callable() -> None:
    with pytest.raises(ValueError, match="take a function"):
        ragtrace.retrieve(42)  # type: ignore[call-overload]


# -- configure() in a fresh process -----------------------------------------------------------


class _Sink(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        _Sink.bodies.append(self.path.encode() + b"\n" + self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def otlp_sink() -> Iterator[str]:
    _Sink.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run_python(code: str, **env: str) -> dict[str, Any]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "RAGTRACE_"))}
    full_env.update(env)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


APP = """
import json, ragtrace
@ragtrace.retrieve
def retrieve(query): return [{"id": "c1", "text": "t", "score": 0.5}]
@ragtrace.generate
def generate(query, chunks): return "a"
@ragtrace.pipeline
def answer(query): return generate(query, retrieve(query))
"""


def test_configure_installs_batching_otlp_http_provider(otlp_sink: str) -> None:
    result = run_python(
        APP
        + f"""
from opentelemetry import trace
provider = ragtrace.configure(service_name="support-bot", endpoint={otlp_sink!r})
assert ragtrace.configure() is provider and trace.get_tracer_provider() is provider
answer("q")
provider.force_flush()
procs = provider._active_span_processor._span_processors
print(json.dumps({{"type": type(provider).__name__, "processors": [type(p).__mro__[1].__name__ for p in procs],
    "errors": ragtrace.error_counts()}}))
"""
    )
    assert result == {"type": "TracerProvider", "processors": ["BatchSpanProcessor"], "errors": {}}
    assert len(_Sink.bodies) == 1
    path, body = _Sink.bodies[0].split(b"\n", 1)
    assert path == b"/v1/traces"
    request = ExportTraceServiceRequest.FromString(body)
    (resource_spans,) = request.resource_spans
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "support-bot"
    (scope_spans,) = resource_spans.scope_spans
    assert (scope_spans.scope.name, scope_spans.scope.version) == ("ragtrace", ragtrace.__version__)
    assert sorted(s.name for s in scope_spans.spans) == ["generate", "rag.pipeline", "retrieve"]


def test_configure_endpoint_from_otel_env(otlp_sink: str) -> None:
    result = run_python(
        APP
        + """
provider = ragtrace.configure()
answer("q")
provider.force_flush()
print(json.dumps({"errors": ragtrace.error_counts()}))
""",
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_sink,
        OTEL_SERVICE_NAME="from-env",
    )
    assert result == {"errors": {}}
    request = ExportTraceServiceRequest.FromString(_Sink.bodies[0].split(b"\n", 1)[1])
    resource = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert resource["service.name"] == "from-env"


def test_configure_keeps_an_existing_sdk_provider() -> None:
    result = run_python(
        APP
        + """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
mine = TracerProvider(); exporter = InMemorySpanExporter()
mine.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(mine)
got = ragtrace.configure(service_name="ignored", capture_content=False)
answer("q")
print(json.dumps({"same": got is mine, "processors": len(mine._active_span_processor._span_processors),
    "spans": sorted(s.name for s in exporter.get_finished_spans()),
    "captured": exporter.get_finished_spans()[0].attributes["ragtrace.content.captured"]}))
"""
    )
    assert result == {
        "same": True,
        "processors": 1,
        "spans": ["generate", "rag.pipeline", "retrieve"],
        "captured": False,
    }


def test_provider_set_after_decorating_and_calling_still_works() -> None:
    result = run_python(
        APP
        + """
answer("before any provider")  # proxy tracer: no spans, no errors
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
provider = TracerProvider(); exporter = InMemorySpanExporter()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
answer("after")
print(json.dumps({"spans": len(exporter.get_finished_spans()), "errors": ragtrace.error_counts()}))
"""
    )
    assert result == {"spans": 3, "errors": {}}


def test_exporter_down_never_raises_and_is_counted() -> None:
    result = run_python(
        APP
        + """
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
provider = ragtrace.configure(endpoint=f"http://127.0.0.1:{port}")
for _ in range(3):
    assert answer("q") == "a"
provider.force_flush()
print(json.dumps({"errors": ragtrace.error_counts(), "dropped": ragtrace.dropped_counts()}))
""",
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="1",
    )
    assert result == {"errors": {"export": 1}, "dropped": {"export_failed": 9}}


def test_full_queue_drops_and_counts_without_blocking() -> None:
    result = run_python(
        APP
        + """
import threading, time
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
release = threading.Event()
class Stuck(SpanExporter):
    def export(self, spans):
        release.wait(30)
        return SpanExportResult.SUCCESS
provider = ragtrace.configure(exporter=Stuck(), max_queue_size=4)
start = time.monotonic()
for _ in range(20):
    answer("q")
elapsed = time.monotonic() - start
dropped = ragtrace.dropped_counts()
release.set()
print(json.dumps({"fast": elapsed < 5, "dropped": dropped.get("queue_full", 0) >= 40}))
"""
    )
    assert result == {"fast": True, "dropped": True}
