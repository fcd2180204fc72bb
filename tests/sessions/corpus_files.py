"""The recorded session corpus, as (framework, variant, scenario, path) entries, discovered from the files.

Each recording is one session: every turn's spans in one OTLP/JSON file, one trace per turn. The
manifest beside it says each turn's trace ids and the session id the app used.
"""

from __future__ import annotations

import json
from pathlib import Path

from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.model import Run
from tests.frameworks.corpus_files import Recording
from tests.frameworks.corpus_files import manifests as framework_manifests
from tests.frameworks.corpus_files import recordings as framework_recordings
from tests.sessions.harness.scenarios import BY_NAME, SCENARIOS

CORPUS = Path(__file__).parent / "corpus"


def manifests() -> dict[str, dict]:
    return framework_manifests(CORPUS)


def manifest_of(recording: Recording) -> dict:
    return json.loads((recording.path.parent / "manifest.json").read_text())


def recordings() -> list[Recording]:
    return framework_recordings(CORPUS, BY_NAME)


def turn_runs(recording: Recording) -> list[Run]:
    """The session's turns as loaded by ``load_runs`` (runs with steps), in the order the manifest says they were sent."""
    order = {trace: i for i, turn in enumerate(manifest_of(recording)["runs"][recording.scenario.name]["turns"])
             for trace in turn["trace_ids"]}
    runs = [r for r in load_runs([recording.path]) if r.steps]
    return sorted(runs, key=lambda r: order.get(r.trace_id, len(order)))


def session_of(recording: Recording) -> dict:
    """The manifest's entry for this recording: the session id the app used and each turn's trace ids."""
    return manifest_of(recording)["runs"][recording.scenario.name]


def scenario_labels() -> dict:
    """What ``corpus/labels.json`` must hold: per scenario, its session-level modes and the turns (0-based) that
    show them; per recorded session (``framework/variant/scenario``), its session id, its turns' trace ids in
    order and, per expected mode, the trace ids of the turns that show it."""
    sessions = {}
    for recording in recordings():
        session = session_of(recording)
        traces = [turn["trace_ids"][0] if len(turn["trace_ids"]) == 1 else None for turn in session["turns"]]
        sessions[recording.id] = {
            "session_id": session["session_id"], "turn_trace_ids": traces,
            "session_expected": [{"mode": e.mode, "turn": e.turn, "trace_id": traces[e.turn],
                                  "trace_ids": [traces[i] for i in e.turns]} for e in recording.scenario.expected]}
    return {"scenarios": {s.name: s.label() for s in SCENARIOS}, "sessions": sessions}


def write_labels() -> None:
    (CORPUS / "labels.json").write_text(json.dumps(scenario_labels(), indent=2) + "\n")
