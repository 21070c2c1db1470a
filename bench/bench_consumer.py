"""Throughput of ``ragtrace consume`` against a plain Kafka read-and-decode loop, and the
end-to-end scoring lag at a fixed offered load.

Throughput: one topic (3 partitions) is filled with N traces, one Kafka message per trace as the
collector's kafka exporter writes them (an OTLP ``ExportTraceServiceRequest``: a pipeline, a
retrieval and a generation span). Every trace has its own answer and context, so each one costs
a judge call; the judge is the fake Anthropic API (tests/fakes) answering at once, over HTTP, so
the real client runs. The baseline is a plain kafka-python loop reading the same topic from the
start and decoding every message with the same decoder, nothing else. ``ragtrace consume`` runs as
a subprocess with its defaults (8 scoring workers) and is timed from its partition assignment to
the last evaluation span received by an OTLP/HTTP sink standing in for the collector.

Lag: the real collector in front of Kafka, an app instrumented with the ragtrace SDK sending
traces at a fixed rate, and the lag of each trace measured from its root span's end to the arrival
of its evaluation span at the trace backend (through the collector again). The app exports every
100 ms (``OTEL_BSP_SCHEDULE_DELAY``) and the collector batches for up to 200 ms each way.

Run: ``python bench/bench_consumer.py [--quick]`` (needs ``make provision``); writes the
``consumer`` section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from ragtrace.consumers.decode import decode_request

from bench._report import machine_line, write_section
from ragtrace import semconv as sc
from scripts.services import (
    OtlpSink,
    create_topic,
    start_collector,
    start_kafka,
    start_redis,
)
from tests.fakes.anthropic_server import FakeAnthropic, entail_all

# The fake API and the OTLP sink answer in two writes (headers, body); with Nagle's algorithm on,
# the client's delayed ACK holds the second for ~40 ms. A real API and collector do not do that.
http.server.BaseHTTPRequestHandler.disable_nagle_algorithm = True

RAGTRACE = str(Path(sys.executable).with_name("ragtrace"))
TOPIC = "bench_spans"
SPANS_PER_TRACE = 3


def _kv(key: str, value: object) -> common_pb2.KeyValue:
    if isinstance(value, int):
        return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(int_value=value))
    return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=str(value)))


def trace_message(n: int) -> tuple[bytes, bytes]:
    """(key, value) of one trace's Kafka message, as the collector writes it."""
    trace_id = os.urandom(16)
    ids = [os.urandom(8) for _ in range(3)]
    now = time.time_ns()
    docs = [(f"kb-{n}-{i}", f"Chunk {i} of request {n} says the retention is {n % 90} days.")
            for i in range(3)]
    ret = [_kv(sc.OPENINFERENCE_SPAN_KIND, "RETRIEVER"),
           _kv(sc.INPUT_VALUE, f"How long are logs kept for tenant {n}?")]
    for i, (cid, text) in enumerate(docs):
        ret += [_kv(sc.retrieval_document_id(i), cid), _kv(sc.retrieval_document_content(i), text)]
    gen = [_kv(sc.OPENINFERENCE_SPAN_KIND, "LLM"),
           _kv(sc.OUTPUT_VALUE, f"Chunk 0 of request {n} says the retention is {n % 90} days.")]
    root = [_kv(sc.OPENINFERENCE_SPAN_KIND, "CHAIN"), _kv(sc.RAGTRACE_PIPELINE_NAME, "bench")]
    req = trace_service_pb2.ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", "bench-app"))
    ss = rs.scope_spans.add()
    ss.scope.name = sc.INSTRUMENTATION_SCOPE
    for span_id, parent, name, attrs in ((ids[1], ids[0], "retrieve", ret),
                                         (ids[2], ids[0], "generate", gen),
                                         (ids[0], b"", "rag.pipeline", root)):
        ss.spans.append(trace_pb2.Span(trace_id=trace_id, span_id=span_id,
                                       parent_span_id=parent, name=name,
                                       start_time_unix_nano=now - 1000,
                                       end_time_unix_nano=now, attributes=attrs))
    return trace_id.hex().encode(), req.SerializeToString()


def fill_topic(bootstrap: str, n: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20,
                             batch_size=256 * 1024)
    for i in range(n):
        key, value = trace_message(i)
        producer.send(TOPIC, key=key, value=value)
    producer.flush()
    producer.close()


