"""Every ci/ scenario lints, renders, and renders valid Kubernetes objects."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.unit.helm.conftest import (
    CHART,
    KUBE_VERSION,
    SCENARIOS,
    Manifest,
    Rendered,
    helm_template,
    run_helm,
    values_file,
)

# Oldest supported (Chart.yaml kubeVersion) and newest schema bundled with kubernetes-validate.
SCHEMA_VERSIONS = ("1.25.0", kubernetes_validate.latest_version())
CRD_KINDS = {"PodMonitor", "PrometheusRule", "ScaledObject", "ServiceMonitor"}
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
_LABEL_KEY = re.compile(r"^([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_scenarios_are_the_documented_nine() -> None:
    assert SCENARIOS == [
        "autoscaling",
        "default",
        "ephemeral-queue",
        "labels-job",
        "minimal",
        "monitoring",
        "restricted",
        "sentinel",
        "tls-sasl-existingsecret",
    ]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_helm_lint_strict(helm_bin: Path, scenario: str) -> None:
    proc = run_helm(
        helm_bin,
        "lint",
        str(CHART),
        "--strict",
        "--kube-version",
        KUBE_VERSION,
        "-f",
        str(values_file(scenario)),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 chart(s) failed" in proc.stdout


def _validate_builtin(doc: Manifest, version: str) -> None:
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(
            f"{doc['kind']}/{doc['metadata']['name']} invalid for Kubernetes {version}: "
            f"{exc.message} at {'.'.join(map(str, exc.path))}"
        )


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_rendered_objects_match_kubernetes_schemas(
    rendered: Callable[[str], Rendered], scenario: str, version: str
) -> None:
    docs = rendered(scenario).docs
    assert docs, "nothing rendered"
    for doc in docs:
        if doc["kind"] in CRD_KINDS:
            continue
        _validate_builtin(doc, version)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_object_names_are_unique_dns_labels(
    rendered: Callable[[str], Rendered], scenario: str
) -> None:
    seen: set[tuple[str, str]] = set()
    for doc in rendered(scenario).docs:
        name = doc["metadata"]["name"]
        assert _DNS_LABEL.match(name) and len(name) <= 63, name
        key = (doc["kind"], name)
        assert key not in seen, f"duplicate {key}"
        seen.add(key)
        for k in doc["metadata"].get("labels", {}):
            assert _LABEL_KEY.match(k), k


def _check_rule(rule: dict[str, Any], where: str) -> None:
    allowed = {"alert", "record", "expr", "for", "labels", "annotations", "keep_firing_for"}
    assert set(rule) <= allowed, f"{where}: unknown keys {set(rule) - allowed}"
    assert ("alert" in rule) != ("record" in rule), f"{where}: exactly one of alert/record"
    assert isinstance(rule["expr"], str) and rule["expr"].strip(), where
    if "for" in rule:
        assert _DURATION.match(str(rule["for"])), f"{where}: bad for {rule['for']!r}"
    for key in ("labels", "annotations"):
        for k, v in (rule.get(key) or {}).items():
            assert isinstance(k, str) and isinstance(v, str), f"{where}: {key}.{k} must be a string"


def check_prometheus_rule(doc: Manifest) -> None:
    """Structural check of monitoring.coreos.com/v1 PrometheusRule (the CRD's required shape)."""
    assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}
    groups = doc["spec"]["groups"]
    assert set(doc["spec"]) == {"groups"} and isinstance(groups, list) and groups
    names = [g["name"] for g in groups]
    assert len(names) == len(set(names)), f"duplicate group names {names}"
    for g in groups:
        assert set(g) <= {"name", "interval", "rules", "partial_response_strategy", "limit"}
        assert g["rules"], f"group {g['name']} has no rules"
        for i, rule in enumerate(g["rules"]):
            _check_rule(rule, f"{g['name']}[{i}]")


def check_service_monitor(doc: Manifest) -> None:
    assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    spec = doc["spec"]
    assert set(spec) <= {"selector", "endpoints", "namespaceSelector", "jobLabel"}
    assert spec["selector"]["matchLabels"]
    for ep in spec["endpoints"]:
        assert set(ep) <= {"port", "interval", "path", "honorLabels", "scheme", "scrapeTimeout"}
        assert isinstance(ep["port"], str) and _DURATION.match(ep["interval"])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_custom_resources_are_well_formed(
    rendered: Callable[[str], Rendered], scenario: str
) -> None:
    r = rendered(scenario)
    for doc in r.of_kind("PrometheusRule"):
        check_prometheus_rule(doc)
    for doc in r.of_kind("ServiceMonitor"):
        check_service_monitor(doc)
        # It must select the collector Service's pods through its named port.
        svc = r.get("Service", "-collector")
        assert doc["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
        assert "prometheus" in [p["name"] for p in svc["spec"]["ports"]]


def test_structural_check_rejects_a_broken_rule() -> None:
    broken = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "x"},
        "spec": {
            "groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up", "for": "ten minutes"}]}]
        },
    }
    with pytest.raises(AssertionError):
        check_prometheus_rule(broken)


def test_a_bad_value_is_rejected_by_the_schema(helm_bin: Path) -> None:
    proc = helm_template(
        helm_bin,
        "--set",
        "judge.name=gpt",
        "--set",
        "consumer.config.sampling.judge_rate=2",
    )
    assert proc.returncode != 0
    assert "judge" in proc.stderr and "sampling" in proc.stderr, proc.stderr
