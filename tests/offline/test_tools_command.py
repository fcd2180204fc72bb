"""``mast-otel tools``: every tool seen, its kind and why, from trace files or a processor's store."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mast_otel.processors.cli import main
from mast_otel.processors.config import HintsConfig
from mast_otel.processors.hints import derive_hints
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.attribution import build_diagnosis
from mast_otel.processors.service.store.run_steps import step_rows, steps_json
from mast_otel.processors.service.store.diagnoses import DiagnosisStore

FIXTURE = str(Path(__file__).parent.parent / "fixtures" / "runs" / "sre_steplist.json")
CORPUS = Path(__file__).parent.parent / "frameworks" / "corpus"
RECORDINGS = [str(p) for p in sorted(CORPUS.glob("*/unchecked.json"))]


def test_tools_from_framework_traces_say_how_each_kind_was_found(capsys, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("hints:\n  tools:\n    - {name: get_pods, kind: other}\n")
    assert main(["tools", *RECORDINGS, "--format", "json", "--config", str(config)]) == 0
    tools = {t["tool"]: t for t in json.loads(capsys.readouterr().out)}
    assert (tools["restart_deployment"]["kind"], tools["restart_deployment"]["why"]) == ("write", "inferred")
    assert "'restart'" in tools["restart_deployment"]["reasons"][0]
    assert (tools["get_pods"]["kind"], tools["get_pods"]["why"]) == ("other", "catalog")
    assert tools["restart_deployment"]["calls"] == len(RECORDINGS)


def test_the_yaml_output_is_a_catalog_the_config_accepts(capsys):
    assert main(["tools", *RECORDINGS, "--format", "yaml"]) == 0
    catalog = yaml.safe_load(capsys.readouterr().out)
    hints = HintsConfig(**catalog["hints"])
    assert {r.name: r.kind for r in hints.tools} == {"get_pods": "read", "restart_deployment": "write"}


def test_tools_emitted_by_the_instrumentation_are_marked_so(capsys):
    assert main(["tools", FIXTURE]) == 0
    out = capsys.readouterr().out
    assert "emitted (mast.tool.kind)" in out and "get_pods" in out


def test_tools_from_a_processors_store(capsys, tmp_path):
    path = tmp_path / "store.sqlite"
    store = DiagnosisStore(path)
    for run in load_runs(RECORDINGS[:2]):
        derive_hints(run)
        d = build_diagnosis(run, [])
        store.save_many([(d, None)], step_texts={run.trace_id: steps_json(step_rows(run))})
    store.close()
    assert main(["tools", "--store", str(path), "--format", "json"]) == 0
    tools = {t["tool"]: t for t in json.loads(capsys.readouterr().out)}
    assert (tools["restart_deployment"]["kind"], tools["restart_deployment"]["why"], tools["restart_deployment"]["calls"]) \
        == ("write", "inferred", 2)
    assert main(["tools", "--store", str(tmp_path / "missing.sqlite")]) == 2
    assert "no such store" in capsys.readouterr().err


def test_unreadable_input_is_a_message_not_a_traceback(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a trace"}')
    assert main(["tools", str(bad)]) == 2
    assert "mast-otel tools:" in capsys.readouterr().err
    assert main(["tools"]) == 2
