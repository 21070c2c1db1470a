"""The whole ragtrace service stack on fixed local ports, for trying the production setup by hand.

    scripts/dev-stack.sh up       # Redis, Kafka (+ topic), trace sink, collector, Prometheus
    scripts/dev-stack.sh status   # what runs, where, and its log
    scripts/dev-stack.sh env      # shell exports pointing an app and `ragtrace consume` at it
    scripts/dev-stack.sh down     # stop everything (data is kept; `clean` deletes it)

Every service is started by the same code as the end-to-end test fixtures (``scripts.services``),
on loopback only, with its data and log under ``$RAGTRACE_CACHE/dev-stack/<service>/``. The
default ports are the ones the consumer's and the SDK's defaults expect; a port already in use
stops ``up`` with a message naming it. Set RAGTRACE_TRACE_BACKEND_ENDPOINT to send spans to a
real backend (Jaeger, Tempo, Phoenix…) instead of the printing sink.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `scripts` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.services import (
    ServiceError,
    ServiceProcess,
    create_topic,
    paths,
    start_collector,
    start_kafka,
    start_prometheus,
    start_redis,
)
from scripts.services.process import group_alive, http_ok, stop_group, tcp_open

PORTS = {
    "redis": 6379,
    "kafka": 9092,
    "kafka_controller": 9093,
    "trace_sink": 14318,
    "app_grpc": 4317,
    "app_http": 4318,
    "eval_grpc": 4327,
    "eval_http": 4328,
    "prometheus_exporter": 9464,
    "collector_telemetry": 8888,
    "collector_health": 13133,
    "prometheus": 9090,
}
TOPIC = "otlp_spans"
TOPIC_PARTITIONS = 3


def state_dir() -> Path:
    return Path(os.environ.get("RAGTRACE_DEV_STACK_DIR") or paths.cache_dir() / "dev-stack")


def _state_file() -> Path:
    return state_dir() / "stack.json"


def _load() -> dict[str, dict[str, object]]:
    try:
        return dict(json.loads(_state_file().read_text()))
    except (OSError, ValueError):
        return {}


def _alive(pgid: object) -> bool:
    return isinstance(pgid, int) and group_alive(pgid)


def _record(
    state: dict[str, dict[str, object]], name: str, proc: ServiceProcess, **info: object
) -> None:
    state[name] = {"pgid": proc.pid, "log": str(proc.log_path), **info}
    _state_file().write_text(json.dumps(state, indent=2))


def up() -> int:
    ServiceProcess.die_with_parent = False  # the stack outlives this command
    state = _load()
    if state and all(_alive(s["pgid"]) for s in state.values()):
        print("dev stack already running")
        return status()
    if state:
        down()
    busy = [f"{name} ({port})" for name, port in PORTS.items() if tcp_open("127.0.0.1", port)]
    if busy:
        print("dev stack: ports already in use: " + ", ".join(busy), file=sys.stderr)
        return 1
    base = state_dir()
    base.mkdir(parents=True, exist_ok=True)
    state = {}
    try:
        redis = start_redis(base / "redis", port=PORTS["redis"])
        _record(state, "redis", redis.process, url=redis.url)
        kafka = start_kafka(
            base / "kafka", port=PORTS["kafka"], controller_port=PORTS["kafka_controller"]
        )
        _record(state, "kafka", kafka.process, bootstrap=kafka.bootstrap)
        create_topic(kafka.bootstrap, TOPIC, TOPIC_PARTITIONS)
        backend = os.environ.get("RAGTRACE_TRACE_BACKEND_ENDPOINT")
        if not backend:
            sink = ServiceProcess(
                "trace-sink",
                [
                    sys.executable,
                    "-c",
                    "from scripts.services.otlp_sink import main; main()",
                    "--port",
                    str(PORTS["trace_sink"]),
                ],
                base / "trace-sink",
                env={**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)},
            ).start()
            sink.wait_ready(lambda: tcp_open("127.0.0.1", PORTS["trace_sink"]), 15, "its port")
            backend = f"http://127.0.0.1:{PORTS['trace_sink']}"
            _record(state, "trace-sink", sink, endpoint=backend)
        collector = start_collector(
            base / "collector",
            kafka.bootstrap,
            backend,
            topic=TOPIC,
            ports={
                "app_http": PORTS["app_http"],
                "app_grpc": PORTS["app_grpc"],
                "eval_http": PORTS["eval_http"],
                "eval_grpc": PORTS["eval_grpc"],
                "prometheus": PORTS["prometheus_exporter"],
                "telemetry": PORTS["collector_telemetry"],
                "health": PORTS["collector_health"],
            },
        )
        e = collector.endpoints
        _record(
            state,
            "collector",
            collector.process,
            app_otlp_http=e.app_otlp_http,
            app_otlp_grpc=e.app_otlp_grpc,
            eval_otlp_http=e.eval_otlp_http,
            prometheus_exporter=e.prometheus_metrics_url,
            topic=e.topic,
            trace_backend=backend,
        )
        prometheus = start_prometheus(
            base / "prometheus",
            [e.prometheus_exporter],
            [e.telemetry_metrics],
            port=PORTS["prometheus"],
        )
        _record(state, "prometheus", prometheus.process, url=prometheus.url)
    except (ServiceError, paths.NotProvisioned, TimeoutError) as exc:
        print(f"dev stack: {exc}", file=sys.stderr)
        down()
        return 1
    return status()


def down() -> int:
    state = _load()
    for name in reversed(list(state)):
        stopped = stop_group(int(state[name]["pgid"]))  # type: ignore[call-overload]
        print(f"{name:12} {'stopped' if stopped else 'was not running'}")
    _state_file().unlink(missing_ok=True)
    return 0


def status() -> int:
    state = _load()
    if not state:
        print("dev stack is not running (scripts/dev-stack.sh up)")
        return 1
    healthy = True
    for name, info in state.items():
        alive = _alive(info["pgid"])
        healthy &= alive
        details = "  ".join(f"{k}={v}" for k, v in info.items() if k not in ("pgid", "log"))
        print(f"{name:12} {'up  ' if alive else 'DOWN'} {details}\n{'':17}log={info['log']}")
    collector = state.get("collector", {})
    if collector and not http_ok(f"http://127.0.0.1:{PORTS['collector_health']}/"):
        print("collector health check is not answering yet")
    return 0 if healthy else 1


def env() -> int:
    """Shell exports: the SDK (app), `ragtrace consume` and the tools find the stack with them."""
    exports = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{PORTS['app_http']}",
        "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{PORTS['kafka']}",
        "RAGTRACE_KAFKA_TOPIC": TOPIC,
        "RAGTRACE_REDIS_URL": f"redis://127.0.0.1:{PORTS['redis']}/0",
        "RAGTRACE_EXPORT_OTLP_ENDPOINT": f"http://127.0.0.1:{PORTS['eval_http']}",
        "RAGTRACE_PROMETHEUS_URL": f"http://127.0.0.1:{PORTS['prometheus']}",
    }
    for key, value in exports.items():
        print(f"export {key}={value}")
    return 0


def clean() -> int:
    down()
    shutil.rmtree(state_dir(), ignore_errors=True)
    print(f"removed {state_dir()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dev-stack", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["up", "down", "status", "env", "clean"])
    args = parser.parse_args(argv)
    return {"up": up, "down": down, "status": status, "env": env, "clean": clean}[args.command]()


if __name__ == "__main__":
    sys.exit(main())
