"""What ``analyze`` reports, computed once so the table, JSON and HTML always agree.

Per run: its modes and fatality. Per model: runs, modes per run and per failed run, the
share of runs with a fatal mode, each mode's prevalence, and, where outcomes are known, each
mode's prevalence in failed versus successful runs (the data severities can be read from).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping

from mast_otel.processors import taxonomy, what_to_do
from mast_otel.processors.model import Diagnosis, mode_sort_key
from mast_otel.processors.step_names import StepNames

UNKNOWN_MODEL = "unknown"
TOP_MODES = 3


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _advice(mode: str) -> dict[str, str | list[str]] | None:
    found = what_to_do.known(mode)
    return found.as_dict() if found is not None else None


def run_row(d: Diagnosis, names: StepNames | None = None) -> dict[str, Any]:
    """One run's row; with the run's step ``names``, each finding's evidence also as step labels."""
    return {"trace_id": d.trace_id, "agent": d.agent, "model": d.model or UNKNOWN_MODEL, "outcome": d.outcome,
            "modes": d.modes, "fatal": d.fatal, "steps": d.step_count,
            "attribution": d.attribution.as_dict() if d.attribution is not None else None,
            "findings": [{"mode": f.mode, "confidence": f.confidence, "explanation": f.explanation,
                          "evidence_span_ids": list(f.evidence_span_ids),
                          "evidence_steps": names.labels(f.evidence_span_ids) if names is not None else list(f.evidence_span_ids),
                          "detector": f.detector, "source": f.source, "what_to_do": _advice(f.mode)}
                         for f in d.findings]}


def model_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    counts = Counter(m for r in rows for m in r["modes"])
    failed = [r for r in rows if r["outcome"] == "failure"]
    succeeded = [r for r in rows if r["outcome"] == "success"]
    by_outcome = {}
    if failed or succeeded:
        for mode in taxonomy.MODE_IDS:
            by_outcome[mode] = {
                "failure": _share(sum(mode in r["modes"] for r in failed), len(failed)),
                "success": _share(sum(mode in r["modes"] for r in succeeded), len(succeeded)),
            }
    return {
        "runs": n,
        "runs_with_modes": sum(1 for r in rows if r["modes"]),
        "modes_per_run": _share(sum(len(r["modes"]) for r in rows), n),
        "failed_runs": len(failed),
        "successful_runs": len(succeeded),
        "modes_per_failed_run": _share(sum(len(r["modes"]) for r in failed), len(failed)),
        "fatal_share": _share(sum(1 for r in rows if r["fatal"]), n),
        "prevalence": {m: _share(counts[m], n) for m in taxonomy.MODE_IDS},
        "top_modes": [m for m, _ in sorted(counts.items(), key=lambda kv: (-kv[1], mode_sort_key(kv[0])))[:TOP_MODES]],
        "prevalence_by_outcome": by_outcome,
    }


def summarize(diagnoses: Iterable[Diagnosis | tuple[Diagnosis, StepNames]],
              severity_overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The whole analysis as plain JSON-ready data (each diagnosis alone, or with its run's step names)."""
    rows = [run_row(*item) if isinstance(item, tuple) else run_row(item) for item in diagnoses]
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_model[row["model"]].append(row)
    return {
        "runs": rows,
        "models": {model: model_summary(rs) for model, rs in sorted(by_model.items())},
        "overall": model_summary(rows),
        "modes": {m.id: {"name": m.name, "category": m.category, "severity": taxonomy.severity(m.id, severity_overrides)}
                  for m in taxonomy.MODES.values()},
    }


def advice_by_mode(runs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What to do, once per mode found in ``runs`` (summarized rows), in mode order."""
    advice: dict[str, dict[str, Any]] = {}
    for r in runs:
        for f in r["findings"]:
            if f.get("what_to_do"):
                advice.setdefault(f["mode"], f["what_to_do"])
    return {mode: advice[mode] for mode in sorted(advice, key=mode_sort_key)}