def plain_loop(bootstrap: str, n: int) -> tuple[float, int]:
    """Seconds to read and decode ``n`` messages from the start; spans decoded."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             max_poll_records=500)
    tps = [TopicPartition(TOPIC, p) for p in sorted(consumer.partitions_for_topic(TOPIC))]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    seen = spans = 0
    start = time.perf_counter()
    while seen < n:
        for batch in consumer.poll(timeout_ms=200).values():
            for msg in batch:
                spans += len(decode_request(msg.value))
                seen += 1
    took = time.perf_counter() - start
    consumer.close()
    return took, spans


def consumer_env(bootstrap: str, redis_url: str, otlp: str, judge_url: str, topic: str,
                 quiet_s: str = "5", judge_rate: float = 1.0) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    env.update({
        "PYTHONPATH": str(ROOT),
        "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "RAGTRACE_KAFKA_TOPIC": topic,
        "RAGTRACE_KAFKA_GROUP_ID": f"bench-{uuid.uuid4().hex[:8]}",
        "RAGTRACE_KAFKA_DLQ_TOPIC": f"{topic}.dlq",
        "RAGTRACE_REDIS_URL": redis_url,
        "RAGTRACE_REDIS_KEY_PREFIX": f"bench-{uuid.uuid4().hex[:8]}",
        "RAGTRACE_EXPORT_OTLP_ENDPOINT": otlp,
        "RAGTRACE_ASSEMBLY_QUIET_S": quiet_s,
        "RAGTRACE_JUDGE_NAME": "anthropic",
        "RAGTRACE_SAMPLING_JUDGE_RATE": str(judge_rate),
        "RAGTRACE_JUDGE_CALLS_PER_MINUTE": "1000000",
        "RAGTRACE_JUDGE_TOKENS_PER_MINUTE": "1000000000",
        "ANTHROPIC_API_KEY": "bench",
        "ANTHROPIC_BASE_URL": judge_url,
    })
    return env


def start_consumer(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        return subprocess.Popen([RAGTRACE, "consume", "--log-level", "WARNING"], env=env,
                                cwd=ROOT, stdout=err, stderr=subprocess.STDOUT)


def scored_count(client: Any, prefix: str) -> int:
    """Traces finished (scored or skipped) by the consumer: the store's ``released`` counter."""
    return int(client.hget(f"{prefix}:stats", "released") or 0)


def consumer_run(bootstrap: str, redis_url: str, sink: OtlpSink, judge: FakeAnthropic,
                 n: int, work: Path, judge_rate: float) -> float:
    """Seconds ``ragtrace consume`` takes for n traces, extrapolated from its rate between its
    first finished trace and its n-th (process start and group join excluded)."""
    import redis

    sink.clear()
    env = consumer_env(bootstrap, redis_url, sink.endpoint, judge.base_url, TOPIC,
                       judge_rate=judge_rate)
    prefix = env["RAGTRACE_REDIS_KEY_PREFIX"]
    client = redis.Redis.from_url(redis_url)
    log = work / f"consumer-{uuid.uuid4().hex[:6]}.log"
    proc = start_consumer(env, log)
    try:
        deadline = time.monotonic() + 600
        while scored_count(client, prefix) == 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"consumer failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.002)
        start = time.perf_counter()
        first = scored_count(client, prefix)
        while scored_count(client, prefix) < n:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"consumer failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.002)
        took = time.perf_counter() - start
        return took * n / max(1, n - first)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        client.close()


# -- lag -----------------------------------------------------------------------------------------
def lag_run(work: Path, bootstrap: str, redis_url: str, judge: FakeAnthropic, rate: float,
            seconds: float) -> list[float]:
    """Lag (s) of each trace from its root span's end to its evaluation span's arrival."""
    create_topic(bootstrap, "lag_spans", 3)
    backend = OtlpSink().start()
    collector = start_collector(work / "collector", bootstrap, backend.endpoint, topic="lag_spans")
    arrived: dict[str, float] = {}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            now = time.time()
            for s in backend.spans(lambda s: s.scope == sc.EVALUATION_SCOPE):
                arrived.setdefault(s.trace_id, now)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    env = consumer_env(bootstrap, redis_url, collector.endpoints.eval_otlp_http, judge.base_url,
                       "lag_spans", quiet_s="1")
    proc = start_consumer(env, work / "lag-consumer.log")
    app_env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTRACE_", "OTEL_"))}
    app_env.update({"PYTHONPATH": str(ROOT), "OTEL_BSP_SCHEDULE_DELAY": "100"})
    try:
        time.sleep(8)  # consumer joined the group (auto_offset_reset=earliest covers the rest)
        out = subprocess.run(
            [sys.executable, str(Path(__file__)), "--app", collector.endpoints.app_otlp_http,
             str(rate), str(seconds)], env=app_env, capture_output=True, check=True,
            timeout=seconds + 120)
        ends: dict[str, float] = {}
        for line in out.stdout.decode().splitlines():
            trace_id, end = line.split()
            ends[trace_id] = float(end)
        deadline = time.monotonic() + 120
        while not set(ends) <= set(arrived) and time.monotonic() < deadline:
            time.sleep(0.1)
        missing = set(ends) - set(arrived)
        if missing:
            raise RuntimeError(f"{len(missing)} traces never scored")
        return [arrived[t] - ends[t] for t in ends]
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        collector.stop()
        backend.stop()


