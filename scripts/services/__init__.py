"""Run the project's real services (Redis, a Redis Cluster, Redis with Sentinel, Kafka, the collector, Prometheus, an OTLP sink).

Shared by the end-to-end test fixtures (``tests/e2e/conftest.py``) and the dev stack
(``scripts/dev_stack.py``), so both start every service the same way. Binaries come from
``scripts/provision.sh``; a missing one raises :class:`NotProvisioned` ("run `make provision`").
"""

from __future__ import annotations

from .collector import Collector, CollectorEndpoints, start_collector, validate_config
from .kafka import KafkaBroker, create_topic, start_kafka
from .otlp_sink import OtlpSink, ReceivedSpan, spans_of_request
from .paths import NotProvisioned
from .process import ServiceError, ServiceProcess, free_port
from .prometheus import PrometheusServer, PromQLError, query, start_prometheus, wait_for_series
from .redis import RedisServer, start_redis
from .redis_cluster import RedisClusterNodes, start_redis_cluster
from .redis_sentinel import RedisSentinelSetup, start_redis_sentinel

__all__ = [
    "Collector",
    "CollectorEndpoints",
    "KafkaBroker",
    "NotProvisioned",
    "OtlpSink",
    "PromQLError",
    "PrometheusServer",
    "ReceivedSpan",
    "RedisClusterNodes",
    "RedisSentinelSetup",
    "RedisServer",
    "ServiceError",
    "ServiceProcess",
    "create_topic",
    "free_port",
    "query",
    "spans_of_request",
    "start_collector",
    "start_kafka",
    "start_prometheus",
    "start_redis",
    "start_redis_cluster",
    "start_redis_sentinel",
    "validate_config",
    "wait_for_series",
]
