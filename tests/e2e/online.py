"""The online pipeline, end to end, as fixtures and helpers.

``online_run`` (session): labels (with reference answers) loaded with ``ragtrace labels load``, ``ragtrace consume`` running
as a subprocess against the fake Anthropic API, the instrumented app (tests/e2e/online_app.py)
sending its spans through the real collector into Kafka, one malformed Kafka message, and every
evaluation span and metric arrived at the trace backend and in Prometheus; then the consumer is
stopped with SIGTERM (the collector keeps exposing its last metric values). Other e2e tests (the
dashboards' PromQL) use it for a Prometheus that holds real consumer metrics.

Helpers start and stop consumer processes, run the app, and read Kafka, for the crash-recovery
and SIGTERM tests.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ragtrace import semconv
from scripts.services import CollectorEndpoints, OtlpSink, ReceivedSpan
from scripts.services.prometheus import wait_for_series
from tests.e2e import online_app
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    Reply,
    claims_reply,
    parse_user_message,
    tool_reply,
)

__all__ = [
    "ASSIGNED",
    "DLQ_TOPIC",
    "JUDGE_ALIAS",
    "JUDGE_MODEL",
    "ConsumerProcess",
    "OnlineRun",
    "app_requests",
    "committed_offsets",
    "end_offsets",
    "evaluation_spans",
    "group_at_end",
    "online_run",
    "produce_raw",
    "run_app",
    "start_app",
    "start_consumer",
    "verbatim_responder",
]

ROOT = Path(__file__).resolve().parents[2]
# This checkout's packages (both) win over an installed copy in the subprocesses.
PYTHONPATH = os.pathsep.join([str(ROOT), str(ROOT / "consumers")])
DLQ_TOPIC = "otlp_spans.dlq"
RAGTRACE = str(Path(sys.executable).with_name("ragtrace"))  # the installed console script
JUDGE_ALIAS = "claude-haiku-4-5"
JUDGE_MODEL = "claude-haiku-4-5-20251001"  # what the fake API reports for the alias
ASSIGNED = r"assigned partitions: [\w.-]+\[\d+\]"
"""The consumer log line saying it owns partitions (``none`` does not count)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _tagged(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return found.group(1) if found else ""


def _answer_metric_reply(name: str, text: str) -> Reply:
    """Answer relevancy: addressed when the answer shares a word with the question. Answer
    correctness: an answer sentence is supported when it is verbatim in the reference, a
    reference sentence covered when it is verbatim in the answer."""
    question, answer = _tagged(text, "question"), _tagged(text, "answer")
    if name == "record_relevancy":
        shared = set(re.findall(r"\w+", question.lower())) & set(re.findall(r"\w+", answer.lower()))
        need = {"need": question, "addressed": bool(shared), "reason": ""}
        return tool_reply({"needs": [need]}, tool_name=name)
    reference = _tagged(text, "reference")
    claims = [
        {"claim": c, "verdict": "supported" if c in reference else "not_in_reference"}
        for c in _SENTENCE.split(answer.strip())
        if c
    ]
    facts = [{"fact": f, "covered": f in answer} for f in _SENTENCE.split(reference.strip()) if f]
    return tool_reply({"claims": claims, "reference_facts": facts}, tool_name=name)


def verbatim_responder(delay_s: float = 0.0) -> Callable[[Mapping[str, Any]], Reply]:
    """The judge's scripted replies: one claim per answer sentence, entailed (quoting itself)
    exactly when the sentence appears verbatim in a context document (answer metrics:
    :func:`_answer_metric_reply`)."""

    def respond(request: Mapping[str, Any]) -> Reply:
        if delay_s:
            time.sleep(delay_s)
        content = request["messages"][0]["content"]
        text = (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content if isinstance(b, dict))
        )
        tool = str(request.get("tool_choice", {}).get("name", "record_claims"))
        if tool in ("record_relevancy", "record_correctness"):
            return _answer_metric_reply(tool, text)
        docs, answer, _ = parse_user_message(text)
        claims = [s for s in _SENTENCE.split((answer or "").strip()) if s]
        return claims_reply(
            [(c, True, c) if any(c in d for d in docs) else (c, False, None) for c in claims]
        )

    return respond


