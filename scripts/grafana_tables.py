"""Grafana dashboards described as tables of rows, built with grafana-foundation-sdk.

A ``Board`` holds its variables, annotations and sections: a ``Row`` opens a section, a ``Panel``
names its title, description, queries, unit, width and what it draws beyond the series (an alert
threshold, sample-count bars). ``build`` turns one table into the SDK's dashboard; the SDK's typed
builders produce the panel, target and variable shapes of the pinned Grafana schema and lay out
gridPos. ``render`` is its reproducible JSON text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from grafana_foundation_sdk.builders import barchart, common, prometheus, table, tempo, timeseries
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as common_model
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models import prometheus as prom_model

__all__ = [
    "Annotation",
    "Board",
    "Panel",
    "PanelKind",
    "Query",
    "Row",
    "Variable",
    "build",
    "promql",
    "render",
    "traceql",
]

PanelKind = Literal["timeseries", "cells", "traces"]


@dataclass(frozen=True)
class Query:
    """One target of a panel; ``ref`` defaults to its position's letter (A, B, C, …)."""

    expr: str
    legend: str = ""
    ref: str = ""


@dataclass(frozen=True)
class Row:
    """A section header: the panels after it belong to it."""

    title: str


@dataclass(frozen=True)
class Panel:
    """One panel.

    ``kind``: ``timeseries`` (PromQL over time), ``cells`` (a bar chart of one instant PromQL
    table) or ``traces`` (a table of a Tempo TraceQL search, 20 traces). ``fraction`` pins the
    axis to 0..1; ``threshold`` draws a dashed red line (an alert's threshold); ``counts`` is
    the ref of the query drawn as sample-count bars on a right-hand axis; ``stacked`` stacks
    the series to 100 %.
    """

    title: str
    description: str
    queries: tuple[Query, ...]
    unit: str = "short"
    width: int = 12
    kind: PanelKind = "timeseries"
    fraction: bool = False
    threshold: float | None = None
    counts: str | None = None
    stacked: bool = False

    def targets(self) -> tuple[Query, ...]:
        """The queries with every ``ref`` filled in."""
        return tuple(
            q if q.ref else Query(q.expr, q.legend, chr(ord("A") + i))
            for i, q in enumerate(self.queries)
        )


@dataclass(frozen=True)
class Variable:
    """A dashboard variable: a datasource picker, a multi-value label query or a text box.

    ``value``: the datasource type, the ``label_values()`` query or the text box's default.
    """

    name: str
    label: str
    kind: Literal["datasource", "query", "text"]
    value: str


@dataclass(frozen=True)
class Annotation:
    """A Prometheus annotation; ``title`` and ``tags`` are Grafana options the SDK lacks
    (what the marker says, which labels become its tags)."""

    name: str
    expr: str
    color: str
    title: str
    tags: str


@dataclass(frozen=True)
class Board:
    """One dashboard: its identity, variables (in picker order), annotations and sections."""

    title: str
    uid: str
    description: str
    tags: tuple[str, ...]
    variables: tuple[Variable, ...]
    sections: tuple[Row | Panel, ...]
    annotations: tuple[Annotation, ...] = ()


def _queries(board: Board, kinds: tuple[PanelKind, ...]) -> dict[str, str]:
    return {
        f"{panel.title}:{q.ref}": q.expr
        for panel in board.sections
        if isinstance(panel, Panel) and panel.kind in kinds
        for q in panel.targets()
    }


def promql(board: Board) -> dict[str, str]:
    """``panel title:refId`` (``annotation:name``) -> every PromQL expression of ``board``."""
    annotations = {f"annotation:{a.name}": a.expr for a in board.annotations}
    return {**_queries(board, ("timeseries", "cells")), **annotations}


def traceql(board: Board) -> dict[str, str]:
    """``panel title:refId`` -> every TraceQL expression of ``board``."""
    return _queries(board, ("traces",))


