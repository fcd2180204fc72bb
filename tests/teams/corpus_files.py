"""The recorded team corpus, as (framework, variant, scenario, path) entries, discovered from the files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.frameworks.corpus_files import Recording
from tests.teams.harness.scenarios import BY_NAME, SCENARIOS

CORPUS = Path(__file__).parent / "corpus"


def manifests() -> dict[str, dict]:
    if not CORPUS.is_dir():
        return {}
    return {d.name: json.loads((d / "manifest.json").read_text()) for d in sorted(CORPUS.iterdir())
            if (d / "manifest.json").is_file()}


def recordings() -> list[Recording]:
    found = []
    for framework in manifests():
        for variant, folder in (("content", CORPUS / framework), ("no-content", CORPUS / framework / "no-content")):
            for path in sorted(folder.glob("*.json")):
                if path.name != "manifest.json":
                    found.append(Recording(framework, variant, BY_NAME[path.stem], path))  # type: ignore[arg-type]
    return found


def scenario_labels() -> dict:
    """What ``corpus/labels.json`` must hold: the labels ``mast-otel eval tests/teams/corpus`` reads."""
    return {"scenarios": {s.name: s.label() for s in SCENARIOS}}


def write_labels() -> None:
    (CORPUS / "labels.json").write_text(json.dumps(scenario_labels(), indent=2) + "\n")
