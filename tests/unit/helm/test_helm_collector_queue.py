"""The collector's persistent sending queue in the chart: a StatefulSet whose claim per pod holds
the directory collector/config.yaml's file_storage/queue reads from RAGTRACE_COLLECTOR_QUEUE_DIR,
or (collector.persistentQueue.enabled=false) a Deployment with an emptyDir there.

The queue does not drain on shutdown, so its directory must outlive the pod: these tests pin the
mount to the variable, the variable to the config, and the rendered environment to what the real
collector binary accepts.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scripts.services import paths
from tests.unit.helm.conftest import (
    CHART,
    KUBE_VERSION,
    RELEASE,
    ROOT,
    Manifest,
    Rendered,
    _tool,
    collector_workload,
    containers,
    env_of,
    helm_template,
    run_helm,
)

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
QUEUE_ENV = "RAGTRACE_COLLECTOR_QUEUE_DIR"
BOTH_KINDS = [("default", "StatefulSet"), ("ephemeral-queue", "Deployment")]


def _pod(workload: Manifest) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


def _queue_mount(workload: Manifest) -> dict[str, Any]:
    (collector,) = containers(workload)
    (mount,) = [m for m in collector["volumeMounts"] if m["name"] == "queue"]
    return dict(mount)


def _queue_dir(workload: Manifest) -> str:
    (collector,) = containers(workload)
    return str(env_of(collector)[QUEUE_ENV]["value"])


@pytest.mark.parametrize(("scenario", "kind"), BOTH_KINDS)
def test_the_queue_volume_is_mounted_at_the_directory_the_variable_names(
    rendered: Callable[[str], Rendered], scenario: str, kind: str
) -> None:
    w = collector_workload(rendered(scenario))
    assert w["kind"] == kind
    mount = _queue_mount(w)
    assert mount["mountPath"] == _queue_dir(w) == "/var/lib/otelcol/queue"
    assert not mount.get("readOnly") and "subPath" not in mount


def test_the_collector_config_keeps_every_span_queue_in_that_directory() -> None:
    cfg = yaml.safe_load((ROOT / "collector" / "config.yaml").read_text())
    storage = cfg["extensions"]["file_storage/queue"]
    for where in (storage["directory"], storage["compaction"]["directory"]):
        assert where.startswith("${env:" + QUEUE_ENV + ":-"), where
    assert "file_storage/queue" in cfg["service"]["extensions"]
    for name, pipeline in cfg["service"]["pipelines"].items():
        if name.split("/")[0] in ("traces", "logs"):
            assert "batch" not in pipeline["processors"], name  # it would answer before the disk
            for exporter in pipeline["exporters"]:
                queue = cfg["exporters"][exporter]["sending_queue"]
                assert queue["storage"] == "file_storage/queue", (name, exporter)


def test_default_is_a_statefulset_with_one_claim_per_pod(
    rendered: Callable[[str], Rendered],
) -> None:
    r = rendered("default")
    w = collector_workload(r)
    assert w["kind"] == "StatefulSet" and w["spec"]["replicas"] == 2
    assert w["spec"]["podManagementPolicy"] == "Parallel"
    assert w["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    (claim,) = w["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "queue"
    # Immutable after install: no label that changes with the chart version.
    assert claim["metadata"]["labels"] == w["spec"]["selector"]["matchLabels"]
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": VALUES["collector"]["persistentQueue"]["size"]}},
    }
    assert VALUES["collector"]["persistentQueue"]["size"] == "2Gi"
    # The claim is the queue volume: no pod volume of the same name shadows it.
    assert "queue" not in [v["name"] for v in _pod(w)["volumes"]]
    assert [
        d for d in r.of_kind("Deployment") if d["metadata"]["name"].endswith("-collector")
    ] == []


@pytest.mark.parametrize(
    ("sets", "size", "storage_class", "retention"),
    [
        (
            [
                'collector.persistentQueue.size="10Gi"',
                'collector.persistentQueue.storageClassName="fast-ssd"',
            ],
            "10Gi",
            "fast-ssd",
            {"whenDeleted": "Retain", "whenScaled": "Retain"},
        ),
        (
            [
                'collector.persistentQueue.size="500Mi"',
                'collector.persistentQueue.storageClassName="-"',
                'collector.persistentQueue.retentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"}',
            ],
            "500Mi",
            "",
            {"whenDeleted": "Delete", "whenScaled": "Delete"},
        ),
    ],
)
def test_the_claim_follows_values(
    render: Callable[..., Rendered],
    sets: list[str],
    size: str,
    storage_class: str,
    retention: dict[str, str],
) -> None:
    w = collector_workload(render(sets=sets))
    (claim,) = w["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == size
    assert claim["spec"]["storageClassName"] == storage_class
    assert w["spec"]["persistentVolumeClaimRetentionPolicy"] == retention


def test_the_restricted_scenario_claims_its_storage_class(
    rendered: Callable[[str], Rendered],
) -> None:
    w = collector_workload(rendered("restricted"))
    (claim,) = w["spec"]["volumeClaimTemplates"]
    assert (claim["spec"]["storageClassName"], claim["spec"]["resources"]["requests"]) == (
        "fast-ssd",
        {"storage": "10Gi"},
    )
    assert w["spec"]["replicas"] == 3


def test_a_headless_service_governs_the_statefulset_and_the_apps_service_is_unchanged(
    rendered: Callable[[str], Rendered],
) -> None:
    persistent, ephemeral = rendered("default"), rendered("ephemeral-queue")
    w = collector_workload(persistent)
    headless = persistent.get("Service", "-collector-headless")
    assert w["spec"]["serviceName"] == headless["metadata"]["name"]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["selector"] == w["spec"]["selector"]["matchLabels"]
    # No ports: the ServiceMonitor (by port name) and annotation scraping never see it.
    assert "ports" not in headless["spec"] and "annotations" not in headless["metadata"]
    # The Service the apps send to is the same object whichever kind runs the pods.
    assert persistent.get("Service", "-collector") == ephemeral.get("Service", "-collector")
    assert ephemeral.of_kind("StatefulSet") == []
    assert [s["metadata"]["name"] for s in ephemeral.of_kind("Service")] == [
        "rt-ragtrace-collector",
        "rt-ragtrace-consumer",
    ]


def test_without_persistence_the_queue_is_an_emptydir_counted_in_the_storage_limit(
    rendered: Callable[[str], Rendered],
) -> None:
    w = collector_workload(rendered("ephemeral-queue"))
    assert w["kind"] == "Deployment" and "volumeClaimTemplates" not in w["spec"]
    (queue,) = [v for v in _pod(w)["volumes"] if v["name"] == "queue"]
    assert queue == {"name": "queue", "emptyDir": {"sizeLimit": "1Gi"}}
    (collector,) = containers(w)
    # The kubelet evicts the pod (and its emptyDir) past the sum of its containers' limits.
    assert collector["resources"]["limits"]["ephemeral-storage"] == "1280Mi"  # 256Mi + 1Gi
    assert collector["resources"]["requests"]["ephemeral-storage"] == "64Mi"
    (persistent,) = containers(collector_workload(rendered("default")))
    assert persistent["resources"] == VALUES["collector"]["resources"]


@pytest.mark.parametrize(("scenario", "kind"), BOTH_KINDS)
def test_both_kinds_keep_pdb_probes_checksum_spread_and_a_writable_volume(
    rendered: Callable[[str], Rendered], scenario: str, kind: str
) -> None:
    r = rendered(scenario)
    w = collector_workload(r)
    pod_labels = w["spec"]["template"]["metadata"]["labels"]
    selector = w["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    pdb = r.get("PodDisruptionBudget", "-collector")
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    assert r.get("Service", "-collector")["spec"]["selector"] == selector
    (collector,) = containers(w)
    assert collector["livenessProbe"]["httpGet"] == collector["readinessProbe"]["httpGet"]
    ann = w["spec"]["template"]["metadata"]["annotations"]
    assert re.fullmatch(r"[0-9a-f]{64}", ann["checksum/config"])
    (tsc,) = _pod(w)["topologySpreadConstraints"]
    assert tsc["labelSelector"]["matchLabels"] == selector
    sc = _pod(w)["securityContext"]
    assert sc["fsGroup"] == sc["runAsUser"] == 10001
    assert collector["securityContext"]["readOnlyRootFilesystem"] is True


def test_queue_limits_reach_the_collector(render: Callable[..., Rendered]) -> None:
    w = collector_workload(
        render(
            sets=[
                "collector.persistentQueue.maxItems=5000",
                'collector.persistentQueue.retryMaxElapsed="30m"',
            ]
        )
    )
    env = env_of(containers(w)[0])
    assert env["RAGTRACE_COLLECTOR_QUEUE_ITEMS"]["value"] == "5000"
    assert env["RAGTRACE_COLLECTOR_RETRY_MAX_ELAPSED"]["value"] == "30m"


@pytest.fixture(scope="session")
def otelcol_bin() -> Path:
    return _tool(paths.otelcol, "the collector (otelcol-ragtrace)")


@pytest.mark.parametrize(
    "sets",
    [
        [],
        ["collector.persistentQueue.enabled=false"],
        ["collector.persistentQueue.maxItems=64", 'collector.persistentQueue.retryMaxElapsed="0"'],
    ],
)
def test_the_real_collector_accepts_the_rendered_config_and_environment(
    render: Callable[..., Rendered], otelcol_bin: Path, sets: list[str], tmp_path: Path
) -> None:
    r = render(sets=sets)
    cm = r.get("ConfigMap", "-collector")["data"]
    (tmp_path / "config.yaml").write_text(cm["config.yaml"])
    env = {
        name: var["value"]
        for name, var in env_of(containers(collector_workload(r))[0]).items()
        if "value" in var
    }
    proc = subprocess.run(
        [str(otelcol_bin), "validate", f"--config=file:{tmp_path / 'config.yaml'}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("key", "value"),
    [("size", '"2 GB"'), ("retryMaxElapsed", '"1 hour"'), ("maxItems", "63")],
)
def test_schema_rejects_a_bad_queue_value(helm_bin: Path, key: str, value: str) -> None:
    proc = helm_template(
        helm_bin, "--set-json", f"collector.persistentQueue.{key}={value}",
    )  # fmt: skip
    assert proc.returncode != 0
    assert "/collector/persistentQueue/" + key in proc.stderr, proc.stderr


def test_a_statefulset_name_kubernetes_cannot_run_fails_naming_the_fix(helm_bin: Path) -> None:
    name = "a" * 43  # + "-collector": 53 characters
    args = ["template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION]
    proc = run_helm(helm_bin, *args, "--set", f"fullnameOverride={name}")
    assert proc.returncode != 0
    assert f'"{name}-collector" has 53 characters' in proc.stderr
    assert "fullnameOverride" in proc.stderr
    assert run_helm(helm_bin, *args, "--set", f"fullnameOverride={name[:-1]}").returncode == 0
    off = ["--set", f"fullnameOverride={name}", "--set", "collector.persistentQueue.enabled=false"]
    assert run_helm(helm_bin, *args, *off).returncode == 0