_PROMETHEUS = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
_TEMPO = model.DataSourceRef(type_val="tempo", uid="${tempo}")
# Overrides that draw a sample-count query as bars on a right-hand axis in plain numbers.
_COUNT_BARS = [
    model.DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
    model.DynamicConfigValue(id_val="custom.drawStyle", value="bars"),
    model.DynamicConfigValue(id_val="custom.fillOpacity", value=30),
    model.DynamicConfigValue(id_val="unit", value="short"),
    model.DynamicConfigValue(id_val="min", value=0),
    model.DynamicConfigValue(id_val="max", value=None),
]


def _prometheus_target(q: Query) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(q.expr).legend_format(q.legend).ref_id(q.ref)


def _timeseries(panel: Panel) -> timeseries.Panel:
    p = timeseries.Panel().datasource(_PROMETHEUS).unit(panel.unit)
    for q in panel.targets():
        p = p.with_target(_prometheus_target(q))
    if panel.fraction:
        p = p.min(0).max(1)
    if panel.stacked:
        stacking = common.StackingConfig().mode(common_model.StackingMode.NORMAL)
        p = p.stacking(stacking).fill_opacity(60)
    if panel.threshold is not None:
        steps = [
            model.Threshold(value=None, color="green"),
            model.Threshold(value=panel.threshold, color="red"),
        ]
        dashed = common_model.GraphThresholdsStyleMode.DASHED
        p = p.thresholds(
            dash.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(steps)
        ).thresholds_style(common.GraphThresholdsStyleConfig().mode(dashed))
    if panel.counts is not None:
        p = p.override_by_query(panel.counts, _COUNT_BARS)
    return p.height(8)


def _cells(panel: Panel) -> barchart.Panel:
    p = barchart.Panel().datasource(_PROMETHEUS).unit(panel.unit)
    for q in panel.targets():
        instant_table = _prometheus_target(q).instant().format(prom_model.PromQueryFormat.TABLE)
        p = p.with_target(instant_table)
    return p.height(8)


def _traces(panel: Panel) -> table.Panel:
    p = table.Panel().datasource(_TEMPO)
    for q in panel.targets():
        p = p.with_target(
            tempo.TempoQuery().ref_id(q.ref).query_type("traceql").query(q.expr).limit(20)
        )
    return p.height(10)


def _panel(panel: Panel, panel_id: int) -> Builder[model.Panel]:
    p: timeseries.Panel | barchart.Panel | table.Panel
    if panel.kind == "cells":
        p = _cells(panel)
    elif panel.kind == "traces":
        p = _traces(panel)
    else:
        p = _timeseries(panel)
    return p.id(panel_id).title(panel.title).description(panel.description).span(panel.width)


def _variable(v: Variable) -> Builder[model.VariableModel]:
    if v.kind == "datasource":
        return dash.DatasourceVariable(v.name).label(v.label).type(v.value)
    if v.kind == "text":
        return dash.TextBoxVariable(v.name).label(v.label).default_value(v.value)
    return (
        dash.QueryVariable(v.name)
        .label(v.label)
        .datasource(_PROMETHEUS)
        .query(v.value)
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
    )


def build(board: Board) -> dash.Dashboard:
    """The SDK dashboard of one table: last 6 hours, refreshed every minute; panel and row IDs
    count up from 1 in table order (unique, and stable across regenerations)."""
    d = (
        dash.Dashboard(board.title)
        .uid(board.uid)
        .description(board.description)
        .tags(list(board.tags))
        .time("now-6h", "now")
        .refresh("1m")
    )
    for v in board.variables:
        d = d.with_variable(_variable(v))
    for a in board.annotations:
        query = dash.AnnotationQuery().name(a.name).datasource(_PROMETHEUS).enable(True)
        d = d.annotation(query.icon_color(a.color).expr(a.expr))
    for panel_id, section in enumerate(board.sections, start=1):
        if isinstance(section, Row):
            d = d.with_row(dash.Row(section.title).id(panel_id))
        else:
            d = d.with_panel(_panel(section, panel_id))
    return d


def render(board: Board) -> str:
    """The dashboard's JSON text: keys sorted, two-space indent, a final newline."""
    data = json.loads(json.dumps(build(board).build(), cls=JSONEncoder))
    options = {a.name: {"titleFormat": a.title, "tagKeys": a.tags} for a in board.annotations}
    for annotation in data.get("annotations", {}).get("list", []):
        annotation.update(options.get(annotation["name"], {}))
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
