"""The embedded evaluator end to end in this process: spans from the real SDK in a child process
→ OTLP/HTTP receiver → the consumers' Pipeline → SQLite results, evaluation spans to an OTLP
backend, Prometheus /metrics — and state that survives a restart."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv
from ragtrace.evaluation.judges import GroundednessResult, JudgeInfo, LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from scripts.services.otlp_sink import OtlpSink
from tests.metric_points import values
from tests.unit.consumers.demo_client import QUESTIONS, run_app

LABELS = str(resources.files("ragtrace_consumers.demo").joinpath("labels.jsonl"))
EXPORTS_CLAIM = (
    "The /v1/exports endpoint returns an XML spreadsheet, zipped per quarter and "
    "mailed to the account owner overnight."
)

# question -> (qid, retrieved, recall, groundedness, claims, unsupported, cell)
EXPECTED = {
    QUESTIONS[0]: (
        "q-audit-team",
        ("c-9930", "c-9931", "c-1001"),
        0.0,
        1.0,
        1,
        (),
        "retrieval_failed",
    ),
    QUESTIONS[1]: (
        "q-exports-format",
        ("c-2210", "c-2211", "c-9931"),
        1.0,
        0.5,
        2,
        (EXPORTS_CLAIM,),
        "generation_failed",
    ),
    QUESTIONS[2]: ("q-rotate-key", ("c-3120", "c-9931", "c-3300"), 1.0, 1.0, 2, (), "fine"),
    QUESTIONS[3]: ("q-rate-limit", ("c-3300", "c-3120", "c-9931"), 1.0, 1.0, 2, (), "fine"),
    QUESTIONS[4]: ("q-regions", ("c-5100", "c-9931", "c-2211"), 1.0, 1.0, 2, (), "fine"),
    QUESTIONS[5]: (None, ("c-7700",), None, 1.0, 1, (), "unlabelled"),
}


def _config() -> ConsumerConfig:
    return ConsumerConfig.defaults().replace(
        scoring={"k": 3}, assembly={"quiet_s": 0.1}, export={"metrics_interval_s": 3600}
    )


def _evaluator(
    state: Path,
    *,
    otlp: str | None = None,
    metrics_port: int | None = 0,
    reader: InMemoryMetricReader | None = None,
) -> EmbeddedEvaluator:
    return EmbeddedEvaluator(
        _config().replace(
            serve={
                "port": 0,
                "state": state,
                "labels": LABELS,
                "otlp_endpoint": otlp,
                "metrics": metrics_port is not None,
                "metrics_port": metrics_port or 0,
                "service_name": "ragtrace-test",
            }
        ),
        judge=LexicalJudge(),
        extra_metric_readers=[reader] if reader is not None else (),
    )


@pytest.fixture()
def backend() -> Iterator[OtlpSink]:
    with OtlpSink() as sink:
        yield sink


def test_sdk_traces_are_scored_recorded_written_back_and_measured(
    tmp_path: Path, backend: OtlpSink
) -> None:
    with _evaluator(tmp_path / "state.db", otlp=backend.endpoint) as ev:
        asked = run_app(ev.endpoint)
        rows = ev.wait_for_results(len(QUESTIONS), timeout_s=30)
        assert ev.metrics_url is not None
        scrape = urllib.request.urlopen(ev.metrics_url, timeout=10).read().decode()

    assert len(rows) == len(QUESTIONS)
    by_trace = {r.trace_id: r for r in rows}
    for item in asked:
        row = by_trace[str(item["trace_id"])]
        qid, retrieved, recall, grounded, claims, unsupported, cell = EXPECTED[
            str(item["question"])
        ]
        assert tuple(item["retrieved"]) == retrieved  # type: ignore[arg-type]
        assert (
            row.question_id,
            row.retrieved,
            row.recall,
            row.groundedness,
            row.claims,
            row.unsupported_claims,
            row.cell,
        ) == (qid, retrieved, recall, grounded, claims, unsupported, cell)
        assert row.query == item["question"]
        assert row.answer == item["answer"]
        assert (row.service, row.pipeline) == ("lumen-support-bot", "support-bot")
        assert (row.judge_name, row.judge_model, row.judge_error) == ("lexical", None, None)
        if qid is None:
            assert (row.matched_by, row.k, row.hit_rate, row.reciprocal_rank) == (
                None,
                None,
                None,
                None,
            )
        else:
            assert (row.matched_by, row.k, row.hit_rate, row.reciprocal_rank) == (
                "query_text",
                3,
                recall,
                recall,
            )

    # One evaluation span per trace reached the configured backend, in the evaluated trace.
    evals = backend.wait_for_spans(
        lambda s: s.name == semconv.SPAN_EVALUATION, count=len(QUESTIONS)
    )
    assert len(evals) == len(QUESTIONS)
    assert {s.trace_id: s.attributes[semconv.EVAL_CELL] for s in evals} == {
        r.trace_id: r.cell for r in rows
    }
    for span in evals:
        assert span.scope == semconv.EVALUATION_SCOPE
        assert span.attributes[semconv.EVAL_MARKER] is True
        assert span.parent_span_id == span.attributes[semconv.EVAL_TARGET_SPAN_ID]

    # Prometheus: the groundedness histogram over the six answers (1, .5, 1, 1, 1, 1).
    # judge_prompt: the first 12 hex characters of the lexical judge's prompt SHA-256.
    prompt = LexicalJudge().info.prompt_sha256[:12]
    judge = f'judge_model="lexical",judge_prompt="{prompt}"'
    # model: the demo app's generator (@ragtrace.generate(model=...)), a bounded label.
    rest = (
        'model="demo-template-generator",otel_scope_name="ragtrace.evaluation",'
        f'otel_scope_schema_url="{semconv.SCHEMA_URL}",'
        f'otel_scope_version="{ragtrace.__version__}",pipeline="support-bot",'
        'service="lumen-support-bot"'
    )
    lines = set(scrape.splitlines())
    # recall by retriever: the demo's @ragtrace.retrieve(data_source="lumen-docs").
    assert any(x.startswith('ragtrace_recall_count{data_source="lumen-docs",') for x in lines)
    assert f"ragtrace_groundedness_count{{{judge},{rest}}} 6.0" in lines
    assert f"ragtrace_groundedness_sum{{{judge},{rest}}} 5.5" in lines
    for le, n in (("0.4", 0.0), ("0.5", 1.0), ("0.9", 1.0), ("1.0", 6.0), ("+Inf", 6.0)):
        line = f'ragtrace_groundedness_bucket{{{judge},le="{le}",{rest}}} {n}'
        assert line in lines, line
    # The counts an interval needs: judged (the histogram's count) and not grounded, under the
    # same labels; one of the six answers (0.5) is below the 0.8 threshold.
    assert f"ragtrace_groundedness_failed_total{{{judge},{rest}}} 1.0" in lines
    calls = f'ragtrace_judge_calls_total{{{judge},otel_scope_name="ragtrace.evaluation",'
    assert any(x.startswith(calls) for x in lines), calls


def _hand_built_trace() -> tuple[bytes, str]:
    """One labelled RAG trace as the decorators would shape it, encoded as OTLP protobuf."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "hand-built"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    text = "To rotate an API key, open Settings, choose API keys, then Rotate."
    with tracer.start_as_current_span(
        semconv.SPAN_PIPELINE,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.CHAIN,
            semconv.RAGTRACE_PIPELINE_NAME: "support-bot",
            semconv.INPUT_VALUE: "How do I rotate an API key?",
        },
    ) as root:
        with tracer.start_as_current_span(
            semconv.SPAN_RETRIEVE,
            attributes={
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.RETRIEVER,
                semconv.INPUT_VALUE: "How do I rotate an API key?",
                semconv.retrieval_document_id(0): "c-3120",
                semconv.retrieval_document_content(0): text,
            },
        ):
            pass
        with tracer.start_as_current_span(
            semconv.SPAN_GENERATE,
            attributes={
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.LLM,
                semconv.OUTPUT_VALUE: "Open Settings, choose API keys, then Rotate.",
            },
        ):
            pass
    provider.shutdown()
    trace_id = format(root.get_span_context().trace_id, "032x")
    return encode_spans(exporter.get_finished_spans()).SerializeToString(), trace_id


