"""The recorded framework corpus, as (framework, variant, scenario, path) entries.

Discovered from the files, so a framework added by ``tests/frameworks/record`` is tested
without any test naming it. ``variant`` is ``content`` or ``no-content``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from tests.frameworks.harness.scenarios import BY_NAME, SCENARIOS, Scenario

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Recording:
    framework: str
    variant: str
    scenario: Scenario
    path: Path

    @property
    def id(self) -> str:
        return f"{self.framework}/{self.variant}/{self.scenario.name}"


def manifests(corpus: Path = CORPUS) -> dict[str, dict]:
    if not corpus.is_dir():
        return {}
    return {d.name: json.loads((d / "manifest.json").read_text()) for d in sorted(corpus.iterdir())
            if (d / "manifest.json").is_file()}


def recordings(corpus: Path = CORPUS, scenarios: Mapping[str, object] = BY_NAME) -> list[Recording]:
    """Every recording of ``corpus`` (the framework corpus; the team corpus passes its own folder and scenarios)."""
    found = []
    for framework in manifests(corpus):
        for variant, folder in (("content", corpus / framework), ("no-content", corpus / framework / "no-content")):
            for path in sorted(folder.glob("*.json")):
                if path.name != "manifest.json":
                    found.append(Recording(framework, variant, scenarios[path.stem], path))  # type: ignore[arg-type]
    return found


def scenario_labels() -> dict:
    """What ``corpus/labels.json`` must hold: each scenario's expected and allowed modes,
    the labels ``mast-otel eval`` reads the corpus with."""
    return {"scenarios": {s.name: {"expected": sorted(s.expected), "allowed": sorted(s.allowed),
                                   "near_miss_of": s.near_miss_of, "description": s.description}
                          for s in SCENARIOS}}


def write_labels() -> None:
    (CORPUS / "labels.json").write_text(json.dumps(scenario_labels(), indent=2) + "\n")
