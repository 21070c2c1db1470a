"""Every scenario's rendered objects pass kubeconform (strict) against the Kubernetes 1.33 schemas.

The schemas are the ones the kubernetes-validate wheel (dev extra) ships, so nothing is fetched
from outside a package registry. Its "-local" schemas reference one shared ``_definitions.json``
by an absolute path kubeconform cannot resolve, so each kind's schema is made standalone (its
definitions inlined) for the kinds the chart renders. The operator and KEDA kinds have no schema
there; test_helm_render.py checks their shape.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from scripts.services import paths
from tests.unit.helm.conftest import SCENARIOS, Manifest, Rendered, _tool

K8S_VERSION = "1.33.0"
CRD_KINDS = ("PodMonitor", "PrometheusRule", "ScaledObject", "ServiceMonitor")
_LOCATION = "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"


def _schema_name(doc: Manifest) -> str:
    """kubeconform's file name of a kind: deployment-apps-v1.json, service-v1.json."""
    group, _, version = str(doc["apiVersion"]).rpartition("/")
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{str(doc['kind']).lower()}{suffix}.json"


def _refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _reachable(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The definitions ``schema`` needs, transitively (all of them make kubeconform slow)."""
    keep: dict[str, Any] = {}
    todo = list(_refs(schema))
    while todo:
        name = todo.pop()
        if name not in keep:
            keep[name] = defs[name]
            todo.extend(_refs(defs[name]))
    return keep


@pytest.fixture(scope="session")
def kubeconform_bin() -> Path:
    return _tool(paths.kubeconform, "kubeconform")


@pytest.fixture(scope="session")
def schema_dir(
    tmp_path_factory: pytest.TempPathFactory, rendered: Callable[[str], Rendered]
) -> Path:
    """Standalone strict 1.33 schemas of every kind the scenarios render, laid out as kubeconform
    expects (``<root>/v1.33.0-standalone-strict/<kind>-<group>-<version>.json``)."""
    src = (
        Path(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema"
        / f"v{K8S_VERSION}-local-strict"
    )
    assert src.is_dir(), f"kubernetes-validate ships no {K8S_VERSION} schemas at {src}"
    root = tmp_path_factory.mktemp("k8s-schemas")
    out = root / f"v{K8S_VERSION}-standalone-strict"
    out.mkdir()
    text = (src / "_definitions.json").read_text()
    defs = json.loads(text.replace('"/api/_definitions.json#/$defs/', '"#/$defs/'))["$defs"]
    kinds = {
        _schema_name(d) for s in SCENARIOS for d in rendered(s).docs if d["kind"] not in CRD_KINDS
    }
    for name in sorted(kinds):
        path = src / name
        assert path.is_file(), f"no {K8S_VERSION} schema {name}"
        text = path.read_text()
        schema = json.loads(text.replace('"/api/_definitions.json#/$defs/', '"#/$defs/'))
        schema["$defs"] = _reachable(schema, defs)
        (out / path.name).write_text(json.dumps(schema))
    return root


def _kubeconform(binary: Path, schemas: Path, manifests: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(binary),
            "-strict",
            "-summary",
            "-output",
            "text",
            "-kubernetes-version",
            K8S_VERSION,
            "-schema-location",
            f"{schemas}/{_LOCATION}",
            "-skip",
            ",".join(CRD_KINDS),
            "-",
        ],
        input=manifests,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_passes_kubeconform_strict(
    kubeconform_bin: Path, schema_dir: Path, rendered: Callable[[str], Rendered], scenario: str
) -> None:
    r = rendered(scenario)
    proc = _kubeconform(kubeconform_bin, schema_dir, r.text)
    builtin = sum(1 for d in r.docs if d["kind"] not in CRD_KINDS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Valid: {builtin}, Invalid: 0, Errors: 0" in proc.stdout, proc.stdout


def test_kubeconform_rejects_an_unknown_field(
    kubeconform_bin: Path, schema_dir: Path, rendered: Callable[[str], Rendered]
) -> None:
    broken = rendered("default").text.replace("  selector:\n", "  selectr:\n", 1)
    proc = _kubeconform(kubeconform_bin, schema_dir, broken)
    assert proc.returncode == 1
    assert "Invalid: 1" in proc.stdout and "selectr" in proc.stdout, proc.stdout
