"""The recorded framework corpus, as (framework, variant, scenario, path) entries.

Discovered from the files, so a framework added by ``tests/frameworks/record`` is tested
without any test naming it. ``variant`` is ``content`` (content on spans, the framework's
folder), ``no-content`` (capture off), or, for instrumentations that can send content as
log records, ``events`` (content in log records only) and ``both`` (on spans and in log
records), each in a subfolder of that name. A run's log records, when it emitted any, lie
beside its spans as ``<scenario>.logs.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from tests.frameworks.harness.scenarios import BY_NAME, SCENARIOS, Scenario

CORPUS = Path(__file__).parent / "corpus"
LOGS_SUFFIX = ".logs.json"
VARIANT_FOLDERS = {"content": "", "no-content": "no-content", "events": "events", "both": "both"}


@dataclass(frozen=True)
class Recording:
    framework: str
    variant: str
    scenario: Scenario
    path: Path

    @property
    def id(self) -> str:
        return f"{self.framework}/{self.variant}/{self.scenario.name}"

    @property
    def logs(self) -> Path | None:
        """The run's log records (OTLP/JSON ``ExportLogsServiceRequest``), if it emitted any."""
        path = self.path.with_name(self.path.stem + LOGS_SUFFIX)
        return path if path.is_file() else None


def manifests(corpus: Path = CORPUS) -> dict[str, dict]:
    if not corpus.is_dir():
        return {}
    found = {}
    for d in sorted(corpus.iterdir()):  # an instrumentation without content on spans has no top-level recording
        manifest = next((d / f / "manifest.json" for f in VARIANT_FOLDERS.values() if (d / f / "manifest.json").is_file()), None)
        if manifest is not None:
            found[d.name] = json.loads(manifest.read_text())
    return found


def recordings(corpus: Path = CORPUS, scenarios: Mapping[str, object] = BY_NAME,
               variants: tuple[str, ...] = ("content", "no-content")) -> list[Recording]:
    """Every recording of ``corpus`` in ``variants`` (the framework corpus; the team corpus passes its own
    folder and scenarios). Log files are not recordings of their own: see :attr:`Recording.logs`."""
    found = []
    for framework in manifests(corpus):
        for variant in variants:
            folder = corpus / framework / VARIANT_FOLDERS[variant]
            for path in sorted(folder.glob("*.json")):
                if path.name != "manifest.json" and not path.name.endswith(LOGS_SUFFIX):
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
