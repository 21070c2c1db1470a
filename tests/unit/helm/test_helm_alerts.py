"""The chart's alert rules, as rendered, pass `promtool check rules` and the unit tests in
alert_rules_test.yaml (`promtool test rules`, synthetic series)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.unit.helm.conftest import SCENARIOS, Rendered, run_promtool, values_file

HERE = Path(__file__).parent
# The scenarios that turn the alerts on (prometheusRule.enabled is off by default).
RULE_SCENARIOS = [
    s
    for s in SCENARIOS
    if (yaml.safe_load(values_file(s).read_text()) or {}).get("prometheusRule", {}).get("enabled")
]


def _write_rules(r: Rendered, path: Path) -> int:
    rules = r.of_kind("PrometheusRule")
    assert len(rules) == 1
    path.write_text(yaml.safe_dump({"groups": rules[0]["spec"]["groups"]}, sort_keys=False))
    return sum(len(g["rules"]) for g in rules[0]["spec"]["groups"])


def test_two_scenarios_render_the_alerts() -> None:
    assert RULE_SCENARIOS == ["monitoring", "tls-sasl-existingsecret"]


@pytest.mark.parametrize("scenario", RULE_SCENARIOS)
def test_promtool_check_rules(
    promtool_bin: Path, rendered: Callable[[str], Rendered], scenario: str, tmp_path: Path
) -> None:
    n = _write_rules(rendered(scenario), tmp_path / "rules.yaml")
    proc = run_promtool(promtool_bin, "check", "rules", "rules.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {n} rules found" in proc.stdout


def test_promtool_unit_tests(
    promtool_bin: Path, rendered: Callable[[str], Rendered], tmp_path: Path
) -> None:
    _write_rules(rendered("monitoring"), tmp_path / "rules.yaml")
    shutil.copy(HERE / "alert_rules_test.yaml", tmp_path / "alert_rules_test.yaml")
    proc = run_promtool(promtool_bin, "test", "rules", "alert_rules_test.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_promtool_unit_tests_can_fail(
    promtool_bin: Path, render: Callable[..., Rendered], tmp_path: Path
) -> None:
    # An objective of 0.5 (a budget of 50 %) cannot be burnt 6x: the groundedness case breaks.
    _write_rules(
        render(sets=["prometheusRule.enabled=true", "prometheusRule.groundedness.objective=0.5"]),
        tmp_path / "rules.yaml",
    )
    shutil.copy(HERE / "alert_rules_test.yaml", tmp_path / "alert_rules_test.yaml")
    proc = run_promtool(promtool_bin, "test", "rules", "alert_rules_test.yaml", cwd=tmp_path)
    assert proc.returncode != 0
    assert "RagtraceGroundednessBudgetBurn" in proc.stdout + proc.stderr


def test_every_alert_links_its_runbook_section(rendered: Callable[[str], Rendered]) -> None:
    runbooks = (HERE.parents[2] / "docs" / "runbooks.md").read_text()
    # GitHub's anchor of "## RagtraceX" is "ragtracex".
    anchors = {line[3:].strip().lower() for line in runbooks.splitlines() if line.startswith("## ")}
    rule = rendered("monitoring").of_kind("PrometheusRule")[0]
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert alerts
    for a in alerts:
        url = a["annotations"]["runbook_url"]
        base, _, anchor = url.partition("#")
        assert base.endswith("/docs/runbooks.md"), url
        assert anchor == a["alert"].lower() and anchor in anchors, a["alert"]
