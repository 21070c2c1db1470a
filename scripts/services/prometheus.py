"""A private Prometheus server scraping the collector and the consumers, and PromQL helpers.

Debian's Prometheus (2.42) has no OTLP ingestion, so it scrapes the collector's ``prometheus``
exporter (``honor_labels: true``: the exporter's ``job``/``instance`` labels, taken from the
senders' ``service.name``/``service.instance.id``, are kept), the collector's own metrics, and
each consumer's own ``/metrics`` directly (job ``ragtrace-consumers``, as the Helm chart's
PodMonitor does): consumers come and go during a run, so their targets are a file Prometheus
watches (``file_sd``), rewritten by :meth:`PrometheusServer.set_consumer_targets`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import paths
from .process import ServiceProcess, free_port, http_ok

__all__ = [
    "CONSUMERS_JOB",
    "PromQLError",
    "PrometheusServer",
    "query",
    "start_prometheus",
    "wait_for_series",
]

CONSUMERS_JOB = "ragtrace-consumers"
"""Scrape job of the consumers' own /metrics endpoints (targets from a watched file)."""
_CONSUMER_TARGETS = "consumer-targets.json"


class PromQLError(RuntimeError):
    """Prometheus rejected a query (the message carries its error)."""


def _config(scrape_targets: Sequence[str], telemetry_targets: Sequence[str], interval: str) -> str:
    def targets(ts: Sequence[str]) -> str:
        return json.dumps(list(ts))

    return f"""\
global:
  scrape_interval: {interval}
  evaluation_interval: {interval}
scrape_configs:
  - job_name: ragtrace
    honor_labels: true
    static_configs:
      - targets: {targets(scrape_targets)}
  - job_name: otelcol
    static_configs:
      - targets: {targets(telemetry_targets)}
  - job_name: {CONSUMERS_JOB}
    file_sd_configs:
      - files: [{_CONSUMER_TARGETS}]
        refresh_interval: 1s
"""


def query(url: str, promql: str, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Run a PromQL instant query against the server at ``url``; return its result list
    (for a vector: ``[{"metric": {...labels}, "value": [ts, "value"]}, ...]``)."""
    qs = urllib.parse.urlencode({"query": promql})
    req = urllib.request.Request(f"{url}/api/v1/query?{qs}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = json.load(resp)
    except urllib.error.HTTPError as exc:  # 400/422 carry Prometheus' own error
        body = json.load(exc)
    if body.get("status") != "success":
        raise PromQLError(f"{promql!r}: {body.get('errorType')}: {body.get('error')}")
    result = body["data"]["result"]
    return list(result) if isinstance(result, list) else [result]


def wait_for_series(
    url: str, promql: str, timeout: float = 30.0, min_series: int = 1
) -> list[dict[str, Any]]:
    """Poll ``promql`` until it returns at least ``min_series`` series; return them.

    A query error is raised at once (it will not fix itself); a timeout names the query."""
    deadline = time.monotonic() + timeout
    while True:
        result = query(url, promql)
        if len(result) >= min_series:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"PromQL {promql!r} returned {len(result)} series (wanted >= {min_series}) "
                f"after {timeout} s"
            )
        time.sleep(0.25)


@dataclass
class PrometheusServer:
    """A running Prometheus; ``url`` is its HTTP API base."""

    port: int
    workdir: Path
    process: ServiceProcess

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, promql: str) -> list[dict[str, Any]]:
        return query(self.url, promql)

    def wait_for_series(
        self, promql: str, timeout: float = 30.0, min_series: int = 1
    ) -> list[dict[str, Any]]:
        return wait_for_series(self.url, promql, timeout, min_series)

    def set_consumer_targets(self, targets: Sequence[str]) -> None:
        """Scrape exactly these ``host:port`` consumer health servers (``/metrics``) from now
        on; a target left out is dropped and its series go stale, as when a pod goes away."""
        _write_targets(self.workdir, targets)

    def stop(self) -> None:
        self.process.stop()


def _write_targets(workdir: Path, targets: Sequence[str]) -> None:
    tmp = workdir / f".{_CONSUMER_TARGETS}.tmp"
    tmp.write_text(json.dumps([{"targets": list(targets)}] if targets else []))
    tmp.replace(workdir / _CONSUMER_TARGETS)  # atomic: Prometheus never reads half a file


def start_prometheus(
    workdir: Path,
    scrape_targets: Sequence[str],
    telemetry_targets: Sequence[str] = (),
    port: int | None = None,
    scrape_interval: str = "1s",
    timeout: float = 30.0,
) -> PrometheusServer:
    """Start Prometheus scraping ``scrape_targets`` (host:port of the collector's exporter)
    every ``scrape_interval``; return once ``/-/ready`` answers 200."""
    binary = paths.prometheus()
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(_config(scrape_targets, telemetry_targets, scrape_interval))
    _write_targets(workdir, ())
    argv = [
        str(binary),
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=1d",
    ]
    proc = ServiceProcess("prometheus", argv, workdir, stop_grace_s=10.0).start()
    url = f"http://127.0.0.1:{port}"
    proc.wait_ready(lambda: http_ok(f"{url}/-/ready"), timeout, f"{url}/-/ready")
    return PrometheusServer(port, workdir, proc)