def app_main(endpoint: str, rate: float, seconds: float) -> None:
    """The load generator (run in its own process): ``rate`` traces per second."""
    from opentelemetry import trace

    import ragtrace

    provider = ragtrace.configure(service_name="bench-app", endpoint=endpoint)

    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, str]]:
        return [{"id": f"kb-{query[-6:]}-{i}", "text": f"Note {i} for {query}."} for i in range(3)]

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, str]]) -> str:
        return chunks[0]["text"]

    @ragtrace.pipeline
    def answer(query: str) -> str:
        ctx = trace.get_current_span().get_span_context()
        generate(query, retrieve(query))
        print(f"{ctx.trace_id:032x}", end=" ")
        return ""

    total = int(rate * seconds)
    start = time.perf_counter()
    for i in range(total):
        time.sleep(max(0.0, start + i / rate - time.perf_counter()))
        answer(f"request {i:06d}")
        print(f"{time.time():.6f}", flush=True)
    getattr(provider, "force_flush", lambda: None)()


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--traces", type=int, default=None)
    parser.add_argument("--app", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.app:
        app_main(args.app[0], float(args.app[1]), float(args.app[2]))
        return 0
    n = args.traces or (600 if args.quick else 3000)
    rate, seconds = (10.0, 10.0) if args.quick else (20.0, 30.0)
    with tempfile.TemporaryDirectory(prefix="ragtrace-bench-") as tmp:
        work = Path(tmp)
        redis = start_redis(work / "redis")
        kafka = start_kafka(work / "kafka")
        sink = OtlpSink().start()
        try:
            create_topic(kafka.bootstrap, TOPIC, 3)
            fill_topic(kafka.bootstrap, n)
            with FakeAnthropic(entail_all) as judge:
                plain_s, spans = plain_loop(kafka.bootstrap, n)
                assert spans == n * SPANS_PER_TRACE, spans
                consumer_s = consumer_run(kafka.bootstrap, redis.url, sink, judge, n, work, 1.0)
                judge_calls = len(judge.requests)
                sampled_s = consumer_run(kafka.bootstrap, redis.url, sink, judge, n, work, 0.1)
                lags = lag_run(work, kafka.bootstrap, redis.url, judge, rate, seconds)
        finally:
            sink.stop()
            kafka.stop()
            redis.stop()
    plain_rate = n * SPANS_PER_TRACE / plain_s
    consumer_rate = n * SPANS_PER_TRACE / consumer_s
    ratio = consumer_rate / plain_rate
    sampled_rate = n * SPANS_PER_TRACE / sampled_s
    p50, p95 = _pct(lags, 50), _pct(lags, 95)
    md = f"""## Consumer (`bench/bench_consumer.py`)

{machine_line()}; Kafka 4.1 (one broker), Redis, all on the same machine.

Throughput over {n:,} traces ({n * SPANS_PER_TRACE:,} spans, one message per trace, each trace a
judge call to an instant local fake of the Anthropic API over HTTP — {judge_calls:,} calls):

| reader | spans/s | traces/s |
|---|---:|---:|
| plain kafka-python loop: read + decode only | {plain_rate:,.0f} | {n / plain_s:,.0f} |
| `ragtrace consume`, every trace judged: decode, store in Redis, assemble, sample, judge, write back over OTLP, commit | {consumer_rate:,.0f} | {n / consumer_s:,.0f} |
| `ragtrace consume`, 10 % of traces judged (`sampling.judge_rate: 0.1`) | {sampled_rate:,.0f} | {n / sampled_s:,.0f} |

Ratio consume / plain loop: **{ratio:.2f}** with every trace judged, **{sampled_rate / plain_rate:.2f}**
with 10 % judged (goal ≥ 0.5). The consumer is one Python process: with the judge answering at
once, its CPU goes to the Anthropic client (about 8 ms per call: request building, response
validation) and to the per-trace Redis round trips; run more replicas (more partitions) to scale.
Against the real API a judge call takes seconds, so `judge.concurrency` (calls in flight), not
CPU, bounds the judged rate.

End-to-end lag at a fixed offered load of {rate:g} traces/s for {seconds:g} s (app → collector →
Kafka → consumer → collector → trace backend; app exports every 100 ms, collector batches up to
200 ms each way, the completion rule scores a trace as soon as its root span arrives), from a
trace's root span end to its evaluation span's arrival, over {len(lags)} traces:
**p50 {p50:.2f} s, p95 {p95:.2f} s** (max {max(lags):.2f} s, mean {statistics.mean(lags):.2f} s).
"""
    print(md)
    write_section("consumer", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
