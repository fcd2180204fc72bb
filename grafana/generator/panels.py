"""Small builders for Grafana dashboard JSON (schema 39, Grafana 10/11): plain dicts only."""

from __future__ import annotations

from typing import Any

PROMETHEUS_UID = "mast-prometheus"
TEMPO_UID = "mast-tempo"
PROM_DS = {"type": "prometheus", "uid": "${datasource}"}
TEMPO_DS = {"type": "tempo", "uid": "${tempo}"}
GRID_WIDTH = 24


def prom(expr: str, legend: str = "__auto", *, instant: bool = False, ref: str = "A") -> dict[str, Any]:
    """One PromQL query; instant queries feed stats, tables and bar gauges."""
    target = {"refId": ref, "datasource": PROM_DS, "expr": expr, "legendFormat": legend,
              "range": not instant, "instant": instant}
    if instant:
        target["format"] = "table"
    return target


def panel(kind: str, title: str, description: str, targets: list[dict[str, Any]], *, width: int = 12,
          height: int = 8, unit: str = "short", datasource: dict[str, str] = PROM_DS,
          options: dict[str, Any] | None = None, field_config: dict[str, Any] | None = None,
          transformations: list[dict[str, Any]] | None = None,
          overrides: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A panel without position; :func:`layout` places panels left to right, top to bottom."""
    defaults: dict[str, Any] = {"unit": unit}
    defaults.update(field_config or {})
    return {
        "type": kind, "title": title, "description": description, "datasource": datasource,
        "targets": targets, "gridPos": {"w": width, "h": height},
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": options or {}, "transformations": transformations or [],
    }


def row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "gridPos": {"w": GRID_WIDTH, "h": 1}}


def layout(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Assign ids and grid positions: rows start a new line, panels wrap at 24 columns."""
    x = y = line_height = 0
    placed = []
    for number, item in enumerate(panels, start=1):
        w, h = item["gridPos"]["w"], item["gridPos"]["h"]
        if item["type"] == "row" or x + w > GRID_WIDTH:
            x, y, line_height = 0, y + line_height, 0
        placed.append({"id": number, **item, "gridPos": {"x": x, "y": y, "w": w, "h": h}})
        x += w
        line_height = max(line_height, h)
        if item["type"] == "row":
            x, y, line_height = 0, y + h, 0
    return placed


def datasource_variable(name: str, label: str, plugin: str, default_uid: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "datasource", "query": plugin, "hide": 0,
            "current": {"text": default_uid, "value": default_uid}, "regex": "", "refresh": 1}


def query_variable(name: str, label: str, query: str) -> dict[str, Any]:
    """A multi-value Prometheus label variable whose "All" is the regex ``.*``."""
    return {"name": name, "label": label, "type": "query", "datasource": PROM_DS,
            "definition": query, "query": {"query": query, "refId": f"{name}-values"},
            "includeAll": True, "allValue": ".*", "multi": True, "refresh": 2, "sort": 1,
            "current": {"text": ["All"], "value": ["$__all"]}, "hide": 0}


def textbox_variable(name: str, label: str, default: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "textbox", "query": default, "hide": 0,
            "current": {"text": default, "value": default}}


def dashboard(uid: str, title: str, description: str, variables: list[dict[str, Any]],
              panels: list[dict[str, Any]], links: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "uid": uid, "title": title, "description": description, "tags": ["mast-otel"],
        "editable": True, "graphTooltip": 1, "refresh": "30s", "schemaVersion": 39, "version": 1,
        "time": {"from": "now-6h", "to": "now"}, "timezone": "browser", "timepicker": {},
        "annotations": {"list": []}, "links": links or [], "fiscalYearStartMonth": 0, "liveNow": False,
        "templating": {"list": variables}, "panels": layout(panels),
    }


def queries(dashboard_json: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(panel title, target) for every query of every panel: what the e2e test replays."""
    return [(p["title"], t) for p in dashboard_json["panels"] for t in p.get("targets", [])]
