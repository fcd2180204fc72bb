"""Small helpers over Grafana's own SDK (grafana-foundation-sdk, the release for Grafana 11.3):
every panel, query, variable and link is a typed builder from Grafana's schema; this module only
holds what the two dashboards share (data sources, query and variable shapes, the grid layout)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from grafana_foundation_sdk.builders import dashboard as board
from grafana_foundation_sdk.builders import prometheus, tempo
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat
from grafana_foundation_sdk.models.tempo import SearchTableType

PROM_DS = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
TEMPO_DS = model.DataSourceRef(type_val="tempo", uid="${tempo}")
GRID_WIDTH = 24

# A dashboard's items in display order: rows start a new line, panels fill it left to right.
Item = board.Row | Builder[model.Panel]


def prom(expr: str, legend: str = "__auto", *, instant: bool = False, ref: str = "A") -> prometheus.Dataquery:
    """One PromQL query; instant queries (as a table frame) feed stats, tables and bar gauges."""
    query = prometheus.Dataquery().ref_id(ref).datasource(PROM_DS).expr(expr).legend_format(legend)
    return query.instant().format(PromQueryFormat.TABLE) if instant else query.range()


def traceql(query: str, *, limit: int, ref: str = "A") -> tempo.TempoQuery:
    """One TraceQL search listing traces (the Tempo data source's table of traces)."""
    return (tempo.TempoQuery().ref_id(ref).datasource(TEMPO_DS).query_type("traceql").query(query)
            .limit(limit).table_type(SearchTableType.TRACES))


def thresholds(*steps: tuple[str, float | None]) -> board.ThresholdsConfig:
    """Absolute thresholds: (color, value from which it applies); the first step's value is None."""
    return board.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(
        [model.Threshold(color=color, value=value) for color, value in steps])


def override(matcher: str, options: str,
             properties: dict[str, object]) -> tuple[model.MatcherConfig, list[model.DynamicConfigValue]]:
    """A field override for ``with_override``: ``properties`` (Grafana's property ids, such as
    ``custom.axisPlacement``) on the fields ``matcher`` selects."""
    return (model.MatcherConfig(id_val=matcher, options=options),
            [model.DynamicConfigValue(id_val=key, value=value) for key, value in properties.items()])


def transformation(kind: str, options: dict[str, object]) -> model.DataTransformerConfig:
    return model.DataTransformerConfig(id_val=kind, options=options)


def layout(items: Sequence[Item]) -> list[Item]:
    """Give each item its id and grid position: rows start a new line, panels wrap at 24 columns.

    The SDK's own placement moves to the next line only after a line is full, so a panel wider
    than what is left would run past column 24; placing them here keeps every panel on the grid.
    """
    x = y = line_height = 0
    for number, item in enumerate(items, start=1):
        built = item.build()
        w, h = built.grid_pos.w, built.grid_pos.h
        if isinstance(item, board.Row) or x + w > GRID_WIDTH:
            x, y, line_height = 0, y + line_height, 0
        item.id(number).grid_pos(model.GridPos(x=x, y=y, w=w, h=h))
        x += w
        line_height = max(line_height, h)
        if isinstance(item, board.Row):
            x, y, line_height = 0, y + h, 0
    return list(items)


def row(title: str) -> board.Row:
    return board.Row(title).collapsed(False).grid_pos(model.GridPos(w=GRID_WIDTH, h=1))


def datasource_variable(name: str, label: str, plugin: str, default_uid: str) -> board.DatasourceVariable:
    return (board.DatasourceVariable(name).label(label).type(plugin).hide(model.VariableHide.DONT_HIDE)
            .current(model.VariableOption(text=default_uid, value=default_uid)).regex(""))


def query_variable(name: str, label: str, query: str) -> board.QueryVariable:
    """A multi-value Prometheus label variable whose "All" is the regex ``.*``."""
    return (board.QueryVariable(name).label(label).datasource(PROM_DS)
            .query({"query": query, "refId": f"{name}-values"})
            .include_all(True).all_value(".*").multi(True).refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(model.VariableSort.ALPHABETICAL_ASC).hide(model.VariableHide.DONT_HIDE)
            .current(model.VariableOption(text=["All"], value=["$__all"])))


def textbox_variable(name: str, label: str, default: str) -> board.TextBoxVariable:
    return (board.TextBoxVariable(name).label(label).default_value(default).hide(model.VariableHide.DONT_HIDE)
            .current(model.VariableOption(text=default, value=default)))


def dashboard(uid: str, title: str, description: str, variables: Sequence[Builder[model.VariableModel]],
              items: Sequence[Item], links: Sequence[board.DashboardLink] = ()) -> model.Dashboard:
    built = (board.Dashboard(title).uid(uid).description(description).tags(["mast-otel"]).editable()
             .tooltip(model.DashboardCursorSync.CROSSHAIR).refresh("30s").version(1).time("now-6h", "now")
             .timezone("browser").fiscal_year_start_month(0).live_now(False)
             .links(list(links)).variables(list(variables)))
    for item in layout(items):
        if isinstance(item, board.Row):
            built.with_row(item)
        else:
            built.with_panel(item)
    return built.build()


def to_json(dashboard_model: model.Dashboard) -> dict[str, object]:
    """The dashboard as plain JSON values, as Grafana imports it."""
    return json.loads(json.dumps(dashboard_model, cls=JSONEncoder))
