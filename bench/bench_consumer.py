"""Throughput of ``ragtrace consume`` against a plain Kafka read-and-decode loop, and the
end-to-end scoring lag at a fixed offered load.

Throughput: one topic (6 partitions, so two replicas split it evenly) is filled with N traces,
one Kafka message per trace as the collector's kafka exporter writes them (an OTLP
``ExportTraceServiceRequest``: a pipeline, a retrieval and a generation span). Every trace has its own answer and context, so each one costs
a judge call; one in a hundred names a labelled question (loaded into Redis). The baseline is a
plain kafka-python loop reading the same topic from the start and decoding every message with
the same decoder, nothing else, with kafka-python's C CRC32C (the ``crc32c`` package of the
consumer extra; the run refuses to start without it). Baseline and consumer runs are
interleaved over ``--rounds`` rounds; each ratio is the median of the per-round ratios. The consumer runs as a
subprocess with its defaults: the service ``ragtrace consume`` builds (``build_service``) with an
in-process judge that answers at once (``InstantJudge``, no time budget, as the lexical judge),
so the figure measures ragtrace's own pipeline; one and two replicas, every trace judged and
10 % judged; and, for comparison, the real ``ragtrace consume``
command with the Anthropic judge against the fake Anthropic API (tests/fakes) over HTTP, where
the real client runs. Each run is timed from its first finished trace to its N-th (the store's
``released`` counter), write-back going to an OTLP/HTTP sink standing in for the collector.

Floor: the same work in one thread of this process without Kafka, Redis or the network
(:func:`floor_run`), the most any tuning of the consumer's I/O could reach.

Lag: the real collector in front of Kafka, an app instrumented with the ragtrace SDK sending
traces at a fixed rate, and the lag of each trace measured from its root span's end to the arrival
of its evaluation span at the trace backend (through the collector again). The app exports every
100 ms (``OTEL_BSP_SCHEDULE_DELAY``) and the collector batches for up to 200 ms each way.

Run: ``python bench/bench_consumer.py [--quick] [--profile auto|yes|no]`` (needs ``make
provision``); writes the ``consumer`` section of docs/benchmarks.md. When yappi is importable
(``pip install yappi``; not a project dependency) one more instant-judge run goes under yappi
(all threads, CPU clock) and the section gets a table of where the consumer's CPU goes.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._report import machine_line, write_section
from bench._traces import TraceShape, export_request
from ragtrace import semconv as sc
from ragtrace.evaluation.judges import ClaimVerdict, GroundednessResult, JudgeInfo
from ragtrace_consumers.intake.decode import decode_request
from ragtrace_consumers.scoring.workers import DEFAULT_DEPTH, UNBUDGETED_CAPACITY
from scripts.services import (
    OtlpSink,
    create_topic,
    start_collector,
    start_kafka,
    start_redis,
)
from tests.fakes.anthropic_server import FakeAnthropic, entail_all

RAGTRACE = str(Path(sys.executable).with_name("ragtrace"))
TOPIC = "bench_spans"
SAMPLED_TOPIC = "bench_spans_sampled"
SAMPLED_SCALE = 5  # the sampled runs read 5 x N traces: long enough to time at their rate
SPANS_PER_TRACE = 3
LABELLED_EVERY = 100  # 1 % of the traffic names a labelled question
LABELS = 10
SAMPLED_RATE = 0.1
PARTITIONS = 6


BENCH_TRACE = TraceShape(pipeline="bench", labelled_every=LABELLED_EVERY, labels=LABELS)


def trace_message(n: int) -> tuple[bytes, bytes]:
    """(key, value) of trace ``n``'s Kafka message, as the collector writes it: one trace per
    message, keyed by its trace ID in hex."""
    request, (trace_id,) = export_request("bench-app", (n,), BENCH_TRACE)
    return trace_id.hex().encode(), request.SerializeToString()


def write_messages(bootstrap: str, topic: str, messages: Iterable[tuple[bytes, bytes]]) -> None:
    """Write (key, value) messages to ``topic``, every one acknowledged by the broker."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=256 * 1024
    )
    for key, value in messages:
        producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()


