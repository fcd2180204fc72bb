"""The committed dashboards against Grafana's schema as the SDK models it (grafana-foundation-sdk,
the release for the Grafana version the compose stack runs).

Read back through the SDK's models and written out again, every key of a dashboard that only uses
fields of the schema comes back with its value (reading back adds the schema's defaults, such as
an empty ``custom`` field config, which is not a difference); a misspelt or unknown key (a hand
edit, a raw dict in the generator) is dropped on the way and is reported. This checks field names, including
each panel type's options and custom field config; it does not check value types or enum values,
and no Grafana server renders the dashboards here.
"""

from __future__ import annotations

import copy
import json

import pytest

from obsfiles import dashboards

pytest.importorskip("grafana_foundation_sdk", reason="the dashboards extra (Grafana's SDK) needs Python 3.11+")

from grafana_foundation_sdk.cog.encoder import JSONEncoder  # noqa: E402
from grafana_foundation_sdk.cog.plugins import register_default_plugins  # noqa: E402
from grafana_foundation_sdk.models.dashboard import Dashboard  # noqa: E402

# Panel options, custom field config and queries are read with their plugin's model (piechart,
# table, prometheus, tempo, ...), not kept as free-form objects.
register_default_plugins()


def read_back(board: dict) -> dict:
    """``board`` parsed into the SDK's typed models and written out again."""
    return json.loads(json.dumps(Dashboard.from_json(copy.deepcopy(board)), cls=JSONEncoder))


def unknown_keys(board: dict) -> list[str]:
    """Paths of the keys in ``board`` that reading back through the schema's models loses or alters."""
    found: list[str] = []

    def walk(mine: object, schema: object, path: str) -> None:
        if isinstance(mine, dict) and isinstance(schema, dict):
            for key, value in mine.items():
                if key not in schema:
                    found.append(f"{path}.{key}")
                else:
                    walk(value, schema[key], f"{path}.{key}")
        elif isinstance(mine, list) and isinstance(schema, list) and len(mine) == len(schema):
            for index, (a, b) in enumerate(zip(mine, schema)):
                walk(a, b, f"{path}[{index}]")
        elif mine != schema:
            found.append(f"{path} (value changed)")

    walk(board, read_back(board), "")
    return found


@pytest.mark.parametrize("name", sorted(dashboards()))
def test_every_field_of_the_dashboard_is_in_grafanas_schema(name):
    board = dashboards()[name]
    assert unknown_keys(board) == [], name


def test_a_field_outside_the_schema_is_found():
    """The check can fail: a misspelt panel key, query field, option of a panel type or custom
    field config, and a variable field the schema does not have."""
    board = dashboards()["agent-failure-modes.json"]
    pie = next(i for i, p in enumerate(board["panels"]) if p["type"] == "piechart")
    broken = copy.deepcopy(board)
    broken["panels"][1]["fieldconfig"] = {"defaults": {}}
    broken["panels"][1]["targets"][0]["legendformat"] = "{{model}}"
    broken["panels"][5]["fieldConfig"]["defaults"]["custom"] = {"axisSoftmin": 0}
    broken["panels"][pie]["options"]["pietype"] = "donut"
    broken["templating"]["list"][2]["definition"] = "label_values(mast_traces_total, service_name)"
    assert unknown_keys(broken) == [
        ".panels[1].targets[0].legendformat", ".panels[1].fieldconfig",
        ".panels[5].fieldConfig.defaults.custom.axisSoftmin", f".panels[{pie}].options.pietype",
        ".templating.list[2].definition"]
