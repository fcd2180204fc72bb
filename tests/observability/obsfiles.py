"""Paths and loaders shared by the observability tests (dashboards, rules, deployment files)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "grafana"
DEPLOY = ROOT / "deploy"
COLLECTOR = ROOT / "collector"
RULES_DIR = DEPLOY / "prometheus" / "rules"
PROMTOOL_TESTS = DEPLOY / "prometheus" / "tests" / "mast-alerts.test.yml"

# The dashboard generator is repository tooling, not part of the installed package.
if str(GRAFANA) not in sys.path:
    sys.path.insert(0, str(GRAFANA))


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text())


def load_yaml_all(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def dashboards() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((GRAFANA / "dashboards").glob("*.json"))}


def rule_groups() -> list[dict]:
    return [g for p in sorted(RULES_DIR.glob("*.yml")) for g in load_yaml(p)["groups"]]


def alert_rules() -> list[dict]:
    return [r for g in rule_groups() for r in g["rules"] if "alert" in r]