def fill_topic(bootstrap: str, topic: str, n: int, judge_rate: float) -> int:
    """Write ``n`` trace messages to ``topic``; returns how many of them sampling at decode
    keeps at ``judge_rate`` (recall rate 1)."""
    from ragtrace_consumers.intake.admission import EarlySampler
    from ragtrace_consumers.scoring.sampling import SamplerConfig

    early = EarlySampler(SamplerConfig(judge_rate=judge_rate))
    kept = 0

    def messages() -> Iterator[tuple[bytes, bytes]]:
        nonlocal kept
        for i in range(n):
            key, value = trace_message(i)
            kept += bool(decode_request(value, early))
            yield key, value

    write_messages(bootstrap, topic, messages())
    return kept


def load_labels(redis_url: str, prefix: str) -> None:
    """The bench's labelled questions, on one server or a cluster (found by ``connect``)."""
    from ragtrace.evaluation.labels import LabelledQuestion
    from ragtrace_consumers.stores.redis import connect
    from ragtrace_consumers.stores.redis_state import RedisLabelStore

    client = connect(redis_url)
    RedisLabelStore(client, prefix=prefix).load(
        [
            LabelledQuestion(f"q-{q}", f"Labelled question {q}?", frozenset({f"kb-{q}-0"}))
            for q in range(LABELS)
        ]
    )
    client.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plain_loop(bootstrap: str, n: int, topic: str = TOPIC) -> tuple[float, int]:
    """Seconds to read and decode ``n`` messages of ``topic`` from the start; spans decoded."""
    from kafka import KafkaConsumer, TopicPartition

    # A fetch the broker holds open on a drained partition (up to fetch.max.wait, 500 ms by
    # default) blocks the next fetch for the others: near the end of the topic it can stall this
    # sub-second loop for half its time and flatter every ratio. 10 ms keeps the baseline at
    # its best.
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        max_poll_records=500,
        fetch_max_wait_ms=10,
    )
    tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
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


class InstantJudge:
    """An in-process judge that answers at once: one claim (the answer), entailed, quoting the
    first context document. Measures the pipeline around the judge, not a judge."""

    def __init__(self) -> None:
        self._info = JudgeInfo("instant", "instant-fake", "0" * 64)

    @property
    def info(self) -> JudgeInfo:
        return self._info

    def groundedness(self, answer: str, context: Any) -> GroundednessResult:
        quote = context[0][:40] if context else None
        return GroundednessResult.from_claims(
            (ClaimVerdict(answer, True, quote, quote is not None),), self._info
        )


class _EncodeOnly:
    """A write-back exporter that builds the OTLP request and sends it nowhere."""

    def __init__(self, resource: Any) -> None:
        self._resource = resource
        self.requests = 0

    def export(self, spans: Any) -> bool:
        from ragtrace_consumers.writeback.otlp_encoding import export_request

        export_request(spans, self._resource)
        self.requests += 1
        return True

    def shutdown(self) -> None:
        pass


