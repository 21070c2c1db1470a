"""The chart on real clusters: Pod Security "restricted", CRD-guarded monitoring objects, opt-in
NetworkPolicy, `helm test` hooks, topology spread, priority class, global registry, KEDA, and a
multi-replica collector with a PodDisruptionBudget.

The restricted-profile check is the Pod Security Standards' list (kubernetes.io/docs/concepts/
security/pod-security-standards, "Restricted"), applied to every pod the chart renders in every
ci/ scenario.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.unit.helm.conftest import (
    MONITORING_APIS,
    SCENARIOS,
    Manifest,
    Rendered,
    collector_workload,
    containers,
    helm_template,
)

_WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
_RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def _pod_specs(r: Rendered) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in r.docs:
        name = f"{doc['kind']}/{doc['metadata']['name']}"
        if doc["kind"] in _WORKLOADS:
            yield name, doc["spec"]["template"]["spec"]
        elif doc["kind"] == "Pod":
            yield name, doc["spec"]


def _restricted_violations(spec: dict[str, Any]) -> list[str]:
    """Why a pod spec fails the Pod Security "restricted" profile (empty: it passes)."""
    out = []
    pod_sc = spec.get("securityContext") or {}
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(host):
            out.append(f"{host} set")
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            out.append(f"volume {v['name']} of type {kinds}")
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        sc = c.get("securityContext") or {}
        where = f"container {c['name']}"
        if sc.get("privileged"):
            out.append(f"{where}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{where}: allowPrivilegeEscalation is not false")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{where}: capabilities do not drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{where}: adds capabilities {caps['add']}")
        if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
            out.append(f"{where}: runAsNonRoot not true")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            out.append(f"{where}: runs as UID 0")
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{where}: seccompProfile is {seccomp!r}")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                out.append(f"{where}: hostPort {p['hostPort']}")
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_pod_meets_the_restricted_pod_security_standard(
    rendered: Callable[[str], Rendered], scenario: str
) -> None:
    pods = list(_pod_specs(rendered(scenario)))
    assert pods
    for name, spec in pods:
        assert _restricted_violations(spec) == [], name


def test_the_restricted_check_rejects_a_baseline_pod() -> None:
    spec = {
        "securityContext": {"runAsNonRoot": True},
        "containers": [
            {
                "name": "c",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    }
    assert _restricted_violations(spec) == [
        "volume h of type {'hostPath'}",
        "container c: seccompProfile is None",
    ]


def test_every_workload_sets_resources_and_probes(rendered: Callable[[str], Rendered]) -> None:
    """kube-score's container checks that apply to long-running pods."""
    for kind_name, spec in _pod_specs(rendered("default")):
        for c in spec["containers"]:
            assert c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"], (
                kind_name
            )
            assert ":" in c["image"] and not c["image"].endswith(":latest"), kind_name
            if kind_name.startswith(("Deployment/", "StatefulSet/")):
                assert c["readinessProbe"] and c["livenessProbe"], kind_name
                assert c["securityContext"]["readOnlyRootFilesystem"] is True, kind_name


# --- monitoring objects exactly when their values enable them ----------------------------------
_MONITORING = ("PrometheusRule", "ServiceMonitor", "PodMonitor")


