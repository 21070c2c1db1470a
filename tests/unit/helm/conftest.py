"""Render the chart with the real helm (provisioned by scripts/provision.sh) and parse the result.

A missing helm or promtool FAILS the tests (never skips them): run `make provision`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # `scripts` is imported from the repository root
    sys.path.insert(0, str(ROOT))

from scripts.services import paths

CHART = ROOT / "helm" / "ragtrace"
SCENARIOS = sorted(p.stem.removesuffix("-values") for p in (CHART / "ci").glob("*-values.yaml"))
# helm built with `go install` has no Kubernetes version baked in (it assumes 1.20); render for a
# version the chart supports (Chart.yaml kubeVersion >= 1.25).
KUBE_VERSION = "1.31.0"
RELEASE = "rt"

Manifest = dict[str, Any]


def _tool(find: Callable[[], Path], what: str) -> Path:
    try:
        return find()
    except paths.NotProvisioned as exc:
        pytest.fail(f"{what} is required for the chart tests: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def helm_bin() -> Path:
    return _tool(paths.helm, "helm")


@pytest.fixture(scope="session")
def kube_score_bin() -> Path:
    return _tool(paths.kube_score, "kube-score")


@pytest.fixture(scope="session")
def promtool_bin() -> Path:
    return _tool(paths.promtool, "promtool")


def values_file(scenario: str) -> Path:
    return CHART / "ci" / f"{scenario}-values.yaml"


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm), *args], capture_output=True, text=True, timeout=120, check=False
    )


def run_promtool(
    promtool: Path, *args: str, cwd: Path, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """``promtool *args`` in ``cwd`` (the rule and test files are named relative to it)."""
    return subprocess.run(
        [str(promtool), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout_s,
        check=False,
    )


def helm_template(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart as release ``rt`` for KUBE_VERSION, with ``args`` added."""
    return run_helm(helm, "template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION, *args)


class Rendered:
    """The parsed output of one `helm template`, with lookups by kind and name."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.docs: list[Manifest] = [d for d in yaml.safe_load_all(text) if d]

    def of_kind(self, kind: str) -> list[Manifest]:
        return [d for d in self.docs if d["kind"] == kind]

    def get(self, kind: str, name_suffix: str = "") -> Manifest:
        found = [d for d in self.of_kind(kind) if d["metadata"]["name"].endswith(name_suffix)]
        assert len(found) == 1, f"expected one {kind} *{name_suffix}, found {len(found)}"
        return found[0]

    def names(self, kind: str) -> list[str]:
        return sorted(d["metadata"]["name"] for d in self.of_kind(kind))


# The prometheus-operator kinds a kube-prometheus-stack cluster serves. The chart renders its
# PrometheusRule, ServiceMonitor and PodMonitor by their values alone, so by default the tests
# render as `helm template` and GitOps tools do, with no API discovery at all.
MONITORING_APIS = tuple(
    f"monitoring.coreos.com/v1/{kind}"
    for kind in ("PrometheusRule", "ServiceMonitor", "PodMonitor")
)


def render_with(
    helm: Path,
    files: Sequence[Path] = (),
    sets: Sequence[str] = (),
    api_versions: Sequence[str] = (),
) -> Rendered:
    args = ["template", RELEASE, str(CHART), "--namespace", "rag", "--kube-version", KUBE_VERSION]
    for api in api_versions:
        args += ["--api-versions", api]
    for f in files:
        args += ["-f", str(f)]
    for s in sets:  # key=<JSON value>, so numbers stay numbers
        args += ["--set-json", s]
    proc = run_helm(helm, *args)
    assert proc.returncode == 0, f"helm template failed:\n{proc.stderr}"
    return Rendered(proc.stdout)


@pytest.fixture(scope="session")
def rendered(helm_bin: Path) -> Iterator[Callable[[str], Rendered]]:
    """``rendered(scenario)``: the chart rendered with ci/<scenario>-values.yaml (cached)."""
    cache: dict[str, Rendered] = {}

    def get(scenario: str) -> Rendered:
        if scenario not in cache:
            cache[scenario] = render_with(helm_bin, [values_file(scenario)])
        return cache[scenario]

    yield get


@pytest.fixture(scope="session")
def render(helm_bin: Path) -> Callable[..., Rendered]:
    """``render(files=[...], sets=["key=<JSON>", ...], api_versions=[...])``: an uncached render
    with extra values (by default with no API discovery)."""

    def go(
        files: Sequence[Path] = (),
        sets: Sequence[str] = (),
        api_versions: Sequence[str] = (),
    ) -> Rendered:
        return render_with(helm_bin, files, sets, api_versions)

    return go


def collector_workload(r: Rendered) -> Manifest:
    """The collector's one workload: a StatefulSet (persistent queue) or a Deployment."""
    found = [
        d
        for d in r.docs
        if d["kind"] in ("StatefulSet", "Deployment")
        and d["metadata"]["name"].endswith("-collector")
    ]
    assert len(found) == 1, f"expected one collector workload, found {len(found)}"
    return found[0]


def containers(manifest: Manifest) -> list[dict[str, Any]]:
    """The containers of a workload's pod template, or of a Pod."""
    spec = manifest["spec"] if manifest["kind"] == "Pod" else manifest["spec"]["template"]["spec"]
    return list(spec.get("initContainers", [])) + list(spec["containers"])


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Environment variables by name (each the full EnvVar)."""
    env = container.get("env") or []
    names = [e["name"] for e in env]
    assert len(names) == len(set(names)), f"duplicate env vars in {container['name']}: {names}"
    return {e["name"]: e for e in env}
