"""Where ``scripts/provision.sh`` put each service, found by the same conventions it uses.

Every download or build lives under the cache directory (``$RAGTRACE_CACHE``, default
``~/.cache/ragtrace``), keyed by the first 16 hex digits of the SHA-256 of the manifest that
produced it, so a stale build is never picked up after the manifest changes:

* Kafka jars: ``<cache>/kafka/<key of scripts/kafka/pom.xml>/libs/*.jar``
* collector: ``<cache>/collector/<key of collector/builder-config.yaml>/otelcol-ragtrace``
* helm, kube-score, kubeconform: ``<cache>/bin/helm``, ``<cache>/bin/kube-score``,
  ``<cache>/bin/kubeconform``
* redis-server, prometheus, promtool: Debian packages, found on ``PATH``.

Each can be overridden by an environment variable (``RAGTRACE_KAFKA_LIBS``, ``RAGTRACE_OTELCOL``,
``RAGTRACE_HELM``, ``RAGTRACE_KUBE_SCORE``, ``RAGTRACE_KUBECONFORM``, ``RAGTRACE_REDIS_SERVER``, ``RAGTRACE_PROMETHEUS``, ``RAGTRACE_PROMTOOL``).
A missing one raises :class:`NotProvisioned`, whose message says to run ``make provision``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

__all__ = [
    "COLLECTOR_CONFIG",
    "REPO_ROOT",
    "NotProvisioned",
    "cache_dir",
    "chromedriver",
    "chromium",
    "helm",
    "kafka_libs",
    "kube_score",
    "kubeconform",
    "manifest_key",
    "otelcol",
    "prometheus",
    "promtool",
    "redis_server",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
COLLECTOR_MANIFEST = REPO_ROOT / "collector" / "builder-config.yaml"
COLLECTOR_CONFIG = REPO_ROOT / "collector" / "config.yaml"
KAFKA_POM = REPO_ROOT / "scripts" / "kafka" / "pom.xml"


class NotProvisioned(RuntimeError):
    """A service binary is missing: the fix is always ``make provision``."""

    def __init__(self, what: str, looked: str) -> None:
        super().__init__(
            f"{what} is not provisioned (looked for {looked}). "
            "Run `make provision` (scripts/provision.sh) first."
        )


def cache_dir() -> Path:
    """The provisioning cache: ``$RAGTRACE_CACHE`` or ``~/.cache/ragtrace``."""
    env = os.environ.get("RAGTRACE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ragtrace"


def manifest_key(path: Path) -> str:
    """The cache key of a manifest: as ``sha256sum FILE | cut -c1-16`` in provision.sh."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _override(var: str) -> Path | None:
    value = os.environ.get(var)
    return Path(value) if value else None


def kafka_libs() -> Path:
    """The directory of the Kafka broker's jars (classpath ``<dir>/*``)."""
    libs = _override("RAGTRACE_KAFKA_LIBS") or (
        cache_dir() / "kafka" / manifest_key(KAFKA_POM) / "libs"
    )
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise NotProvisioned("Apache Kafka", f"{libs}/kafka_2.13-*.jar")
    return libs


def _executable(what: str, path: Path) -> Path:
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise NotProvisioned(what, str(path))
    return path


def otelcol() -> Path:
    """The collector binary built from the current ``collector/builder-config.yaml``."""
    path = _override("RAGTRACE_OTELCOL") or (
        cache_dir() / "collector" / manifest_key(COLLECTOR_MANIFEST) / "otelcol-ragtrace"
    )
    return _executable("The OpenTelemetry Collector (otelcol-ragtrace)", path)


def helm() -> Path:
    """The helm binary (``go install helm.sh/helm/v3/cmd/helm``)."""
    return _executable("helm", _override("RAGTRACE_HELM") or cache_dir() / "bin" / "helm")


def kube_score() -> Path:
    """The kube-score binary (``go install github.com/zegl/kube-score/cmd/kube-score``)."""
    return _executable(
        "kube-score", _override("RAGTRACE_KUBE_SCORE") or cache_dir() / "bin" / "kube-score"
    )


def kubeconform() -> Path:
    """The kubeconform binary (``go install github.com/yannh/kubeconform/cmd/kubeconform``)."""
    return _executable(
        "kubeconform", _override("RAGTRACE_KUBECONFORM") or cache_dir() / "bin" / "kubeconform"
    )


def _on_path(what: str, var: str, name: str) -> Path:
    override = _override(var)
    if override:
        return _executable(what, override)
    found = shutil.which(name)
    if not found:
        raise NotProvisioned(what, f"`{name}` on PATH")
    return Path(found)


def redis_server() -> Path:
    return _on_path("Redis (redis-server)", "RAGTRACE_REDIS_SERVER", "redis-server")


def prometheus() -> Path:
    return _on_path("Prometheus", "RAGTRACE_PROMETHEUS", "prometheus")


def promtool() -> Path:
    return _on_path("promtool", "RAGTRACE_PROMTOOL", "promtool")


def chromium() -> Path:
    """Debian's headless-capable Chromium (``provision.sh chromium``), for the browser tests."""
    return _on_path("Chromium", "RAGTRACE_CHROMIUM", "chromium")


def chromedriver() -> Path:
    """The chromedriver matching :func:`chromium` (Debian's ``chromium-driver``)."""
    return _on_path("chromedriver", "RAGTRACE_CHROMEDRIVER", "chromedriver")
