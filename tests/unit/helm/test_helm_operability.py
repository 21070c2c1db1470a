"""What an operator sees: GOMEMLIMIT from the collector's memory limit, appProtocol on every
Service port, Chart.yaml metadata, and install notes that say what is off."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml

from tests.unit.helm.conftest import (
    CHART,
    KUBE_VERSION,
    RELEASE,
    Rendered,
    collector_workload,
    containers,
    env_of,
    helm_template,
    run_helm,
)


def _gomemlimit(r: Rendered) -> str | None:
    (collector,) = containers(collector_workload(r))
    env = env_of(collector).get("GOMEMLIMIT")
    return None if env is None else str(env["value"])


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ((), "409MiB"),  # 80 % of the default 512Mi
        (('collector.resources.limits.memory="1.5Gi"',), "1228MiB"),
        (('collector.resources.limits.memory="1G"',), "762MiB"),  # 8e8 bytes
        (("collector.resources.limits.memory=1073741824",), "819MiB"),
        (("collector.goMemLimitPercent=90",), "460MiB"),
        (("collector.goMemLimitPercent=0",), None),
        (("collector.resources.limits=null",), None),
    ],
)
def test_gomemlimit_follows_the_memory_limit(
    render: Callable[..., Rendered], sets: Sequence[str], expected: str | None
) -> None:
    assert _gomemlimit(render(sets=list(sets))) == expected


def test_an_unreadable_memory_limit_fails_naming_the_key(helm_bin: Path) -> None:
    proc = helm_template(
        helm_bin, "--set", "collector.resources.limits.memory=2e3",
    )  # fmt: skip
    assert proc.returncode != 0
    assert "collector.resources.limits.memory" in proc.stderr and '"2e3"' in proc.stderr


def test_every_service_port_has_its_app_protocol(rendered: Callable[[str], Rendered]) -> None:
    ports = {
        (svc["metadata"]["name"].removeprefix("rt-ragtrace-"), p["name"]): p.get("appProtocol")
        for svc in rendered("default").of_kind("Service")
        for p in svc["spec"].get("ports", [])  # the StatefulSet's headless Service has none
    }
    assert ports == {
        ("collector", "otlp-grpc"): "grpc",
        ("collector", "otlp-http"): "http",
        ("collector", "eval-grpc"): "grpc",
        ("collector", "eval-http"): "http",
        ("collector", "prometheus"): "http",
        ("collector", "self-metrics"): "http",
        ("consumer", "health"): "http",
    }


def test_chart_metadata_names_maintainers_sources_and_the_shipped_icon() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["maintainers"] == [{"name": "ragtrace maintainers"}]
    assert all(s.startswith("https://") for s in chart["sources"]) and chart["sources"]
    prefix = "data:image/svg+xml;base64,"
    assert chart["icon"].startswith(prefix)
    assert base64.b64decode(chart["icon"].removeprefix(prefix)) == (CHART / "icon.svg").read_bytes()


def _notes(helm: Path, tmp_path: Path, sets: Sequence[str] = ()) -> str:
    """NOTES.txt as `helm install` prints it: `helm template` skips it, so a copy of the chart
    renders it through tpl inside a throwaway template."""
    chart = tmp_path / "ragtrace"
    shutil.copytree(CHART, chart)
    (chart / "notes-under-test.txt").write_text((chart / "templates" / "NOTES.txt").read_text())
    (chart / "templates" / "zz-notes.yaml").write_text(
        'notes: |\n{{ tpl (.Files.Get "notes-under-test.txt") . | indent 2 }}\n'
    )
    args = ["template", RELEASE, str(chart), "--kube-version", KUBE_VERSION, "-n", "rag"]
    for s in sets:
        args += ["--set-json", s]
    proc = run_helm(helm, *args, "--show-only", "templates/zz-notes.yaml")
    assert proc.returncode == 0, proc.stderr
    return str(yaml.safe_load(proc.stdout)["notes"])


def test_notes_list_what_is_off(helm_bin: Path, tmp_path: Path) -> None:
    notes = _notes(helm_bin, tmp_path)
    off = notes.split("Off in this release (turn on with the value named):\n", 1)[1]
    assert [line.split(":")[0].strip("- ") for line in off.strip().splitlines()] == [
        "alerts",
        "ServiceMonitor/PodMonitor",
        "NetworkPolicies",
        "autoscaling",
    ]
    assert "prometheusRule.enabled=true needs the prometheus-operator CRDs" in off
    assert "the pods carry prometheus.io/* scrape annotations" in notes
    assert "own PersistentVolumeClaim (queue-rt-ragtrace-collector-<n>, 2Gi)" in notes
    assert "The claims outlive `helm uninstall`" in notes


def test_notes_say_an_ephemeral_queue_is_lost_with_the_pod(helm_bin: Path, tmp_path: Path) -> None:
    notes = _notes(
        helm_bin,
        tmp_path,
        ["collector.persistentQueue.enabled=false", "networkPolicy.enabled=true"],
    )
    off = notes.split("Off in this release (turn on with the value named):\n", 1)[1]
    (line,) = [x for x in off.splitlines() if x.startswith("  - collector queue persistence:")]
    assert "LOST with the pod (collector.persistentQueue.enabled=true)" in line
    assert "PersistentVolumeClaim" not in notes
    deleted = _notes(
        helm_bin, tmp_path / "d", ['collector.persistentQueue.retentionPolicy.whenDeleted="Delete"']
    )
    assert "PersistentVolumeClaim" in deleted and "outlive" not in deleted


def test_notes_say_nothing_is_off_when_everything_is_on(helm_bin: Path, tmp_path: Path) -> None:
    notes = _notes(
        helm_bin,
        tmp_path,
        [
            "prometheusRule.enabled=true",
            "serviceMonitor.enabled=true",
            "networkPolicy.enabled=true",
            "consumer.autoscaling.enabled=true",
        ],
    )
    assert "Off in this release" not in notes
    assert "(the ServiceMonitor does)" in notes and "scraped through the PodMonitor" in notes