@dataclass
class ConsumerProcess:
    """A ``ragtrace consume`` subprocess with its stderr in ``log``."""

    proc: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str] = field(repr=False)

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for_log(self, pattern: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text()):
            if self.proc.poll() is not None:
                raise AssertionError(f"consumer exited ({self.proc.returncode}):\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"consumer log never matched {pattern!r}:\n{self.tail()}")
            time.sleep(0.1)

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-n:])

    def terminate(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def consumer_env(
    *,
    collector: CollectorEndpoints,
    redis_url: str,
    prefix: str,
    group: str,
    judge_url: str,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    env.update(
        {
            "PYTHONPATH": PYTHONPATH,
            "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS": collector.kafka_bootstrap,
            "RAGTRACE_KAFKA_TOPIC": collector.topic,
            "RAGTRACE_KAFKA_GROUP_ID": group,
            "RAGTRACE_KAFKA_DLQ_TOPIC": DLQ_TOPIC,
            "RAGTRACE_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "RAGTRACE_KAFKA_COMMIT_INTERVAL_S": "0.5",
            "RAGTRACE_REDIS_URL": redis_url,
            "RAGTRACE_REDIS_KEY_PREFIX": prefix,
            "RAGTRACE_EXPORT_OTLP_ENDPOINT": collector.eval_otlp_http,
            "RAGTRACE_EXPORT_METRICS_INTERVAL_S": "1",
            "RAGTRACE_ASSEMBLY_QUIET_S": "1",
            "RAGTRACE_JUDGE_NAME": "anthropic",
            "RAGTRACE_JUDGE_MODEL": JUDGE_ALIAS,
            "RAGTRACE_JUDGE_CONCURRENCY": "4",
            # No e-mail address in the app's texts: the redaction series is exported at 0.
            "RAGTRACE_REDACTION_PATTERNS": "email",
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": judge_url,
        }
    )
    env.update(extra or {})
    return env


def start_consumer(env: Mapping[str, str], log: Path) -> ConsumerProcess:
    """``ragtrace consume`` (the installed console script) as a subprocess."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [RAGTRACE, "consume", "--log-level", "INFO"],
            env=dict(env),
            cwd=ROOT,
            stdout=err,
            stderr=subprocess.STDOUT,
        )
    return ConsumerProcess(proc, log, dict(env))


def start_app(
    endpoint: str, *, repeat: int = 1, only: Sequence[str] | None = None, unique: bool = False
) -> subprocess.Popen[bytes]:
    """Start the instrumented app (tests/e2e/online_app.py); see :func:`app_requests`."""
    cmd = [
        sys.executable,
        "-m",
        "tests.e2e.online_app",
        "--endpoint",
        endpoint,
        "--repeat",
        str(repeat),
    ]
    if only:
        cmd += ["--only", ",".join(only)]
    if unique:
        cmd.append("--unique")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTRACE_", "OTEL_"))}
    env["PYTHONPATH"] = PYTHONPATH
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def app_requests(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> list[dict[str, str]]:
    """Wait for the app; its requests (key, trace_id, root_span_id), in order."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err.decode(errors="replace")
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


def run_app(
    endpoint: str,
    *,
    repeat: int = 1,
    only: Sequence[str] | None = None,
    unique: bool = False,
    timeout: float = 120.0,
) -> list[dict[str, str]]:
    """Run the instrumented app once; its requests (key, trace_id, root_span_id)."""
    return app_requests(start_app(endpoint, repeat=repeat, only=only, unique=unique), timeout)


def load_labels(redis_url: str, prefix: str, path: Path) -> str:
    """``ragtrace labels load PATH`` against the session Redis; returns its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    env.update(
        {
            "PYTHONPATH": PYTHONPATH,
            "RAGTRACE_REDIS_URL": redis_url,
            "RAGTRACE_REDIS_KEY_PREFIX": prefix,
        }
    )
    out = subprocess.run(
        [RAGTRACE, "labels", "load", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return out.stdout.decode()


def _partitions(bootstrap: str, topic: str) -> list[Any]:
    from kafka import KafkaConsumer, TopicPartition

    probe = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return [TopicPartition(topic, p) for p in sorted(probe.partitions_for_topic(topic) or ())]
    finally:
        probe.close()


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = _partitions(bootstrap, topic)
        return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def group_at_end(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """Commit the topic's current end offsets for ``group``, so its consumers read only what
    is produced from now on (never other tests' spans, and no gap before they join)."""
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata

    tps = _partitions(bootstrap, topic)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        ends = consumer.end_offsets(tps)
        consumer.commit({tp: OffsetAndMetadata(off, "", -1) for tp, off in ends.items()})
        return {tp.partition: off for tp, off in ends.items()}
    finally:
        consumer.close(autocommit=False)


def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int | None]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {tp.partition: consumer.committed(tp) for tp in _partitions(bootstrap, topic)}
    finally:
        consumer.close(autocommit=False)


def produce_raw(bootstrap: str, topic: str, key: bytes, value: bytes) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        producer.send(topic, key=key, value=value).get(timeout=30)
    finally:
        producer.close()


def read_topic(
    bootstrap: str, topic: str, until: Callable[[list[Any]], bool], timeout: float = 30.0
) -> list[Any]:
    """Every record of ``topic`` from the beginning, read until ``until(records)``."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = _partitions(bootstrap, topic)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records: list[Any] = []
        deadline = time.monotonic() + timeout
        while not until(records):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{topic}: condition not met after {timeout} s ({len(records)} records)"
                )
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def evaluation_spans(backend: OtlpSink, trace_ids: set[str]) -> list[ReceivedSpan]:
    """The summary evaluation spans (flat ``ragtrace.eval.*`` attributes) of ``trace_ids``."""
    return backend.spans(
        lambda s: (
            s.scope == semconv.EVALUATION_SCOPE
            and s.name == semconv.SPAN_EVALUATION
            and s.trace_id in trace_ids
        )
    )


def metric_spans(backend: OtlpSink, trace_ids: set[str]) -> list[ReceivedSpan]:
    """The per-family evaluation spans (their ``gen_ai.evaluation.result`` events), each under
    the span it evaluates."""
    return backend.spans(
        lambda s: (
            s.scope == semconv.EVALUATION_SCOPE
            and s.name != semconv.SPAN_EVALUATION
            and s.trace_id in trace_ids
        )
    )


@dataclass(frozen=True)
class OnlineRun:
    """What ``online_run`` leaves behind for assertions (and for the dashboards' PromQL)."""

    prometheus_url: str
    trace_backend: OtlpSink
    collector: CollectorEndpoints
    redis_url: str
    kafka_bootstrap: str
    key_prefix: str
    group: str
    requests: tuple[dict[str, str], ...]
    judge: FakeAnthropic
    consumer: ConsumerProcess
    labels_output: str
    malformed_key: bytes
    consumer_exit_code: int

    @property
    def instance(self) -> str:
        """The consumer's Prometheus ``instance`` label (its ``service.instance.id``)."""
        return f"{socket.gethostname()}-{self.consumer.proc.pid}"

    def trace_ids(self, key: str | None = None) -> set[str]:
        return {r["trace_id"] for r in self.requests if key is None or r["key"] == key}


# Metric series every dashboard can count on once the run is over (Prometheus names).
READY_QUERIES = (
    'sum(ragtrace_traces_scored_total{job="ragtrace-consumer"}) >= 5',
    'ragtrace_dlq_messages_total{reason="protobuf_parse_error"} >= 1',
    "ragtrace_groundedness_bucket",
    "ragtrace_recall_bucket",
)


def _reference(qid: str) -> dict[str, str]:
    ref = online_app.REFERENCE_ANSWERS.get(qid)
    return {} if ref is None else {"reference_answer": ref}


def _wait_scored(
    backend: OtlpSink, requests: Sequence[Mapping[str, str]], timeout: float = 90.0
) -> None:
    ids = {r["trace_id"] for r in requests}
    backend.wait_for_spans(
        lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids,
        count=len(ids),
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def online_run(
    tmp_path_factory: pytest.TempPathFactory,
    redis_url: str,
    kafka_bootstrap: str,
    kafka_topic: Callable[..., str],
    collector: CollectorEndpoints,
    trace_backend: OtlpSink,
    prometheus_url: str,
) -> Iterator[OnlineRun]:
    """The whole online pipeline, run once per session; see the module docstring."""
    work = tmp_path_factory.mktemp("online")
    kafka_topic(DLQ_TOPIC, 1)
    prefix = f"online-{uuid.uuid4().hex[:8]}"
    group = f"ragtrace-online-{uuid.uuid4().hex[:8]}"
    labels = work / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({**q, **_reference(str(q["qid"]))}) + "\n" for q in online_app.LABELS)
    )
    labels_output = load_labels(redis_url, prefix, labels)
    group_at_end(kafka_bootstrap, collector.topic, group)
    with FakeAnthropic(verbatim_responder()) as judge:
        consumer = start_consumer(
            consumer_env(
                collector=collector,
                redis_url=redis_url,
                prefix=prefix,
                group=group,
                judge_url=judge.base_url,
            ),
            work / "consumer.log",
        )
        try:
            consumer.wait_for_log(ASSIGNED)
            # "rate" repeats the answer and context of "sso": sent once "sso" is scored, its
            # judgement must come from the cache.
            first = [q.key for q in online_app.QUESTIONS if q.key != "rate"]
            requests = run_app(collector.app_otlp_http, only=first)
            malformed_key = b"not-a-trace"
            produce_raw(kafka_bootstrap, collector.topic, malformed_key, b"\x00\xffnot otlp")
            _wait_scored(trace_backend, requests)
            requests += run_app(collector.app_otlp_http, only=["rate"])
            _wait_scored(trace_backend, requests)
            for promql in READY_QUERIES:
                wait_for_series(prometheus_url, promql, timeout=60)
            # Stop it (as a deployment would: SIGTERM) so no later test's spans reach it; the
            # collector keeps exposing its last metric values to Prometheus.
            exit_code = consumer.terminate()
        except BaseException:
            sys.stderr.write(f"--- consumer log ---\n{consumer.tail(80)}\n")
            raise
        finally:
            consumer.kill()
    yield OnlineRun(
        prometheus_url,
        trace_backend,
        collector,
        redis_url,
        kafka_bootstrap,
        prefix,
        group,
        tuple(requests),
        judge,
        consumer,
        labels_output,
        malformed_key,
        exit_code,
    )
