"""A scenario corpus on disk -> labelled runs, ``eval``'s first-class data set.

Layout (as ``tests/frameworks/corpus`` is recorded)::

    DIR/labels.json                                  {"scenarios": {name: {"expected": [...], "allowed": [...],
                                                                           "responsible": {...} | null}}}
    DIR/<framework>/<scenario>.json                  one recorded run (OTLP JSON), content captured
    DIR/<framework>/no-content/<scenario>.json       the same run with content capture off
    DIR/<framework>/.../<scenario>.logs.json         optional: the run's log records (OTLP JSON), joined to its spans

Labels are known by construction: each recording is a scripted slip, so its scenario's
expected modes are present, its allowed modes (a slip that may legitimately show as a second
mode) are left out of scoring (label ``None``) and every other mode is absent. A recording's
run is its trace with steps; a trace without any (e.g. a framework's agent-construction trace)
is counted in the load report, not scored.

A scenario may also name the agent responsible for its decisive mistake and locate its step
(``responsible``, see :mod:`responsible`): each recording's run is then labelled
``{"attribution": {"agent", "step": span id}}``, the step resolved in that recording. A
recording where the locator finds no step is skipped with the reason, not scored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mast_otel.processors import taxonomy
from mast_otel.processors.ingest import responsible
from mast_otel.processors.ingest.files import LoadError, LoadReport, load_runs
from mast_otel.processors.model import Run

LABELS_FILE = "labels.json"
VARIANTS = (("content", ""), ("no-content", "no-content"))
LOGS_SUFFIX = ".logs.json"  # a recording's log records, beside it


def is_corpus(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / LABELS_FILE).is_file()


@dataclass(frozen=True, slots=True)
class Scenario:
    modes: dict[str, bool | None]  # True expected, None allowed (not scored), False otherwise
    responsible: responsible.Responsible | None  # None: a clean run or a near miss


def scenario_labels(directory: Path) -> dict[str, Scenario]:
    """Per scenario, every mode's label and the responsible agent's step, if any."""
    try:
        data = json.loads((directory / LABELS_FILE).read_text(encoding="utf-8"))
        scenarios = data["scenarios"]
        out = {}
        for name, spec in scenarios.items():
            expected = {taxonomy.get(m).id for m in spec.get("expected", ())}
            allowed = {taxonomy.get(m).id for m in spec.get("allowed", ())}
            try:
                who = responsible.parse(spec.get("responsible"))
            except ValueError as exc:
                raise ValueError(f"scenario {name!r}: {exc}") from None
            out[name] = Scenario({m: True if m in expected else None if m in allowed else False for m in taxonomy.MODE_IDS},
                                 who)
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LoadError(f"{directory / LABELS_FILE}: not a scenario label file: {exc}") from None


def load_corpus(directory: str | Path, report: LoadReport | None = None) -> list[Run]:
    """Every recording's run, labelled from its scenario; ``group`` is framework/variant."""
    directory = Path(directory)
    labels = scenario_labels(directory)
    report = report if report is not None else LoadReport()
    runs: list[Run] = []
    for framework in sorted(p for p in directory.iterdir() if p.is_dir()):
        for variant, sub in VARIANTS:
            for path in sorted((framework / sub).glob("*.json")):
                if path.name == "manifest.json" or path.name.endswith(LOGS_SUFFIX):
                    continue
                if path.stem not in labels:
                    raise LoadError(f"{path}: scenario {path.stem!r} is not in {directory / LABELS_FILE}")
                logs = path.with_name(path.stem + LOGS_SUFFIX)
                for run in load_runs([path, logs] if logs.is_file() else [path], report=report):
                    if not run.steps:
                        report.skipped.append(f"{path}: trace {run.trace_id} has no model or tool call")
                        continue
                    scenario = labels[path.stem]
                    run.labels = {"modes": dict(scenario.modes), "outcome": None,
                                  "group": f"{framework.name}/{variant}", "order": path.stem, "scenario": path.stem}
                    if scenario.responsible is not None:
                        # located once the run is diagnosed (see ``resolve_steps``): a step's agent is
                        # known only after hint derivation gave each step to the agent that took it
                        run.labels["attribution"] = {"agent": scenario.responsible.agent, "step": None}
                        run.labels["responsible"] = scenario.responsible
                        run.labels["source"] = str(path)
                    runs.append(run)
    return runs


def resolve_steps(runs: list[Run], report: LoadReport) -> list[Run]:
    """The runs whose ``responsible`` label locates a step, each labelled with that step's span id;
    the others are named in ``report.skipped``. Call it on diagnosed runs (hints derived)."""
    kept = []
    for run in runs:
        who = run.labels.get("responsible")
        if who is not None:
            try:
                run.labels["attribution"]["step"] = responsible.locate(run, who)
            except responsible.Unresolved as exc:
                report.skipped.append(f"{run.labels.get('source')}: trace {run.trace_id}: responsible step not found: {exc}")
                continue
        kept.append(run)
    return kept
