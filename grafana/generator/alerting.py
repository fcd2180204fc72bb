"""Grafana-managed alert rules equivalent to the Prometheus rules in deploy/prometheus/rules.

The Prometheus files stay the single source: each Grafana rule runs the same alert expression
with the recording rules it reads expanded inline (so it needs no Prometheus rule evaluation),
the same ``for``, labels and annotations. A rule fires while its query returns a series, as
Prometheus alerts do. They are provisioned paused: route alerts through Alertmanager or
through Grafana, not both, or every page arrives twice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from generator.datasources import PROMETHEUS_UID

FOLDER = "mast-otel"


def load_groups(rules_dir: Path) -> list[dict[str, Any]]:
    """Every rule group in the Prometheus rule files, in file name order."""
    groups: list[dict[str, Any]] = []
    for path in sorted(rules_dir.glob("*.yml")):
        groups.extend(yaml.safe_load(path.read_text())["groups"])
    return groups


def expand(expr: str, recorded: dict[str, str]) -> str:
    """``expr`` with every recorded series name replaced by its (expanded) expression."""
    if not recorded:
        return expr
    names = "|".join(re.escape(n) for n in sorted(recorded, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w:])({names})(?![\w:{{])")
    previous = None
    while previous != expr:
        previous, expr = expr, pattern.sub(lambda m: f"({recorded[m.group(1)]})", expr)
    return expr


def _uid(alert: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", alert).lower()[:40]


EXTERNAL_LABEL = re.compile(r'\{\{\s*or \$externalLabels\.\w+ "([^"]*)"\s*\}\}')


def _grafana_template(text: str) -> str:
    """The annotation as a Grafana template.

    Prometheus' ``$value`` is the query result; in Grafana that is the reduced query B. Grafana
    has no external labels: their fallbacks are written in (edit them in the provisioned file).
    """
    return EXTERNAL_LABEL.sub(lambda m: m.group(1), text).replace("$value", "$values.B.Value")


def grafana_rule(rule: dict[str, Any], recorded: dict[str, str]) -> dict[str, Any]:
    return {
        "uid": _uid(rule["alert"]),
        "title": rule["alert"],
        "condition": "C",
        "data": [
            {"refId": "A", "relativeTimeRange": {"from": 600, "to": 0}, "datasourceUid": PROMETHEUS_UID,
             "model": {"refId": "A", "expr": expand(" ".join(rule["expr"].split()), recorded), "instant": True,
                       "range": False, "intervalMs": 15000, "maxDataPoints": 43200}},
            {"refId": "B", "datasourceUid": "__expr__",
             "model": {"refId": "B", "type": "reduce", "expression": "A", "reducer": "last", "settings": {"mode": "dropNN"}}},
            # Any returned series fires, whatever its value (up == 0 returns 0).
            {"refId": "C", "datasourceUid": "__expr__",
             "model": {"refId": "C", "type": "math", "expression": "is_number($B)"}},
        ],
        "noDataState": "OK",
        "execErrState": "Error",
        "for": rule.get("for", "0s"),
        "labels": dict(rule.get("labels", {})),
        "annotations": {k: _grafana_template(v) for k, v in rule.get("annotations", {}).items()},
        "isPaused": True,
    }


def provisioning(rules_dir: Path) -> dict[str, Any]:
    groups = load_groups(rules_dir)
    recorded = {r["record"]: " ".join(r["expr"].split()) for g in groups for r in g["rules"] if "record" in r}
    alert_groups = [g for g in groups if any("alert" in r for r in g["rules"])]
    return {
        "apiVersion": 1,
        "groups": [
            {"orgId": 1, "name": g["name"], "folder": FOLDER, "interval": "1m",
             "rules": [grafana_rule(r, recorded) for r in g["rules"] if "alert" in r]}
            for g in alert_groups
        ],
    }


def prometheus_rule(rules_dir: Path) -> dict[str, Any]:
    """The same recording and alert rules as a Prometheus Operator ``PrometheusRule``, so a
    cluster with the Operator loads exactly the files promtool tests."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        # Set the labels your Prometheus' ruleSelector matches (kube-prometheus-stack: release: <name>).
        "metadata": {"name": "mast-otel", "labels": {"app.kubernetes.io/name": "mast-otel-processor"}},
        "spec": {"groups": load_groups(rules_dir)},
    }
