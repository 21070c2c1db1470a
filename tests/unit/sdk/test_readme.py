"""The README's "Instrument your app" example runs as printed and sends its trace over OTLP/HTTP."""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[3]


def _example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Instrument your app\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    assert section, "README has no 'Instrument your app' section"
    (code,) = re.findall(r"^```python\n(.*?)^```", section.group(1), re.MULTILINE | re.DOTALL)
    return str(code)


class _Sink(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Sink.requests.append((self.path, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_readme_example_runs_and_exports_one_trace(tmp_path: Path) -> None:
    code = _example()
    assert len(code.strip().splitlines()) <= 20
    script = tmp_path / "app.py"
    script.write_text(code, encoding="utf-8")
    _Sink.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "RAGTRACE_"))}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"
        out = subprocess.run(
            [sys.executable, str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Audit logs are kept for 90 days.\n"
    assert out.stderr == ""
    spans = [
        span
        for path, body in _Sink.requests
        if path == "/v1/traces"
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    assert sorted(s.name for s in spans) == ["generate", "rag.pipeline", "retrieve"]
    assert len({s.trace_id for s in spans}) == 1
    retrieve = next(s for s in spans if s.name == "retrieve")
    attributes = {a.key: a.value for a in retrieve.attributes}
    assert attributes["retrieval.documents.1.document.id"].string_value == "c-4410"
    assert attributes["gen_ai.request.top_k"].int_value == 2