def floor_run(messages: list[bytes], judge_rate: float = 1.0) -> tuple[float, float]:
    """CPU seconds per message, in this process, of decoding only (the plain loop's work without
    the Kafka fetch) and of decoding and scoring the traces as the consumer does at
    ``judge_rate`` (sampling at decode included), minus every dependency: in-memory stores
    instead of Redis, the instant judge, the write-back request encoded but not sent, no
    Kafka. Best of six and of three, interleaved."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource

    from ragtrace.evaluation.labels import LabelledQuestion
    from ragtrace_consumers.config import load_config
    from ragtrace_consumers.runtime.wiring import Stores, build_scoring
    from ragtrace_consumers.stores.memory import (
        MemoryIdempotencyStore,
        MemoryJudgeBudget,
        MemoryJudgeResultCache,
        MemoryLabelStore,
        MemoryTraceStore,
    )
    from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink

    def decode_only() -> float:
        start = time.process_time()
        for value in messages:
            decode_request(value)
        return time.process_time() - start

    def scored() -> float:
        cfg = load_config(None, env={"RAGTRACE_SAMPLING_JUDGE_RATE": str(judge_rate)})
        labels = [
            LabelledQuestion(f"q-{q}", f"Labelled question {q}?", frozenset({f"kb-{q}-0"}))
            for q in range(LABELS)
        ]
        stores = Stores(
            traces=MemoryTraceStore(),
            labels=MemoryLabelStore(labels),
            cache=MemoryJudgeResultCache(),
            idempotency=MemoryIdempotencyStore(),
            budget=MemoryJudgeBudget(10**9, 10**12),
        )
        resource = Resource.create({"service.name": "ragtrace-consumer"})

        def sink(thresholds: Any) -> OtlpScoreSink:
            return OtlpScoreSink(
                _EncodeOnly(resource),
                resource,
                recall_threshold=thresholds.recall,
                groundedness_threshold=thresholds.groundedness,
            )

        scoring = build_scoring(
            cfg, stores, sink, InstantJudge(), cfg.mapping.readers(), meter_provider=MeterProvider()
        )
        pipeline, admission = scoring.pipeline, scoring.admission
        try:
            start = time.process_time()
            for at in range(0, len(messages), 500):
                spans = [
                    s for value in messages[at : at + 500] for s in decode_request(value, admission)
                ]
                pipeline.ingest(spans)
                while pipeline.process_due():
                    pass
            took = time.process_time() - start
        finally:
            scoring.workers.shutdown()
            scoring.sink.shutdown()
        released = stores.traces.stats()["released"]  # type: ignore[attr-defined]
        assert released == admission.kept and admission.kept + admission.dropped == len(messages)
        return took

    n = len(messages)
    decode, score = float("inf"), float("inf")
    for _ in range(3):  # interleaved, so one stall of the shared machine cannot favour either
        decode = min(decode, decode_only(), decode_only())
        score = min(score, scored())
    return decode / n, score / n


def consume_main(profile: str | None) -> int:
    """``ragtrace consume`` as the CLI runs it (configuration from the environment, SIGTERM
    drains and stops), with :class:`InstantJudge` in place of the configured judge."""
    import threading

    from ragtrace_consumers.config import load_config
    from ragtrace_consumers.runtime.kafka_service import build_service

    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    yappi: Any = None
    if profile:
        yappi = importlib.import_module("yappi")  # a profiling tool, not a dependency
        yappi.set_clock_type("cpu")
        yappi.start()
    service = build_service(load_config(None), judge=InstantJudge())
    try:
        service.run(stop)
    finally:
        if yappi is not None and profile:
            yappi.stop()
            yappi.get_func_stats().save(profile, type="pstat")
            with open(profile + ".threads.txt", "w") as out:
                yappi.get_thread_stats().print_all(out=out)
    return 0


def consumer_env(
    bootstrap: str,
    redis_url: str,
    otlp: str,
    judge_url: str,
    topic: str,
    quiet_s: str = "5",
    judge_rate: float = 1.0,
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
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
        }
    )
    return env


def start_consumer(
    env: dict[str, str], log: Path, *, instant: bool = False, profile: str | None = None
) -> subprocess.Popen[bytes]:
    """``ragtrace consume`` (the HTTP-fake judge), or with ``instant`` the same service with
    :class:`InstantJudge`."""
    cmd = [RAGTRACE, "consume", "--log-level", "WARNING"]
    if instant:
        cmd = [sys.executable, str(Path(__file__)), "--consume-instant"]
        if profile:
            cmd += ["--profile-consumer", profile]
    with log.open("ab") as err:
        return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=err, stderr=subprocess.STDOUT)


def scored_count(client: Any, prefix: str) -> int:
    """Traces finished (scored or skipped) by the consumer: the store's ``released`` counter."""
    return int(client.hget(f"{prefix}:stats", "released") or 0)


