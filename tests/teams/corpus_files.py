"""The recorded team corpus, as (framework, variant, scenario, path) entries, discovered from the files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.frameworks.corpus_files import Recording
from tests.frameworks.corpus_files import manifests as framework_manifests
from tests.frameworks.corpus_files import recordings as framework_recordings
from tests.teams.harness.scenarios import BY_NAME, SCENARIOS

CORPUS = Path(__file__).parent / "corpus"


def manifests() -> dict[str, dict]:
    return framework_manifests(CORPUS)


def recordings() -> list[Recording]:
    return framework_recordings(CORPUS, BY_NAME)


def scenario_labels() -> dict:
    """What ``corpus/labels.json`` must hold: the labels ``mast-otel eval tests/teams/corpus`` reads."""
    return {"scenarios": {s.name: s.label() for s in SCENARIOS}}


def write_labels() -> None:
    (CORPUS / "labels.json").write_text(json.dumps(scenario_labels(), indent=2) + "\n")
