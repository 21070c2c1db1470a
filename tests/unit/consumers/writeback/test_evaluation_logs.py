"""gen_ai.evaluation.result as OTLP log records: one per result, in the evaluated span's
context, with exactly the event's attributes; the sink's results_as chooses spans, events or
both."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import __version__, semconv
from ragtrace_consumers.model import TraceScores
from ragtrace_consumers.writeback.evaluation_logs import (
    evaluation_log_records,
    logs_export_request,
)
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
from scripts.services.otlp_sink import logs_of_request
from tests.evaluation_names import RETRIEVAL_RESULTS
from tests.unit.consumers.scoring_helpers import (
    grounded,
    root_span_id,
    sid,
    tid,
    trace_scores,
)

END_NS = 1_700_000_000_000_000_000
RESOURCE = Resource.create({"service.name": "ragtrace-consumer"})


def _scores() -> TraceScores:
    return trace_scores(result=grounded(2, 3), cost=0.002)


def _attrs(record: LogRecord) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in record.attributes:
        out[kv.key] = getattr(kv.value, str(kv.value.WhichOneof("value")))
    return out


def test_one_record_per_result_in_the_evaluated_spans_context() -> None:
    records = evaluation_log_records(
        _scores(), at_ns=END_NS, recall_threshold=0.5, groundedness_threshold=0.8
    )
    by_name = {str(_attrs(r)[semconv.GEN_AI_EVALUATION_NAME]): r for r in records}
    assert list(by_name) == [*RETRIEVAL_RESULTS, "groundedness", "cell"]
    targets = {"groundedness": sid(73), "cell": root_span_id(7)}
    for name, record in by_name.items():
        assert record.event_name == "gen_ai.evaluation.result"
        assert record.trace_id.hex() == tid(7)
        assert record.span_id.hex() == targets.get(name, sid(72)), name
        assert record.time_unix_nano == END_NS
        assert record.severity_text == "INFO"
    assert _attrs(by_name["recall"]) == {
        "gen_ai.evaluation.name": "recall",
        "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "1 of 2 gold chunks in the top 5 "
        "(question q-audit, matched by query_text)",
    }
    ground = _attrs(by_name["groundedness"])
    assert ground.pop("gen_ai.evaluation.score.value") == pytest.approx(2 / 3)
    assert ground.pop("gen_ai.evaluation.score.label") == "fail"
    assert str(ground.pop("gen_ai.evaluation.explanation")).startswith(
        "2 of 3 claims entailed by the context"
    )
    assert ground == {"gen_ai.evaluation.name": "groundedness"}
    assert _attrs(by_name["cell"]) == {
        "gen_ai.evaluation.name": "cell",
        "gen_ai.evaluation.score.label": "generation_failed",
        "gen_ai.evaluation.explanation": "mean_recall 0.50 >= 0.5; groundedness 0.67 < 0.8",
    }


def test_export_request_names_scope_version_and_schema() -> None:
    records = evaluation_log_records(_scores(), at_ns=END_NS)
    received = logs_of_request(logs_export_request(records, RESOURCE))
    assert len(received) == len(records)
    assert {(r.scope, r.scope_version, r.schema_url) for r in received} == {
        (semconv.EVALUATION_SCOPE, __version__, semconv.SCHEMA_URL)
    }
    assert received[0].resource["service.name"] == "ragtrace-consumer"


class _Logs:
    def __init__(self) -> None:
        self.records: list[LogRecord] = []

    def export(self, records: Sequence[LogRecord]) -> bool:
        self.records.extend(records)
        return True

    def shutdown(self) -> None:
        pass


@pytest.mark.parametrize(
    ("results_as", "spans", "records"), [("both", 3, 8), ("events", 0, 8), ("spans", 3, 0)]
)
def test_results_as_chooses_spans_events_or_both(results_as: str, spans: int, records: int) -> None:
    exporter, logs = InMemorySpanExporter(), _Logs()
    sink = OtlpScoreSink(exporter, RESOURCE, timeout_s=5, log_exporter=logs, results_as=results_as)
    try:
        sink.write(_scores())
    finally:
        sink.shutdown()
    assert len(exporter.get_finished_spans()) == spans
    assert len(logs.records) == records


def test_results_as_is_checked() -> None:
    with pytest.raises(ValueError, match="results_as must be one of both, events, spans"):
        OtlpScoreSink(InMemorySpanExporter(), RESOURCE, results_as="logs")
    with pytest.raises(ValueError, match="needs a log_exporter"):
        OtlpScoreSink(InMemorySpanExporter(), RESOURCE, results_as="events")