def test_monitoring_objects_render_when_enabled_without_api_discovery(
    rendered: Callable[[str], Rendered],
) -> None:
    # `helm template` (and GitOps without API discovery) reports no prometheus-operator API: the
    # objects still render, so a cluster without the CRDs refuses them loudly.
    r = rendered("monitoring")
    for kind in _MONITORING:
        assert len(r.of_kind(kind)) == 1, kind
        assert r.get(kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack", kind
    pm = r.get("PodMonitor")
    assert pm["spec"]["podMetricsEndpoints"] == [
        {"port": "health", "path": "/metrics", "interval": "30s"}
    ]
    assert pm["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "consumer"
    sm = r.get("ServiceMonitor")
    assert [e["port"] for e in sm["spec"]["endpoints"]] == ["prometheus", "self-metrics"]


def test_prometheus_rule_alone_renders_the_rule(render: Callable[..., Rendered]) -> None:
    r = render(sets=["prometheusRule.enabled=true"])
    assert [len(r.of_kind(k)) for k in _MONITORING] == [1, 0, 0]


def test_defaults_render_no_monitoring_object_even_where_the_api_exists(
    render: Callable[..., Rendered],
) -> None:
    # Off by default (a plain cluster installs), and the cluster's APIs never turn them on.
    r = render(api_versions=MONITORING_APIS)
    for kind in _MONITORING:
        assert r.of_kind(kind) == [], kind
    # Annotation-based scraping still finds the consumers.
    ann = r.get("Deployment", "-consumer")["spec"]["template"]["metadata"]["annotations"]
    assert (ann["prometheus.io/scrape"], ann["prometheus.io/port"], ann["prometheus.io/path"]) == (
        "true",
        "8086",
        "/metrics",
    )


def test_consumers_stop_pushing_metrics_when_scraped(render: Callable[..., Rendered]) -> None:
    import yaml

    def export(r: Rendered) -> dict[str, Any]:
        cm = r.get("ConfigMap", "-consumer")
        return dict(yaml.safe_load(cm["data"]["ragtrace-consumer.yaml"])["export"])

    assert export(render())["metrics_otlp"] is False
    off = render(sets=["consumer.metrics.scrape=false", "serviceMonitor.enabled=true"])
    assert export(off)["metrics_otlp"] is True
    assert off.of_kind("PodMonitor") == []
    assert (
        "prometheus.io/scrape"
        not in off.get("Deployment", "-consumer")["spec"]["template"]["metadata"]["annotations"]
    )


# --- network policy -----------------------------------------------------------------------------
def test_network_policy_is_opt_in(rendered: Callable[[str], Rendered]) -> None:
    assert rendered("default").of_kind("NetworkPolicy") == []
    r = rendered("restricted")
    col = r.get("NetworkPolicy", "-collector")
    con = r.get("NetworkPolicy", "-consumer")
    for np in (col, con):
        assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
        assert np["spec"]["egress"][0] == {
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
        }
    otlp, evaluation, metrics, health = col["spec"]["ingress"]
    assert [p["port"] for p in otlp["ports"]] == [4317, 4318]
    assert otlp["from"] == [
        {"namespaceSelector": {"matchLabels": {"ragtrace.io/instrumented": "true"}}}
    ]
    components = [
        f["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for f in evaluation["from"]
    ]
    assert components == ["consumer", "test"]
    assert [p["port"] for p in metrics["ports"]] == [9464, 8888]
    assert "from" not in health
    assert [p["port"] for p in con["spec"]["ingress"][0]["ports"]] == [8086]


# --- helm test ----------------------------------------------------------------------------------
def _test_pods(r: Rendered) -> dict[str, Manifest]:
    return {
        p["metadata"]["name"]: p
        for p in r.of_kind("Pod")
        if p["metadata"]["annotations"]["helm.sh/hook"] == "test"
    }


def test_helm_test_pods_check_the_collector_and_a_consumer(
    rendered: Callable[[str], Rendered],
) -> None:
    r = rendered("default")
    pods = _test_pods(r)
    assert sorted(pods) == ["rt-ragtrace-test-collector-otlp", "rt-ragtrace-test-consumer-ready"]
    collector_svc = r.get("Service", "-collector")["metadata"]["name"]
    consumer_svc = r.get("Service", "-consumer")
    assert consumer_svc["spec"]["ports"][0]["port"] == 8086
    scripts = {n: containers(p)[0]["args"][0] for n, p in pods.items()}
    assert f"http://{collector_svc}:4318/v1/traces" in scripts["rt-ragtrace-test-collector-otlp"]
    assert (
        f"http://{consumer_svc['metadata']['name']}:8086/readyz"
        in scripts["rt-ragtrace-test-consumer-ready"]
    )
    for p in pods.values():
        assert containers(p)[0]["image"] == containers(r.get("Deployment", "-consumer"))[0]["image"]
        assert p["spec"]["restartPolicy"] == "Never"


class _Endpoint(http.server.BaseHTTPRequestHandler):
    """Answers every request with ``status``; records what it was sent."""

    status = 200
    seen: ClassVar[list[tuple[str, str, bytes]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, body))
        self.send_response(self.status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("status", [200, 503])
def test_helm_test_scripts_pass_and_fail_for_real(
    rendered: Callable[[str], Rendered], status: int
) -> None:
    """Each test pod's Python, run here against a local endpoint standing in for the Service:
    exit 0 on 200, non-zero otherwise."""
    _Endpoint.status, _Endpoint.seen = status, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for name, pod in _test_pods(rendered("default")).items():
            script = containers(pod)[0]["args"][0]
            for host in ("rt-ragtrace-collector:4318", "rt-ragtrace-consumer:8086"):
                script = script.replace(host, f"127.0.0.1:{server.server_port}")
            proc = subprocess.run(
                [sys.executable, "-c", script],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            assert (proc.returncode == 0) == (status == 200), (name, proc.stderr)
    finally:
        server.shutdown()
    assert [(m, p) for m, p, _ in _Endpoint.seen] == [("POST", "/v1/traces"), ("GET", "/readyz")]
    assert _Endpoint.seen[0][2] == b'{"resourceSpans": []}'


# --- scheduling, images, scaling ----------------------------------------------------------------
def test_topology_spread_selects_each_components_pods(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("default")
    workloads = {"collector": collector_workload(r), "consumer": r.get("Deployment", "-consumer")}
    for component, workload in workloads.items():
        spec = workload["spec"]["template"]["spec"]
        (tsc,) = spec["topologySpreadConstraints"]
        assert tsc["topologyKey"] == "kubernetes.io/hostname"
        assert tsc["whenUnsatisfiable"] == "ScheduleAnyway"
        assert tsc["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == component
        assert "priorityClassName" not in spec
    r = rendered("restricted")
    workloads = {"collector": collector_workload(r), "consumer": r.get("Deployment", "-consumer")}
    classes = {c: w["spec"]["template"]["spec"]["priorityClassName"] for c, w in workloads.items()}
    assert classes == {"collector": "ragtrace-critical", "consumer": "ragtrace-batch"}


@pytest.mark.parametrize(
    ("registry", "repository", "expected"),
    [
        (
            "",
            "otel/opentelemetry-collector-contrib",
            "otel/opentelemetry-collector-contrib:0.165.0",
        ),
        (
            "mirror.io",
            "otel/opentelemetry-collector-contrib",
            "mirror.io/otel/opentelemetry-collector-contrib:0.165.0",
        ),
        ("mirror.io/", "ghcr.io/ragtrace/x", "mirror.io/ragtrace/x:0.165.0"),
        ("m:5000/p", "localhost/x", "m:5000/p/x:0.165.0"),
        ("m:5000/p", "registry:5000/team/x", "m:5000/p/team/x:0.165.0"),
    ],
)
def test_global_image_registry_replaces_the_registry(
    render: Callable[..., Rendered], registry: str, repository: str, expected: str
) -> None:
    r = render(
        sets=[f'global.imageRegistry="{registry}"', f'collector.image.repository="{repository}"']
    )
    assert containers(collector_workload(r))[0]["image"] == expected


def test_every_image_follows_the_global_registry(rendered: Callable[[str], Rendered]) -> None:
    for name, spec in _pod_specs(rendered("restricted")):
        for c in spec["containers"]:
            assert c["image"].startswith("registry.internal:5000/mirror/"), name


def test_keda_scales_on_the_groups_kafka_lag(
    rendered: Callable[[str], Rendered], helm_bin: Path
) -> None:
    r = rendered("restricted")
    assert "replicas" not in r.get("Deployment", "-consumer")["spec"]
    assert r.of_kind("HorizontalPodAutoscaler") == []
    so = r.get("ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    assert so["spec"]["scaleTargetRef"] == {"name": "rt-ragtrace-consumer"}
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (2, 8)
    (trigger,) = so["spec"]["triggers"]
    assert trigger == {
        "type": "kafka",
        "authenticationRef": {"name": "kafka-auth"},
        "metadata": {
            "bootstrapServers": "kafka:9092",
            "consumerGroup": "ragtrace-consumer",
            "topic": "otlp_spans",
            "lagThreshold": "500",
            "offsetResetPolicy": "earliest",
            "allowIdleConsumers": "false",
        },
    }
    assert rendered("default").of_kind("ScaledObject") == []


def test_keda_and_the_hpa_exclude_each_other(helm_bin: Path) -> None:
    proc = helm_template(
        helm_bin,
        "--set",
        "consumer.keda.enabled=true",
        "--set",
        "consumer.autoscaling.enabled=true",
    )
    assert proc.returncode != 0
    assert "exclude each other" in proc.stderr


def test_collector_runs_two_replicas_behind_a_pdb(
    rendered: Callable[[str], Rendered], render: Callable[..., Rendered]
) -> None:
    r = rendered("default")
    assert collector_workload(r)["spec"]["replicas"] == 2
    pdb = r.get("PodDisruptionBudget", "-collector")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "collector"
    single = render(sets=["collector.replicas=1"])
    assert [p["metadata"]["name"] for p in single.of_kind("PodDisruptionBudget")] == [
        "rt-ragtrace-consumer"
    ]


# --- kube-score ---------------------------------------------------------------------------------
# Checks the chart opts out of, each for a reason:
# - container-cpu-limit: CPU limits throttle the judge's bursts and the collector's batches for
#   no protection that requests do not give; memory limits are set.
# - container-image-pull-policy (wants Always): images are pinned by tag or digest.
# - pod-networkpolicy, in scenarios without networkPolicy.enabled (it is opt-in).
# Objects carry their own exceptions as kube-score/ignore annotations (the collector's probes
# share the health_check endpoint; helm test pods only connect out). Warnings (a host
# podAntiAffinity, where the chart uses topology spread) do not fail.
_KUBE_SCORE_IGNORED = ("container-image-pull-policy",)


def _kube_score(
    binary: Path, r: Rendered, tmp_path: Path, *ignored: str
) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(r.text)
    args = [str(binary), "score", "--output-format", "ci", "--ignore-container-cpu-limit"]
    for test in (*_KUBE_SCORE_IGNORED, *ignored):
        args += ["--ignore-test", test]
    return subprocess.run(
        [*args, str(manifest)], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kube_score_finds_nothing_critical(
    kube_score_bin: Path, rendered: Callable[[str], Rendered], scenario: str, tmp_path: Path
) -> None:
    r = rendered(scenario)
    extra = () if r.of_kind("NetworkPolicy") else ("pod-networkpolicy",)
    proc = _kube_score(kube_score_bin, r, tmp_path, *extra)
    critical = [x for x in proc.stdout.splitlines() if x.startswith("[CRITICAL]")]
    assert critical == [] and proc.returncode == 0, proc.stdout + proc.stderr
    assert "[OK]" in proc.stdout


def test_kube_score_catches_a_weakened_chart(
    kube_score_bin: Path, render: Callable[..., Rendered], tmp_path: Path
) -> None:
    r = render(sets=["consumer.resources=null", "networkPolicy.enabled=true"])
    proc = _kube_score(kube_score_bin, r, tmp_path)
    assert proc.returncode != 0
    assert "(consumer) Memory limit is not set" in proc.stdout
