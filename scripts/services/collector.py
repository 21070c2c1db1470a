"""The built collector running the REAL ``collector/config.yaml``, pointed at local services.

Nothing here rewrites the configuration: every address is passed through the environment
variables the deployed file reads (``${env:VAR:-default}``), so the tests exercise exactly what
users deploy. Readiness is the ``health_check`` extension answering 200.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .process import ServiceError, ServiceProcess, free_port, http_ok

__all__ = [
    "Collector",
    "CollectorEndpoints",
    "collector_env",
    "start_collector",
    "start_trace_only_collector",
    "validate_config",
]


@dataclass(frozen=True)
class CollectorEndpoints:
    """Where a running collector listens (all on 127.0.0.1).

    ``app_otlp_http`` and ``eval_otlp_http`` are OTLP/HTTP base URLs (what
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes; the SDK appends ``/v1/traces``); the ``*_url``
    properties are the full per-signal URLs an exporter's ``endpoint=`` argument takes.
    """

    app_otlp_http: str
    app_otlp_grpc: str
    eval_otlp_http: str
    eval_otlp_grpc: str
    prometheus_exporter: str  # host:port; scrape http://<it>/metrics
    telemetry_metrics: str  # host:port of the collector's own metrics (otelcol_*)
    health: str  # health_check URL
    topic: str  # Kafka topic of application spans
    kafka_bootstrap: str
    trace_backend: str  # otlphttp exporter endpoint the spans are sent to

    @property
    def app_traces_url(self) -> str:
        return f"{self.app_otlp_http}/v1/traces"

    @property
    def eval_traces_url(self) -> str:
        return f"{self.eval_otlp_http}/v1/traces"

    @property
    def eval_metrics_url(self) -> str:
        return f"{self.eval_otlp_http}/v1/metrics"

    @property
    def app_metrics_url(self) -> str:
        return f"{self.app_otlp_http}/v1/metrics"

    @property
    def prometheus_metrics_url(self) -> str:
        return f"http://{self.prometheus_exporter}/metrics"


@dataclass
class Collector:
    endpoints: CollectorEndpoints
    process: ServiceProcess

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        """SIGKILL: no shutdown at all (what it acknowledged must be in its queue on disk)."""
        self.process.kill()

    def restart(self, down_s: float = 0.0) -> Collector:
        """Stop (SIGTERM), stay down ``down_s`` s, start again with the same ports,
        configuration and queue directory (what was queued is sent by the new process)."""
        import time

        e = self.endpoints
        ports = {
            name: int(addr.rsplit(":", 1)[1].rstrip("/"))
            for name, addr in (
                ("app_http", e.app_otlp_http),
                ("app_grpc", e.app_otlp_grpc),
                ("eval_http", e.eval_otlp_http),
                ("eval_grpc", e.eval_otlp_grpc),
                ("prometheus", e.prometheus_exporter),
                ("telemetry", e.telemetry_metrics),
                ("health", e.health),
            )
        }
        self.stop()
        time.sleep(down_s)
        return start_collector(
            self.process.workdir, e.kafka_bootstrap, e.trace_backend, e.topic, ports
        )


def collector_env(
    kafka_bootstrap: str,
    trace_backend: str,
    topic: str = "otlp_spans",
    ports: dict[str, int] | None = None,
) -> tuple[dict[str, str], CollectorEndpoints]:
    """The environment that points ``collector/config.yaml`` at local services, and the
    resulting endpoints. ``ports`` may fix any of: app_http, app_grpc, eval_http, eval_grpc,
    prometheus, telemetry, health (free ports otherwise)."""
    wanted = dict(ports or {})
    p = {
        name: wanted.get(name) or free_port()
        for name in (
            "app_http",
            "app_grpc",
            "eval_http",
            "eval_grpc",
            "prometheus",
            "telemetry",
            "health",
        )
    }
    host = "127.0.0.1"
    env = {
        "RAGTRACE_APP_OTLP_HTTP_ENDPOINT": f"{host}:{p['app_http']}",
        "RAGTRACE_APP_OTLP_GRPC_ENDPOINT": f"{host}:{p['app_grpc']}",
        "RAGTRACE_EVAL_OTLP_HTTP_ENDPOINT": f"{host}:{p['eval_http']}",
        "RAGTRACE_EVAL_OTLP_GRPC_ENDPOINT": f"{host}:{p['eval_grpc']}",
        "RAGTRACE_PROMETHEUS_EXPORTER_ENDPOINT": f"{host}:{p['prometheus']}",
        "RAGTRACE_COLLECTOR_METRICS_HOST": host,
        "RAGTRACE_COLLECTOR_METRICS_PORT": str(p["telemetry"]),
        "RAGTRACE_HEALTH_ENDPOINT": f"{host}:{p['health']}",
        "RAGTRACE_TRACE_BACKEND_ENDPOINT": trace_backend,
        "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "RAGTRACE_KAFKA_TOPIC": topic,
    }
    endpoints = CollectorEndpoints(
        app_otlp_http=f"http://{host}:{p['app_http']}",
        app_otlp_grpc=f"{host}:{p['app_grpc']}",
        eval_otlp_http=f"http://{host}:{p['eval_http']}",
        eval_otlp_grpc=f"{host}:{p['eval_grpc']}",
        prometheus_exporter=f"{host}:{p['prometheus']}",
        telemetry_metrics=f"{host}:{p['telemetry']}",
        health=f"http://{host}:{p['health']}/",
        topic=topic,
        kafka_bootstrap=kafka_bootstrap,
        trace_backend=trace_backend,
    )
    return env, endpoints


def validate_config(config: Path = paths.COLLECTOR_CONFIG) -> None:
    """``otelcol-ragtrace validate``: raise ServiceError with the collector's words if invalid."""
    result = subprocess.run(
        [str(paths.otelcol()), "validate", f"--config={config}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        raise ServiceError(f"{config} is invalid:\n{result.stdout}{result.stderr}")


def start_collector(
    workdir: Path,
    kafka_bootstrap: str,
    trace_backend: str,
    topic: str = "otlp_spans",
    ports: dict[str, int] | None = None,
    config: Path = paths.COLLECTOR_CONFIG,
    timeout: float = 30.0,
) -> Collector:
    """Run the collector with ``config`` and return once its health check answers 200. Its
    persistent sending queues live in ``workdir/queue``, so a restart in the same ``workdir``
    (:meth:`Collector.restart`) resumes what the last run had accepted and not yet delivered."""
    binary = paths.otelcol()
    env, endpoints = collector_env(kafka_bootstrap, trace_backend, topic, ports)
    env["RAGTRACE_COLLECTOR_QUEUE_DIR"] = str(workdir / "queue")
    proc = ServiceProcess(
        "collector",
        [binary, f"--config={config}"],
        workdir,
        env={**os.environ, **env},
        stop_grace_s=10.0,
    ).start()
    proc.wait_ready(lambda: http_ok(endpoints.health), timeout, f"health check {endpoints.health}")
    return Collector(endpoints, proc)


def start_trace_only_collector(
    workdir: Path, trace_backend: str, config: Path, timeout: float = 30.0
) -> tuple[ServiceProcess, str]:
    """Run the collector with ``config``, a trace-only configuration (one OTLP/HTTP receiver,
    a traces pipeline to ``trace_backend``) that reads the receiver, health and backend
    addresses :func:`collector_env` names; returns the process and the receiver's OTLP/HTTP
    base URL once its health check answers 200."""
    host = "127.0.0.1"
    receiver, health = f"{host}:{free_port()}", f"http://{host}:{free_port()}/"
    env = {
        "RAGTRACE_APP_OTLP_HTTP_ENDPOINT": receiver,
        "RAGTRACE_HEALTH_ENDPOINT": health.removeprefix("http://").rstrip("/"),
        "RAGTRACE_TRACE_BACKEND_ENDPOINT": trace_backend,
    }
    proc = ServiceProcess(
        "collector-trace-only",
        [paths.otelcol(), f"--config={config}"],
        workdir,
        env={**os.environ, **env},
        stop_grace_s=10.0,
    ).start()
    proc.wait_ready(lambda: http_ok(health), timeout, f"health check {health}")
    return proc, f"http://{receiver}"
