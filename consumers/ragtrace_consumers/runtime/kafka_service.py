"""Wire one ``ragtrace consume`` replica from its :class:`ConsumerConfig`: Redis stores behind
retries, the judge, the OTLP sink and the metrics' meter provider, handed to the one wiring root
(:func:`~ragtrace_consumers.runtime.wiring.build_scoring`), then the Kafka client and its runner.

:func:`build_service` is what the CLI, the end-to-end tests and the benchmark call; anything
passed explicitly (a judge, a meter reader) replaces what the configuration would build.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import Judge
from ragtrace_consumers.config import ConsumerConfig, redact_url
from ragtrace_consumers.model import ScoreSink
from ragtrace_consumers.runtime.kafka import KafkaRunner
from ragtrace_consumers.runtime.retry import (
    Dependencies,
    Retrier,
    Retrying,
    WatchedSink,
    kafka_transient_errors,
    redis_transient_errors,
)
from ragtrace_consumers.runtime.startup import wait_for
from ragtrace_consumers.runtime.wiring import Stores, build_scoring
from ragtrace_consumers.scoring.judging import judge_from_settings
from ragtrace_consumers.scoring.pipeline import Pipeline
from ragtrace_consumers.scoring.workers import ScoringWorkers, check_lease, judgement_bound_s
from ragtrace_consumers.telemetry.health import HealthServer, Heartbeat, KafkaProgress, redis_check
from ragtrace_consumers.telemetry.prometheus import prometheus_exposition
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink, make_meter_provider, make_resource
from ragtrace_consumers.writeback.refused_signals import RefusedSignals

__all__ = ["ConsumerService", "build_judge", "build_service", "consume_refusals", "consume_sink"]

_log = logging.getLogger(__name__)


def consume_refusals(endpoint: str) -> RefusedSignals:
    """The signals ``endpoint`` (``export.otlp_endpoint``) refuses, each warning naming the
    ``consume`` setting that stops sending it."""
    return RefusedSignals(
        endpoint,
        {
            "logs": "export.results_as: spans sends evaluation spans only",
            "metrics": "export.metrics_otlp: false pushes none",
        },
    )


def consume_sink(
    cfg: ConsumerConfig, resource: Resource, thresholds: Thresholds, refusals: RefusedSignals
) -> OtlpScoreSink:
    """Where ``consume`` writes results: ``export.otlp_endpoint`` over OTLP/HTTP, as
    ``export.results_as`` says, a signal it refuses turned off (``refusals``)."""
    return OtlpScoreSink.to_collector(
        cfg.export.otlp_endpoint,
        resource,
        timeout_s=cfg.export.timeout_s,
        recall_threshold=thresholds.recall,
        groundedness_threshold=thresholds.groundedness,
        results_as=cfg.export.results_as,
        refusals=refusals,
    )


def build_judge(cfg: ConsumerConfig) -> Judge:
    """The configured judge (the ``judge`` section: :func:`judge_from_settings`)."""
    return judge_from_settings(cfg.judge)


@dataclass
class ConsumerService:
    """A built replica; :meth:`run` blocks until ``stop`` is set, then shuts everything down."""

    config: ConsumerConfig
    runner: KafkaRunner
    pipeline: Pipeline
    workers: ScoringWorkers
    sink: ScoreSink
    meter_provider: MeterProvider
    redis_client: Any
    health: HealthServer | None = None
    """The /livez and /readyz endpoints (``health.enabled``); served while :meth:`run` runs."""
    halt: threading.Event | None = None
    """Set once ``stop`` is: retries of a dependency's calls give up (see ``retry``)."""

    def run(self, stop: threading.Event) -> None:
        halt = self.halt
        if halt is not None:  # a SIGTERM during an outage still ends the retries

            def relay() -> None:
                stop.wait()
                halt.set()

            threading.Thread(target=relay, daemon=True, name="ragtrace-halt").start()
        if self.health is not None:
            self.health.draining = stop.is_set  # after SIGTERM: live, not ready
            self.health.start()
        try:
            self.runner.run(stop)
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        self.runner.close()
        if self.pipeline.judge_batch is not None:
            self.pipeline.judge_batch.stop()
        self.sink.shutdown()
        self.meter_provider.shutdown()  # exports the last metric values
        try:
            self.redis_client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            _log.debug("closing the Redis client failed", exc_info=True)
        if self.health is not None:
            self.health.stop()


