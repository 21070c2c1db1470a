"""collector/config.yaml: the routing rules that must hold whatever else changes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CONFIG = Path(__file__).resolve().parents[2] / "collector" / "config.yaml"


def _config() -> dict[str, Any]:
    return dict(yaml.safe_load(CONFIG.read_text()))


def test_evaluation_receiver_never_feeds_kafka() -> None:
    pipelines = _config()["service"]["pipelines"]
    for name, pipeline in pipelines.items():
        if "otlp/eval" in pipeline["receivers"]:
            assert not [e for e in pipeline["exporters"] if e.split("/")[0] == "kafka"], name
    assert pipelines["traces/eval"] == {
        "receivers": ["otlp/eval"],
        "processors": ["memory_limiter"],
        "exporters": ["otlp_http/backend"],
    }
    assert pipelines["logs/eval"] == {
        "receivers": ["otlp/eval"],
        "processors": ["memory_limiter"],
        "exporters": ["otlp_http/backend"],
    }
    assert pipelines["traces/app"]["receivers"] == ["otlp/app"]
    assert set(pipelines["traces/app"]["exporters"]) == {"otlp_http/backend", "kafka"}


def test_kafka_exporter_writes_one_otlp_proto_message_per_trace() -> None:
    kafka = _config()["exporters"]["kafka"]
    assert kafka["traces"]["encoding"] == "otlp_proto"
    assert kafka["partition_traces_by_id"] is True
    assert (
        kafka["producer"]["max_message_bytes"] == "${env:RAGTRACE_KAFKA_MAX_MESSAGE_BYTES:-8388608}"
    )


def test_a_2xx_means_on_disk_for_every_exporter_that_carries_spans_or_results() -> None:
    """No processor that answers before the data is kept (``batch``) sits in front of a
    queued exporter, and every such exporter queues on the file storage, which the service
    starts."""
    config = _config()
    pipelines = config["service"]["pipelines"]
    queued = set()
    for name, pipeline in pipelines.items():
        if name.split("/")[0] in ("traces", "logs"):
            assert "batch" not in pipeline["processors"], name
            queued |= set(pipeline["exporters"])
    assert queued == {"otlp_http/backend", "kafka"}
    storage = config["extensions"]["file_storage/queue"]
    assert storage["directory"] == "${env:RAGTRACE_COLLECTOR_QUEUE_DIR:-/var/lib/otelcol/queue}"
    assert "file_storage/queue" in config["service"]["extensions"]
    for exporter in queued:
        queue = config["exporters"][exporter]["sending_queue"]
        assert queue["storage"] == "file_storage/queue", exporter
        assert queue.get("enabled", True) is True, exporter
        # Full: refused (503 / UNAVAILABLE, the sender retries), not blocked and not dropped.
        assert not queue.get("block_on_overflow", False), exporter
        retry = config["exporters"][exporter]["retry_on_failure"]
        assert retry["max_elapsed_time"] == "${env:RAGTRACE_COLLECTOR_RETRY_MAX_ELAPSED:-1h}"


def test_batches_are_bounded_and_sized_consistently_with_the_kafka_limit() -> None:
    batch = _config()["exporters"]["kafka"]["sending_queue"]["batch"]
    assert _config()["exporters"]["kafka"]["sending_queue"]["sizer"] == "items"
    default = re.compile(r"^\$\{env:RAGTRACE_BATCH_MAX_SPANS:-(\d+)\}$")
    size, max_size = (
        int(default.match(batch[k]).group(1))  # type: ignore[union-attr]
        for k in ("min_size", "max_size")
    )
    assert size <= max_size
    # A message holds at most max_size spans of one trace: the largest span the SDK's caps allow
    # (64 KiB of text plus small attributes, < 96 KB) times max_size fits the exporter's limit,
    # which fits the dev/test broker's message.max.bytes.
    from ragtrace._config import DEFAULT_MAX_SPAN_CONTENT_BYTES
    from scripts.services.kafka import _server_properties

    found = re.search(
        r":-(\d+)\}", _config()["exporters"]["kafka"]["producer"]["max_message_bytes"]
    )
    assert found is not None
    limit = int(found.group(1))
    assert (DEFAULT_MAX_SPAN_CONTENT_BYTES + 32 * 1024) * max_size <= limit
    props = _server_properties(9092, 9093, Path("/tmp"))
    broker = int(re.search(r"^message\.max\.bytes=(\d+)$", props, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert limit < broker


def test_every_endpoint_comes_from_the_environment_with_a_default() -> None:
    text = CONFIG.read_text()
    endpoints = re.findall(r"^\s*(?:endpoint|brokers):\s*(.+)$", text, re.MULTILINE)
    assert len(endpoints) == 8
    for value in endpoints:
        assert re.fullmatch(r"\$\{env:RAGTRACE_[A-Z_]+:-[^}]+\}", value.strip()), value
    # The default trace backend must never be our own app receiver on localhost (a loop).
    backend = _config()["exporters"]["otlp_http/backend"]["endpoint"]
    assert backend == "${env:RAGTRACE_TRACE_BACKEND_ENDPOINT:-http://trace-backend:4318}"
