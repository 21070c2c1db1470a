"""scripts/provision.sh and scripts/services/paths.py agree on where things are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.services import paths


@pytest.mark.parametrize("manifest", [paths.KAFKA_POM, paths.COLLECTOR_MANIFEST])
def test_python_cache_key_is_the_shell_one(manifest: Path) -> None:
    shell = subprocess.run(
        f"sha256sum '{manifest}' | cut -c1-16",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert paths.manifest_key(manifest) == shell
    assert len(shell) == 16


def test_missing_builds_say_to_run_make_provision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGTRACE_CACHE", str(tmp_path))
    for finder in (paths.kafka_libs, paths.otelcol, paths.helm, paths.kube_score):
        with pytest.raises(paths.NotProvisioned, match=r"Run `make provision`") as info:
            finder()
        assert str(tmp_path) in str(info.value)
    monkeypatch.setenv("RAGTRACE_REDIS_SERVER", str(tmp_path / "nope"))
    with pytest.raises(paths.NotProvisioned, match="redis-server"):
        paths.redis_server()


def test_cache_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_CACHE", str(tmp_path))
    assert paths.cache_dir() == tmp_path
    monkeypatch.delenv("RAGTRACE_CACHE")
    assert paths.cache_dir() == Path.home() / ".cache" / "ragtrace"


def test_unknown_component_fails_loudly(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "provision.sh"), "grafana"],
        capture_output=True,
        text=True,
        env={"RAGTRACE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 1
    assert "provision: ERROR: unknown component 'grafana'" in result.stderr
    assert not list(ROOT.glob("scripts/kafka/target"))  # nothing lands in the work tree