def build_service(
    cfg: ConsumerConfig, *, judge: Judge | None = None, metric_readers: Sequence[MetricReader] = ()
) -> ConsumerService:
    """Connect to Redis and Kafka and build every step; nothing is consumed until ``run``."""
    from kafka import KafkaConsumer, KafkaProducer

    from ragtrace_consumers.stores import redis as rs
    from ragtrace_consumers.stores.redis_state import (
        RedisIdempotencyStore,
        RedisJudgeBudget,
        RedisJudgeResultCache,
        RedisLabelStore,
    )

    kafka_security = cfg.kafka.client_options()  # checks the TLS files before connecting
    judge = judge or build_judge(cfg)
    if cfg.judge.mode != "batch":  # batch mode never blocks a worker on the judge
        check_lease(cfg.assembly.lease_s, judgement_bound_s(judge))  # fails before connecting
    wait_s = cfg.health.startup_wait_s
    password = cfg.redis.password
    # Connecting asks the server whether it is a cluster node (one round trip), so it waits too.
    client = wait_for(
        "Redis",
        redact_url(cfg.redis.url),
        lambda: (
            rs.connect(cfg.redis.url)
            if password is None
            else rs.connect(cfg.redis.url, password.get_secret_value())
        ),
        wait_s,
    )
    wait_for("Redis", redact_url(cfg.redis.url), client.ping, wait_s)
    k = cfg.kafka
    client_id = f"{k.client_id}-{os.getpid()}"
    # Each connection attempt gives up within the start-up wait (kafka-python >= 3 waits 30 s).
    if "bootstrap_timeout_ms" in getattr(KafkaConsumer, "DEFAULT_CONFIG", {}):
        kafka_security = {
            **kafka_security,
            "bootstrap_timeout_ms": int(min(10.0, max(1.0, wait_s)) * 1000),
        }
    consumer = wait_for(
        "Kafka",
        k.bootstrap_servers,
        lambda: KafkaConsumer(
            bootstrap_servers=k.bootstrap_servers.split(","),
            group_id=k.group_id,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset=k.auto_offset_reset,
            max_poll_records=k.max_poll_records,
            session_timeout_ms=k.session_timeout_ms,
            heartbeat_interval_ms=max(100, min(3000, k.session_timeout_ms // 3)),
            **kafka_security,
        ),
        wait_s,
    )
    producer = wait_for(
        "Kafka",
        k.bootstrap_servers,
        lambda: KafkaProducer(
            bootstrap_servers=k.bootstrap_servers.split(","),
            client_id=f"{client_id}-dlq",
            acks="all",
            **kafka_security,
        ),
        wait_s,
    )
    heartbeat = Heartbeat()
    halt = threading.Event()
    dependencies = Dependencies()

    def retrier(name: str, transient: tuple[type[BaseException], ...]) -> Retrier:
        # Waiting beats the liveness heartbeat: an outage is reported by /readyz, it is not a
        # stuck loop.
        return Retrier(
            name, transient, dependencies=dependencies, stop=halt, on_wait=heartbeat.beat
        )

    # Every store call is retried while Redis is unavailable (retry.py).
    redis_retry = retrier("redis", redis_transient_errors())
    prefix = cfg.redis.key_prefix
    traces = Retrying(
        rs.RedisTraceStore(
            client, prefix=prefix, ttl_s=cfg.assembly.ttl_s, max_attempts=cfg.assembly.max_attempts
        ),
        redis_retry,
    )
    labels = Retrying(RedisLabelStore(client, prefix=prefix), redis_retry)
    cache = Retrying(
        RedisJudgeResultCache(client, prefix=prefix, ttl_s=cfg.judge.cache_ttl_s), redis_retry
    )
    idempotency = Retrying(
        RedisIdempotencyStore(
            client,
            prefix=prefix,
            ttl_s=cfg.export.written_ttl_s,
            capacity=cfg.export.written_capacity,
        ),
        redis_retry,
    )
    budget = Retrying(
        RedisJudgeBudget(
            client, cfg.judge.calls_per_minute, cfg.judge.tokens_per_minute, prefix=prefix
        ),
        redis_retry,
    )

    resource = make_resource(cfg.export.service_name)
    refusals = consume_refusals(cfg.export.otlp_endpoint)
    exposition = prometheus_exposition() if cfg.health.enabled else None
    readers = [*metric_readers, *([exposition.reader] if exposition else [])]
    meter_provider = make_meter_provider(
        resource,
        endpoint=cfg.export.otlp_endpoint if cfg.export.metrics_otlp else None,
        interval_s=cfg.export.metrics_interval_s,
        timeout_s=cfg.export.timeout_s,
        readers=readers,
        refusals=refusals,
    )

    def sink(thresholds: Thresholds) -> WatchedSink:
        return WatchedSink(consume_sink(cfg, resource, thresholds, refusals), dependencies)

    from ragtrace_consumers.stores.redis_state import RedisBatchStore, RedisSessionEvidence

    sessions = Retrying(
        RedisSessionEvidence(
            client,
            prefix=prefix,
            max_turns=max(1, cfg.scoring.session_turns),
            ttl_s=cfg.scoring.session_max_age_s,
        ),
        redis_retry,
    )
    scoring = build_scoring(
        cfg,
        Stores(
            traces=traces,
            labels=labels,
            cache=cache,
            idempotency=idempotency,
            budget=budget,
            sessions=sessions,
        ),
        sink,
        judge,
        cfg.mapping.readers(),
        meter_provider=meter_provider,
        batch_store=RedisBatchStore(client, prefix=prefix) if cfg.judge.mode == "batch" else None,
    )
    metrics, pipeline, workers = scoring.metrics, scoring.pipeline, scoring.workers
    for name in ("redis", "kafka", WatchedSink.name):
        metrics.dependency_known(name)
    dependencies.on_error = metrics.dependency_error

    consumer = KafkaProgress(consumer, heartbeat)  # each poll beats the liveness heartbeat
    kafka_retry = retrier("kafka", kafka_transient_errors())
    runner = KafkaRunner(
        consumer,
        producer,
        pipeline,
        workers,
        metrics,
        dlq_topic=k.dlq_topic,
        commit_interval_s=k.commit_interval_s,
        drain_timeout_s=k.drain_timeout_s,
        max_poll_records=k.max_poll_records,
        kafka_retry=kafka_retry,
        dependencies=dependencies,
        admission=scoring.admission,
    )
    # Subscribes, then loads the topic's partition metadata before the first join (a join made
    # without it is followed by a re-join that kafka-python can leave hanging; see
    # runtime.kafka.membership).
    runner.subscribe(k.topic)
    _log.info(
        "ragtrace consume: topic %s, group %s, judge %s (%s), %d workers, scores to %s",
        k.topic,
        k.group_id,
        judge.info.name,
        judge.info.model or "no model",
        cfg.judge.concurrency,
        cfg.export.otlp_endpoint,
    )
    health = None
    if cfg.health.enabled:  # bound last: nothing after it can fail and leave the port taken
        health = HealthServer(
            cfg.health.host,
            cfg.health.port,
            heartbeat=heartbeat,
            liveness_timeout_s=cfg.health.liveness_timeout_s,
            readiness={
                "redis": redis_check(client),
                "kafka": consumer.check,
                "dependencies": dependencies.check_all,
            },
            metrics=exposition.render if exposition else None,
        )
    return ConsumerService(
        cfg, runner, pipeline, workers, scoring.sink, meter_provider, client, health, halt
    )
