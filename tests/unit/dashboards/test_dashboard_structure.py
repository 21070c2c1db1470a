"""Structure of the Grafana dashboards shipped in the chart (no Grafana server exists here):
generated output committed, unique IDs, a sane grid, datasource variables, every variable
defined, every PromQL metric a known Prometheus name and valid PromQL (promtool)."""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ragtrace import semconv
from scripts import dashboards
from scripts.services import paths
from tests.unit.helm.conftest import run_promtool

FILES = sorted(dashboards.DASHBOARD_DIR.glob("*.json"))
BOARDS = {p.name: json.loads(p.read_text()) for p in FILES}
BUILTIN_VARS = {"__rate_interval", "__range", "__interval"}
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_METRIC = re.compile(r"\b((?:ragtrace|gen_ai_client)_[a-zA-Z0-9_]+)\b")


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in board["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows carry theirs
    return out


def prometheus_targets(board: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (p["title"], t)
        for p in panels(board)
        if p.get("datasource", {}).get("type") == "prometheus"
        for t in p.get("targets", [])
    ]


def all_promql(board: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for _, t in prometheus_targets(board)]
    exprs += [a["expr"] for a in board.get("annotations", {}).get("list", []) if "expr" in a]
    exprs += [v["query"] for v in board["templating"]["list"] if v["type"] == "query"]
    return exprs


def test_the_two_dashboards_exist() -> None:
    assert sorted(BOARDS) == ["rag-quality.json", "ragtrace-operations.json"]
    assert {b["title"] for b in BOARDS.values()} == {"RAG quality", "ragtrace operations"}


def test_committed_json_is_the_generators_output() -> None:
    assert dashboards.build_all() == {p.name: p.read_text() for p in FILES}, (
        "stale dashboards: run python scripts/dashboards.py"
    )


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_identity(name: str) -> None:
    b = BOARDS[name]
    assert re.fullmatch(r"[a-z0-9-]{1,40}", b["uid"]), b["uid"]
    assert b["title"].strip() and isinstance(b["schemaVersion"], int) and b["schemaVersion"] >= 39
    assert "ragtrace" in b["tags"]
    assert len({x["uid"] for x in BOARDS.values()}) == len(BOARDS)


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_panel_ids_unique_and_titled(name: str) -> None:
    ps = panels(BOARDS[name])
    ids = [p["id"] for p in ps]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids), ids
    for p in ps:
        assert p["title"].strip(), p
        if p["type"] != "row":
            assert p.get("description", "").strip(), f"{p['title']}: no description"
            assert p["targets"], f"{p['title']}: no query"
            refs = [t["refId"] for t in p["targets"]]
            assert len(refs) == len(set(refs)), f"{p['title']}: duplicate refIds"


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_grid_positions_fit_and_do_not_overlap(name: str) -> None:
    boxes = []
    for p in panels(BOARDS[name]):
        g = p["gridPos"]
        assert set(g) == {"h", "w", "x", "y"}
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0
        assert g["x"] + g["w"] <= 24, f"{p['title']} overflows the 24-column grid"
        boxes.append((p["title"], g))
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        overlap = (
            a["x"] < b["x"] + b["w"]
            and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"]
            and b["y"] < a["y"] + a["h"]
        )
        assert not overlap, f"{ta!r} overlaps {tb!r}"


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_datasources_are_variables(name: str) -> None:
    b = BOARDS[name]
    variables = {v["name"]: v for v in b["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for p in panels(b):
        if p["type"] == "row":
            continue
        ds = p["datasource"]
        assert ds in (
            {"type": "prometheus", "uid": "${datasource}"},
            {"type": "tempo", "uid": "${tempo}"},
        ), f"{p['title']}: {ds}"
        if ds["type"] == "tempo":
            assert variables["tempo"] == {
                **variables["tempo"],
                "type": "datasource",
                "query": "tempo",
            }
    for v in variables.values():
        if v["type"] == "query":
            assert v["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_every_variable_used_is_defined(name: str) -> None:
    b = BOARDS[name]
    defined = {v["name"] for v in b["templating"]["list"]} | BUILTIN_VARS
    texts = all_promql(b) + [t.get("query", "") for p in panels(b) for t in p.get("targets", [])]
    for text in texts:
        for var in _VAR.findall(text):
            assert var in defined, f"${var} is not a variable of {name}"


def _known_series() -> set[str]:
    names = set()
    # The consumers' metrics, and those of the apps' SDK and the embedded receiver.
    for prom in [*dashboards.metric_names().values(), *dashboards.APP_METRICS.values()]:
        names.add(prom)
        names.update(f"{prom}_{s}" for s in ("bucket", "sum", "count"))
    return names


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_promql_uses_only_known_metric_names(name: str) -> None:
    known = _known_series()
    for expr in all_promql(BOARDS[name]):
        for metric in _METRIC.findall(expr):
            assert metric in known, f"unknown metric {metric} in {expr!r}"


def test_every_consumer_metric_is_on_a_dashboard_and_named_once() -> None:
    names = dashboards.metric_names()
    # Section G of the contracts: every METRIC_* but the application SDK's own and the embedded
    # evaluator's OTLP receiver (`ragtrace serve`, not deployed by the chart).
    not_deployed = {
        semconv.METRIC_SDK_ERRORS,
        semconv.METRIC_SDK_DROPPED,
        semconv.METRIC_SDK_OVERSIZED,
        semconv.METRIC_RECEIVER_REJECTED,
    }
    consumer_metrics = {
        v for k, v in vars(semconv).items() if k.startswith("METRIC_")
    } - not_deployed
    assert set(names) == consumer_metrics
    assert len(set(names.values())) == len(names)
    used = set()
    for b in BOARDS.values():
        for expr in all_promql(b):
            used.update(_METRIC.findall(expr))
    for otel, prom in names.items():
        assert used & {prom, f"{prom}_bucket", f"{prom}_sum", f"{prom}_count"}, (
            f"{otel} ({prom}) is on no dashboard"
        )


def test_quality_dashboard_worst_traces_use_tempo_traceql() -> None:
    b = BOARDS["rag-quality.json"]
    tempo = [p for p in panels(b) if p.get("datasource", {}).get("type") == "tempo"]
    queries = sorted(t["query"] for p in tempo for t in p["targets"])
    assert queries == [
        "{ span.ragtrace.eval.groundedness < $groundedness_below }",
        "{ span.ragtrace.eval.recall < $recall_below }",
    ]
    assert {t["queryType"] for p in tempo for t in p["targets"]} == {"traceql"}
    assert semconv.EVAL_GROUNDEDNESS in queries[0] and semconv.EVAL_RECALL in queries[1]


def test_quality_dashboard_marks_judge_model_and_prompt_changes() -> None:
    (annotation,) = BOARDS["rag-quality.json"]["annotations"]["list"]
    assert annotation["name"] == dashboards.JUDGE_CHANGE == "Judge model or prompt change"
    groundedness = dashboards.metric_names()[semconv.METRIC_GROUNDEDNESS]
    by = f"{semconv.ATTR_JUDGE_MODEL}, {semconv.ATTR_JUDGE_PROMPT}"
    assert annotation["expr"] == (
        f"count by ({by}) ({groundedness}_count)\nunless\n"
        f"count by ({by}) ({groundedness}_count offset 30m)"
    )
    assert annotation["tagKeys"] == "judge_model,judge_prompt"
    assert annotation["titleFormat"] == "Judge {{judge_model}}, prompt {{judge_prompt}}"
    assert annotation["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert annotation["enable"] is True


def substitute(expr: str, rate_interval: str = "1m", range_: str = "10m") -> str:
    """PromQL with the dashboard variables replaced as Grafana would (All = .*)."""
    out = expr.replace("$__rate_interval", rate_interval).replace("$__range", range_)
    out = out.replace("$__interval", "15s")
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", ".*", out)


def test_promql_is_valid_for_promtool(tmp_path: Path) -> None:
    try:
        promtool = paths.promtool()
    except paths.NotProvisioned as exc:
        pytest.fail(str(exc), pytrace=False)
    rules = []
    for i, expr in enumerate(
        e for b in BOARDS.values() for e in all_promql(b) if not e.startswith("label_values(")
    ):
        rules.append({"record": f"dashboard:expr_{i}", "expr": substitute(expr)})
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    proc = run_promtool(promtool, "check", "rules", "r.yaml", cwd=tmp_path, timeout_s=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(rules)} rules found" in proc.stdout