def consumer_run(
    bootstrap: str,
    redis_url: str,
    sink: OtlpSink,
    judge: FakeAnthropic,
    n: int,
    work: Path,
    judge_rate: float,
    *,
    instant: bool = False,
    profile: str | None = None,
    kept: int | None = None,
    replicas: int = 1,
    topic: str = TOPIC,
) -> tuple[float, float]:
    """(seconds, CPU seconds) the consumer takes for n offered traces, extrapolated from its
    rate between its first finished trace and its last (process start and group join
    excluded). ``kept``: how many traces reach the store (the rest are dropped at decode and
    never released); the run ends when the last of them is released (only the few dropped
    messages after it are left). ``replicas`` processes share the group and the store (CPU
    seconds summed over them). ``topic`` holds the n traces."""
    import redis

    sink.clear()
    env = consumer_env(
        bootstrap, redis_url, sink.endpoint, judge.base_url, topic, judge_rate=judge_rate
    )
    prefix = env["RAGTRACE_REDIS_KEY_PREFIX"]
    load_labels(redis_url, prefix)
    expect = n if kept is None else kept
    client = redis.Redis.from_url(redis_url)
    log = work / f"consumer-{uuid.uuid4().hex[:6]}.log"
    procs = [start_consumer(env, log, instant=instant, profile=profile) for _ in range(replicas)]

    def check() -> None:
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError(f"consumer failed:\n{log.read_text()[-3000:]}")

    def cpu() -> float:
        return sum(cpu_seconds(p.pid) for p in procs)

    try:
        deadline = time.monotonic() + 600
        while scored_count(client, prefix) == 0:
            check()
            time.sleep(0.002)
        start, cpu0 = time.perf_counter(), cpu()
        first = scored_count(client, prefix)
        while scored_count(client, prefix) < expect:
            check()
            time.sleep(0.002)
        took, used = time.perf_counter() - start, cpu() - cpu0
        scale = expect / max(1, expect - first)
        return took * scale, used * scale
    finally:
        stop_consumers(procs)
        client.close()