def _post(endpoint: str, body: bytes) -> int:
    req = urllib.request.Request(
        endpoint + "/v1/traces", data=body, headers={"Content-Type": "application/x-protobuf"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(resp.status)


def _skipped(reader: InMemoryMetricReader, reason: str) -> float:
    skipped = values(reader, semconv.METRIC_TRACES_SKIPPED)
    return next((v for k, v in skipped.items() if dict(k).get(semconv.ATTR_REASON) == reason), 0.0)


def test_a_restart_keeps_results_and_never_writes_a_trace_back_twice(
    tmp_path: Path, backend: OtlpSink
) -> None:
    state = tmp_path / "state.db"
    body, trace_id = _hand_built_trace()
    with _evaluator(state, otlp=backend.endpoint, metrics_port=None) as ev:
        assert _post(ev.endpoint, body) == 200
        (first,) = ev.wait_for_results(1, timeout_s=30)
    assert (first.trace_id, first.question_id, first.recall, first.groundedness, first.cell) == (
        trace_id,
        "q-rotate-key",
        1.0,
        1.0,
        "fine",
    )
    backend.wait_for_spans(lambda s: s.name == semconv.SPAN_EVALUATION, count=1)

    # Right after a restart, the durable trace store still knows the trace was scored: the
    # re-delivered spans are dropped as late ones.
    with _evaluator(state, otlp=backend.endpoint, metrics_port=None) as ev:
        assert _post(ev.endpoint, body) == 200
        assert ev.traces.stats()["late_spans"] > 0 and ev.traces.pending() == 0
    # That memory lasts assembly.ttl_s; past it (emulated by forgetting it), the idempotency
    # marks keep the trace from being written back twice.
    import sqlite3

    with sqlite3.connect(state) as db:
        db.execute("DELETE FROM traces_done")
    reader = InMemoryMetricReader()
    with _evaluator(state, otlp=backend.endpoint, metrics_port=None, reader=reader) as ev:
        assert [r for _, r in ev.state.results.all()] == [first]
        assert _post(ev.endpoint, body) == 200  # the same spans delivered again
        deadline = time.monotonic() + 30
        while _skipped(reader, "already_scored") < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _skipped(reader, "already_scored") == 1
        assert [r for _, r in ev.state.results.all()] == [first]
    assert len(backend.spans(lambda s: s.name == semconv.SPAN_EVALUATION)) == 1


def test_results_row_keeps_a_family_written_before(tmp_path: Path) -> None:
    """A re-delivery that writes only groundedness keeps the recall stored earlier."""
    from ragtrace_consumers.writeback.recording_sink import to_scored_result

    previous = ScoredResult(
        trace_id="a" * 32,
        scored_at=1.0,
        service="s",
        cell="fine",
        question_id="q1",
        matched_by="query_id",
        k=3,
        recall=1.0,
        hit_rate=1.0,
        reciprocal_rank=0.5,
        extra={"labels_version": "v1"},
    )
    from ragtrace.evaluation.attribution import Cell
    from ragtrace_consumers.model import RagTrace, TraceScores

    trace = RagTrace(trace_id="a" * 32, service="s", target_span_id="b" * 16, answer="x")
    result = LexicalJudge().groundedness("Open Settings.", ["Open Settings."])
    row = to_scored_result(TraceScores(trace, None, result, Cell.FINE), 2.0, previous)
    assert (
        row.question_id,
        row.matched_by,
        row.k,
        row.recall,
        row.hit_rate,
        row.reciprocal_rank,
    ) == ("q1", "query_id", 3, 1.0, 1.0, 0.5)
    assert (row.groundedness, row.claims, row.judge_name, row.scored_at) == (1.0, 1, "lexical", 2.0)
    assert row.extra == {"labels_version": "v1", "judge_cost_usd": 0.0, "no_claims": False}


class _GatedJudge:
    """The lexical judge, held at a gate so traces stay in flight."""

    def __init__(self) -> None:
        self._inner = LexicalJudge()
        self.gate = threading.Event()

    @property
    def info(self) -> JudgeInfo:
        return self._inner.info

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        self.gate.wait(30)
        return self._inner.groundedness(answer, context)


def test_a_full_evaluator_answers_503_until_scoring_catches_up(tmp_path: Path) -> None:
    judge = _GatedJudge()
    first, _ = _hand_built_trace()
    second, second_id = _hand_built_trace()
    ev = EmbeddedEvaluator(
        _config().replace(
            serve={
                "port": 0,
                "state": tmp_path / "s.db",
                "labels": LABELS,
                "metrics": False,
                "workers": 1,
                "max_pending_traces": 1,
            }
        ),
        judge=judge,
    )
    with ev:
        assert _post(ev.endpoint, first) == 200
        with pytest.raises(urllib.error.HTTPError) as busy:
            _post(ev.endpoint, second)
        assert busy.value.code == 503
        assert busy.value.headers["Retry-After"] == "1"
        assert status_pb2.Status.FromString(busy.value.read()).message.startswith(
            "evaluator full: holding 1 traces ("
        )
        judge.gate.set()
        ev.wait_for_results(1, timeout_s=30)
        deadline = time.monotonic() + 30
        while True:  # the exporter's retry: the first trace is released just after it is recorded
            try:
                assert _post(ev.endpoint, second) == 200
                break
            except urllib.error.HTTPError as exc:
                assert exc.code == 503 and time.monotonic() < deadline
                time.sleep(0.05)
        rows = ev.wait_for_results(2, timeout_s=30)
    assert [r.cell for r in rows] == ["fine", "fine"]
    assert rows[1].trace_id == second_id


def test_metrics_and_logs_from_the_app_are_forwarded_and_spans_only_sends_no_metrics(
    tmp_path: Path,
) -> None:
    """``otlp_signals="traces"``: the evaluator pushes no metrics of its own to the endpoint
    (a backend without /v1/metrics, like Phoenix); what an app sends to /v1/metrics and
    /v1/logs is acknowledged and forwarded unchanged."""
    import http.server
    from urllib import request

    received: list[tuple[str, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        ev = EmbeddedEvaluator(
            _config().replace(
                export={"metrics_interval_s": 0.05},
                serve={
                    "port": 0,
                    "state": tmp_path / "s.db",
                    "otlp_endpoint": endpoint,
                    "otlp_signals": "traces",
                    "metrics": False,
                },
            ),
            judge=LexicalJudge(),
        )
        with ev:
            for path, body in (("/v1/metrics", b"m-body"), ("/v1/logs", b"l-body")):
                req = request.Request(
                    ev.endpoint + path,
                    data=body,
                    method="POST",
                    headers={"Content-Type": "application/x-protobuf"},
                )
                assert request.urlopen(req, timeout=5).status == 200
            deadline = time.monotonic() + 10
            while len(received) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)  # several metric intervals: none may arrive
    finally:
        server.shutdown()
        server.server_close()
    assert sorted(received) == [("/v1/logs", b"l-body"), ("/v1/metrics", b"m-body")]
