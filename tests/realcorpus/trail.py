"""The TRAIL development runs (``../shared/trail-dev``): 74 real smolagents runs that people labelled.

GAIA and SWE-bench tasks run by a smolagents ``CodeAgent`` (and, on GAIA, a ``ToolCallingAgent``
it calls as a managed agent), recorded by OpenInference with real model output, with the
people's error labels mapped to MAST modes. Read where they lie (``../shared/trail-dev`` beside
the repository, or the folder ``MAST_TESTS_TRAIL_DEV`` names), never copied into the
repository: tests over them skip when the folder is absent, except in CI, where it must be there.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.model import Finding, Run
from tests.tools import IN_CI

TRAIL = Path(os.environ.get("MAST_TESTS_TRAIL_DEV") or Path(__file__).resolve().parents[2] / ".." / "shared" / "trail-dev")
LABELS = TRAIL / "labels.json"


def _labels() -> list[dict]:
    return json.loads(LABELS.read_text())["runs"] if LABELS.is_file() else []


LABELLED = _labels()
BY_ID = {entry["id"]: entry for entry in LABELLED}


def require_trail() -> None:
    """Skip (locally) or fail (in CI) when the runs are not on this machine."""
    if not LABELS.is_file():
        message = f"{TRAIL} is not on this machine"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def ids(entries: list[dict]) -> list[str]:
    return [entry["id"][:12] for entry in entries]


@lru_cache(maxsize=None)
def runs_of(label_id: str) -> tuple[Run, ...]:
    """The runs of one labelled file, as read from the OTLP/JSON the instrumentation wrote."""
    path = TRAIL / BY_ID[label_id]["file"]
    assert path.is_file(), f"{path} is listed in labels.json but missing"
    runs = tuple(load_runs([path]))
    assert runs, f"{label_id}: no run read"
    return runs


@lru_cache(maxsize=None)
def findings_of(label_id: str) -> tuple[Finding, ...]:
    """The rule tier's findings over every run of one labelled file."""
    return tuple(finding for run in runs_of(label_id) for finding in rule_findings(run))


def modes_found(label_id: str) -> dict[str, list[str]]:
    """Mode -> the explanations of its findings, for one labelled file."""
    found: dict[str, list[str]] = {}
    for finding in findings_of(label_id):
        found.setdefault(finding.mode, []).append(finding.explanation)
    return found