def stop_consumers(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every consumer process (each drains and leaves the group), then wait for all."""
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(120)


# -- lag -----------------------------------------------------------------------------------------
def lag_run(
    work: Path, bootstrap: str, redis_url: str, judge: FakeAnthropic, rate: float, seconds: float
) -> list[float]:
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
    env = consumer_env(
        bootstrap,
        redis_url,
        collector.endpoints.eval_otlp_http,
        judge.base_url,
        "lag_spans",
        quiet_s="1",
    )
    proc = start_consumer(env, work / "lag-consumer.log")
    app_env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTRACE_", "OTEL_"))}
    app_env.update({"PYTHONPATH": str(ROOT), "OTEL_BSP_SCHEDULE_DELAY": "100"})
    try:
        time.sleep(8)  # consumer joined the group (auto_offset_reset=earliest covers the rest)
        out = subprocess.run(
            [
                sys.executable,
                str(Path(__file__)),
                "--app",
                collector.endpoints.app_otlp_http,
                str(rate),
                str(seconds),
            ],
            env=app_env,
            capture_output=True,
            check=True,
            timeout=seconds + 120,
        )
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


# (label, yappi function names whose cumulative CPU time the row sums); shares are of the
# consumer's thread roots together.
_ROOTS = (
    "KafkaRunner.run",
    "ScoringWorkers._finish_loop",
    "_Delivery._run",
    "_worker",  # the judge threads' pool (idle with the instant judge: it is called inline)
    "NetworkSelector.run_forever",
)
_BREAKDOWN = (
    (
        "Kafka: poll and fetch (main thread and kafka-python's IO thread)",
        ("KafkaConsumer.poll", "NetworkSelector.run_forever"),
    ),
    ("decode messages, store spans in Redis", ("KafkaIntake.decode", "Ingest.submit")),
    ("prepare: load, recognise, sample, labels, judge-cache lookup, budget", ("Pipeline.prepare",)),
    ("… of which recognising the RAG view of a trace (`to_rag_trace`)", ("to_rag_trace",)),
    ("judge stage: the instant judge and its metrics", ("ScoringWorkers._judge",)),
    ("finish: evaluation spans, marks, release, per-trace metrics", ("Pipeline.finish",)),
    ("write-back thread: OTLP protobuf encoding and the HTTP request", ("_Delivery._run",)),
    (
        "… across all the rows above: recording OpenTelemetry metric points",
        ("_Counter.add", "_Histogram.record"),
    ),
)


def cpu_breakdown(path: str) -> list[tuple[str, float]]:
    """Share of the consumer's CPU per row of :data:`_BREAKDOWN`, from a yappi pstat file."""
    import pstats

    cumulative: dict[str, float] = {}
    for (_, _, name), (_, _, _, ct, _) in pstats.Stats(path).stats.items():  # type: ignore[attr-defined]
        cumulative[name] = cumulative.get(name, 0.0) + ct
    total = sum(cumulative.get(name, 0.0) for name in _ROOTS)
    return [
        (label, sum(cumulative.get(n, 0.0) for n in names) / total) for label, names in _BREAKDOWN
    ]


ALL_RUNS = ("floor", "instant", "replicas", "http", "sampled", "sampled_replicas", "lag")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--traces", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--runs",
        default=",".join(ALL_RUNS),
        help=f"comma-separated subset of {','.join(ALL_RUNS)} (the plain "
        "loop always runs); the docs are written only when all run",
    )
    parser.add_argument(
        "--profile",
        choices=("auto", "yes", "no"),
        default="auto",
        help="add a CPU breakdown of the instant-judge consumer (needs yappi; "
        "auto: when yappi is importable)",
    )
    parser.add_argument("--profile-consumer", metavar="FILE", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--consume-instant", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--app", nargs=3, default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


def require_crc32c() -> None:
    """The plain loop and the consumer both use kafka-python's C CRC32C: refuse to run without."""
    from kafka.record import util as kafka_util

    if kafka_util.crc32c_c is None:
        raise SystemExit(
            "the crc32c package is missing: install the consumer extra "
            "(pip install ./consumers (the ragtrace-consumers distribution))"
        )


@dataclass(frozen=True)
class Services:
    """The running services one benchmark run shares, and where the consumers log."""

    bootstrap: str
    redis_url: str
    sink: OtlpSink
    judge: FakeAnthropic
    work: Path

    def consumer(self, n: int, judge_rate: float = 1.0, **options: Any) -> tuple[float, float]:
        """:func:`consumer_run` on these services."""
        return consumer_run(
            self.bootstrap,
            self.redis_url,
            self.sink,
            self.judge,
            n,
            self.work,
            judge_rate,
            **options,
        )


def plain_round(r: dict[str, Any], bootstrap: str, sampled: bool) -> None:
    """One round of the plain loop on each topic. It takes well under a second: best of three
    per round, so one stall of the shared machine does not make the consumer look good."""
    for key, topic, count in (
        ("plain", TOPIC, r["n"]),
        ("plain_sampled", SAMPLED_TOPIC, r["n_sampled"] if sampled else 0),
    ):
        if not count:
            continue
        took = float("inf")
        for _ in range(3):
            t, spans = plain_loop(bootstrap, count, topic)
            assert spans == count * SPANS_PER_TRACE, spans
            took = min(took, t)
        r.setdefault(key, []).append((took, float("nan")))


def consumer_round(r: dict[str, Any], services: Services, runs: set[str]) -> None:
    """One round of each instant-judge consumer run asked for."""
    n, n_sampled = r["n"], r["n_sampled"]
    if "instant" in runs:
        r.setdefault("instant", []).append(services.consumer(n, instant=True))
    if "replicas" in runs:
        r.setdefault("replicas", []).append(services.consumer(n, instant=True, replicas=2))
    for key, replicas in (("sampled", 1), ("sampled_replicas", 2)):
        if key in runs:
            run = services.consumer(
                n_sampled,
                SAMPLED_RATE,
                instant=True,
                kept=r["kept"],
                replicas=replicas,
                topic=SAMPLED_TOPIC,
            )
            r.setdefault(key, []).append(run)


def service_runs(r: dict[str, Any], runs: set[str], profile: bool) -> None:
    """Start Kafka, Redis, the write-back sink and the fake judge; fill the topics; run the
    rounds (plain loop and consumer interleaved, so each ratio is within one round), then the
    profiled run, the HTTP-judge run and the lag run asked for."""
    n, sampled = r["n"], bool({"sampled", "sampled_replicas"} & runs)
    with tempfile.TemporaryDirectory(prefix="ragtrace-bench-") as tmp:
        work = Path(tmp)
        redis = start_redis(work / "redis")
        kafka = start_kafka(work / "kafka")
        sink = OtlpSink().start()
        try:
            create_topic(kafka.bootstrap, TOPIC, PARTITIONS)
            fill_topic(kafka.bootstrap, TOPIC, n, SAMPLED_RATE)
            if sampled:
                create_topic(kafka.bootstrap, SAMPLED_TOPIC, PARTITIONS)
                r["kept"] = fill_topic(kafka.bootstrap, SAMPLED_TOPIC, r["n_sampled"], SAMPLED_RATE)
            with FakeAnthropic(entail_all) as judge:
                services = Services(kafka.bootstrap, redis.url, sink, judge, work)
                for _ in range(r["rounds"]):
                    plain_round(r, kafka.bootstrap, sampled)
                    consumer_round(r, services, runs)
                if profile:
                    stats = os.environ.get("RAGTRACE_BENCH_PSTAT") or str(work / "consumer.pstat")
                    services.consumer(n, instant=True, profile=stats)
                    r["breakdown"] = cpu_breakdown(stats)
                if "http" in runs:
                    before = len(judge.requests)
                    r["http"] = [services.consumer(n)]
                    r["judge_calls"] = len(judge.requests) - before
                if "lag" in runs:
                    r["lags"] = lag_run(
                        work, kafka.bootstrap, redis.url, judge, r["rate"], r["seconds"]
                    )
        finally:
            sink.stop()
            kafka.stop()
            redis.stop()


def print_results(r: dict[str, Any]) -> None:
    """Every measured figure, one line each."""
    keys = ("plain", "plain_sampled", "instant", "replicas", "sampled", "sampled_replicas", "http")
    for key in keys:
        count = _count(r, key)
        for took, cpu in r.get(key, ()):
            print(
                f"{key}: {count * SPANS_PER_TRACE / took:,.0f} spans/s ({count / took:,.0f} "
                f"traces/s), CPU {cpu / count * 1000:.2f} ms per offered trace"
            )
    for key in ("instant", "replicas", "sampled", "sampled_replicas"):
        if key in r:
            print(f"{key} / plain per round: " + ", ".join(f"{x:.3f}" for x in _ratios(r, key)))
    if "lags" in r:
        print(f"lag p50 {_pct(r['lags'], 50):.3f} s, p95 {_pct(r['lags'], 95):.3f} s")
    for label, share in r.get("breakdown", ()):
        print(f"{share:6.1%}  {label}")
    for key in ("floor", "floor_sampled"):
        if key in r:
            decode, scored = r[key]
            print(
                f"{key}: decode {decode * 1e6:.1f} µs, scored {scored * 1e6:.1f} µs per trace, "
                f"ratio {decode / scored:.3f}"
            )


def main() -> int:
    args = parse_args()
    if args.app:
        app_main(args.app[0], float(args.app[1]), float(args.app[2]))
        return 0
    if args.consume_instant:
        return consume_main(args.profile_consumer)
    runs = set(args.runs.split(","))
    profile = args.profile == "yes" or (
        args.profile == "auto" and importlib.util.find_spec("yappi") is not None
    )
    require_crc32c()
    n = args.traces or (600 if args.quick else 3000)
    rate, seconds = (10.0, 10.0) if args.quick else (20.0, 30.0)
    r: dict[str, Any] = {
        "n": n,
        "n_sampled": n * SAMPLED_SCALE,
        "rate": rate,
        "seconds": seconds,
        "rounds": args.rounds,
    }
    if "floor" in runs:  # in this process alone, before any service starts
        messages = [trace_message(i)[1] for i in range(n)]
        r["floor"] = floor_run(messages)
        r["floor_sampled"] = floor_run(messages, SAMPLED_RATE)
    service_runs(r, runs, profile)
    print_results(r)
    if runs >= set(ALL_RUNS):
        md = render(r)
        print(md)
        write_section("consumer", md)
    return 0


_SAMPLED_KEYS = frozenset({"sampled", "sampled_replicas", "plain_sampled"})


def _count(r: dict[str, Any], key: str) -> int:
    """Traces offered in one run of ``key``: the sampled runs read the larger topic."""
    return int(r["n_sampled"] if key in _SAMPLED_KEYS else r["n"])


def _ratios(r: dict[str, Any], key: str) -> list[float]:
    """Per round, the run's rate over the plain loop's on the same topic."""
    base = "plain_sampled" if key in _SAMPLED_KEYS else "plain"
    count, base_count = _count(r, key), _count(r, base)
    return [
        float((count / c[0]) / (base_count / p[0])) for p, c in zip(r[base], r[key], strict=False)
    ]


def render(r: dict[str, Any]) -> str:
    """The docs section from one run's results."""
    n, lags, rounds = r["n"], r["lags"], r["rounds"]

    def ratios(key: str) -> list[float]:
        return _ratios(r, key)

    def spans_per_s(key: str) -> float:
        count = _count(r, key)
        return float(statistics.median(count * SPANS_PER_TRACE / took for took, _ in r[key]))

    def cpu_ms(key: str) -> float:
        return float(statistics.median(cpu for _, cpu in r[key])) / float(_count(r, key)) * 1000

    def ratio(key: str) -> float:
        return float(statistics.median(ratios(key)))

    plain = spans_per_s("plain")
    (decode_s, floor_s), (_, floor_sampled_s) = r["floor"], r["floor_sampled"]
    floor_ratio, floor_sampled_ratio = decode_s / floor_s, decode_s / floor_sampled_s
    http = spans_per_s("http")
    inst, samp = ratio("instant"), ratio("sampled")
    best = max(inst, ratio("replicas"))
    best_sampled = max(samp, ratio("sampled_replicas"))
    plain_rates = [n / took for took, _ in r["plain"]]
    n_sampled = r["n_sampled"]
    plain_sampled = spans_per_s("plain_sampled") / SPANS_PER_TRACE
    per_round = "; ".join(
        f"{', '.join(f'{x:.2f}' for x in ratios(key))} ({label})"
        for key, label in (
            ("instant", "every trace"),
            ("replicas", "two replicas"),
            ("sampled", "10 %"),
            ("sampled_replicas", "10 %, two replicas"),
        )
    )
    spread = (
        f"per-round ratios {per_round}; the plain loop itself "
        f"ran at {min(plain_rates):,.0f}–{max(plain_rates):,.0f} traces/s across the rounds on "
        f"the {n:,}-trace topic"
    )
    verdict = (
        f"Goals: every trace judged ≥ 0.20 — **{best:.2f}** at best "
        f"({'met' if best >= 0.2 else 'not met'}); 10 % judged with 1 % labelled ≥ 0.6 — "
        f"**{best_sampled:.2f}** at best ({'met' if best_sampled >= 0.6 else 'not met'}). "
        f"Noise: {spread}."
    )
    breakdown = ""
    if r.get("breakdown"):
        rows = "\n".join(f"| {label} | {share:.0%} |" for label, share in r["breakdown"])
        breakdown = f"""
Where the instant-judge consumer's CPU goes (one more run of it under yappi, all threads, CPU
clock; shares of the consumer's total, rows nest where marked):

| step | share of CPU |
|---|---:|
{rows}
"""
    verdict = textwrap.fill(verdict, 96)
    return f"""## Consumer (`bench/bench_consumer.py`)

{machine_line()}; Kafka 4.1 (one broker), Redis, all on the
same machine (2 cores, shared with other work while this ran); one consumer process unless
marked, write-back to a local OTLP/HTTP receiver. The instant judge has no time budget (like the
lexical judge), so up to {UNBUDGETED_CAPACITY} traces are in flight and each is judged on the
thread that prepared it; the Anthropic judge runs on 8 judge threads, {8 * DEFAULT_DEPTH} traces
in flight. Run: `python bench/bench_consumer.py` (needs `make provision`).

Throughput over {n:,} traces ({n * SPANS_PER_TRACE:,} spans, one message per trace, 1 % naming a
labelled question), {rounds} interleaved rounds of plain loop (best of three reads per round)
and consumer runs (medians; each consumer run timed from its first finished trace to its last).
The 10 % judged rows read a topic of {n_sampled:,} such traces, long enough to time at their
rate, and are compared with the plain loop on that topic ({plain_sampled:,.0f} traces/s).
The plain loop uses kafka-python's C CRC32C (`crc32c`, in the consumer extra), as the consumer
does, and a 10 ms `fetch_max_wait_ms` (with the default 500 ms a fetch held open on a drained
partition stalled some runs' loop at the end of the topic, halving its rate and doubling every
ratio):

| reader | spans/s | traces/s | / plain loop | CPU per offered trace |
|---|---:|---:|---:|---:|
| plain kafka-python loop with `crc32c`: read + decode only | {plain:,.0f} | {plain / 3:,.0f} | 1 | |
| **consumer, instant judge, every trace judged**: decode, store in Redis, assemble, sample, score, write back over OTLP, commit | {spans_per_s("instant"):,.0f} | {spans_per_s("instant") / 3:,.0f} | **{inst:.2f}** | {cpu_ms("instant"):.2f} ms |
| same, **two replicas** (two processes in one group, sharing Redis; {PARTITIONS} partitions split evenly) | {spans_per_s("replicas"):,.0f} | {spans_per_s("replicas") / 3:,.0f} | {ratio("replicas"):.2f} | {cpu_ms("replicas"):.2f} ms |
| **same, 10 % judged** (`sampling.judge_rate: 0.1`; {r["kept"]:,} of {n_sampled:,} traces kept at decode) | {spans_per_s("sampled"):,.0f} | {spans_per_s("sampled") / 3:,.0f} | **{samp:.2f}** | {cpu_ms("sampled"):.2f} ms |
| same, 10 % judged, two replicas | {spans_per_s("sampled_replicas"):,.0f} | {spans_per_s("sampled_replicas") / 3:,.0f} | {ratio("sampled_replicas"):.2f} | {cpu_ms("sampled_replicas"):.2f} ms |
| `ragtrace consume`, Anthropic judge against the fake API over HTTP ({r["judge_calls"]:,} calls through the real client) | {http:,.0f} | {http / 3:,.0f} | {http / plain:.2f} | {cpu_ms("http"):.2f} ms |

{verdict}

**What one process can reach at all.** The same {n:,} messages decoded and scored in one thread of
this process with every dependency taken away — in-memory stores instead of Redis, the instant
judge, the write-back request encoded but not sent, no Kafka — cost {floor_s * 1e6:.0f} µs of CPU
per trace, against {decode_s * 1e6:.1f} µs to decode one (best of interleaved runs):

| in one thread, no Kafka, Redis or network | CPU per offered trace | decode-only ÷ this |
|---|---:|---:|
| decode only (the plain loop's work without the fetch) | {decode_s * 1e6:.1f} µs | 1 |
| decode and score every trace | {floor_s * 1e6:.0f} µs | **{floor_ratio:.2f}** |
| decode, sample at 10 % at decode, score the kept | {floor_sampled_s * 1e6:.1f} µs | **{floor_sampled_ratio:.2f}** |

So no tuning of the consumer's Kafka, Redis or write-back I/O can lift one process above
{floor_ratio:.2f} of the plain loop with every trace judged, or above {floor_sampled_ratio:.2f} at
10 % judged: the scoring itself (reading the spans' dialects, sampling, retrieval metrics, the
judge's bookkeeping and its metric points, the evaluation spans and their encoding) costs more
than the goals allow. The 0.20 goal needs that work spread over more cores than this machine has
(replicas scale it; they share only Redis), or a scoring path several times cheaper than this
Python one.

The consumer's own CPU per trace is {cpu_ms("instant") / (floor_s * 1000):.1f}× the floor's with
every trace judged and {cpu_ms("sampled") / (floor_sampled_s * 1000):.1f}× at 10 % judged: the
Redis round trips (store, claim, load, marks, release, each one script or pipeline per batch of
up to 64 traces), the spans' JSON in Redis, the Kafka fetch and the HTTP write-back. While due traces
wait, the runner claims them back to back (a claim that found some is followed by a poll that
does not wait), so the scoring thread, not the poll timeout, sets the pace. With 10 % judged, the
90 % dropped at decode cost their Kafka fetch, protobuf parse and the sampling decision (their
attributes read for a question ID or a labelled query's digest); CPU per offered trace is
{cpu_ms("sampled") / cpu_ms("instant"):.2f} of the every-trace figure.
The HTTP row adds the real Anthropic client's CPU per call (request building, response parsing
and validation); against the real API a judge call takes seconds, so `judge.concurrency` (calls
in flight), not CPU, bounds the judged rate.
{breakdown}
End-to-end lag at a fixed offered load of {r["rate"]:g} traces/s for {r["seconds"]:g} s (app →
collector → Kafka → `ragtrace consume` with the HTTP-fake judge → collector → trace backend; app
exports every 100 ms, collector batches up to 200 ms each way, the completion rule scores a trace
as soon as its root span arrives with its generation), from a trace's root span end to its evaluation span's arrival,
over {len(lags)} traces: **p50 {_pct(lags, 50):.2f} s, p95 {_pct(lags, 95):.2f} s** (max
{max(lags):.2f} s, mean {statistics.mean(lags):.2f} s; goal p95 ≤ 1 s).
"""


if __name__ == "__main__":
    sys.exit(main())
