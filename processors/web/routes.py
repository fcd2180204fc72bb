"""The built-in web view: an overview of failure modes per model, and one page per run.

Server-rendered HTML with inline CSS and SVG: no scripts, fonts or styles from anywhere else,
so it works on closed networks. It reads the diagnosis store, the run page's timeline from the
run's stored step list; while the pipeline still holds the run's spans (the retention window)
it adds content excerpts when content was captured.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse

from mast_otel.processors import taxonomy
from mast_otel.processors.service.merge import RunSource
from mast_otel.processors.service.outputs.store import DiagnosisReader
from mast_otel.processors.service.run_steps import run_steps
from mast_otel.processors.web import summary as S
from mast_otel.processors.web.timeline import build_rows, mode_label, mode_severity

OVERVIEW_WINDOW = 5000  # the overview summarises this many most recent diagnoses
RECENT_FATAL = 15
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


@lru_cache(maxsize=1)
def _templates() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
    )
    env.globals.update(percent=S.percent, decimal=S.decimal, mode_label=mode_label, heat=heat_color,
                       when=_when, modes=taxonomy.MODES)
    return env


def heat_color(rate: float) -> str:
    """White for 0, deepening red towards 1 (the heatmap's cell colour)."""
    if rate <= 0:
        return "#ffffff"
    g = round(235 - 180 * min(rate, 1.0) ** 0.6)
    return f"rgb(255,{g},{g})"


def _when(ns_or_s: float | None) -> str:
    if not ns_or_s:
        return ""
    seconds = ns_or_s / 1e9 if ns_or_s > 1e12 else ns_or_s
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(template: str, **context: Any) -> str:
    return _templates().get_template(template).render(**context)


def build_router(store: DiagnosisReader, runs: RunSource | None = None, severity_overrides: dict | None = None) -> APIRouter:
    """Routes ``/`` (overview) and ``/runs/{trace_id}`` (one run), reading ``store`` and, for
    content excerpts, the runs the processor still holds."""
    router = APIRouter(include_in_schema=False)
    overrides = severity_overrides or {}

    @router.get("/", response_class=HTMLResponse)
    def overview() -> str:
        recent = store.query(limit=OVERVIEW_WINDOW)
        summaries = S.summarize(recent)
        return render(
            "overview.html", summaries=summaries, columns=S.modes_seen(summaries), total=len(recent),
            window=OVERVIEW_WINDOW, fatal_runs=store.query(fatal=True, limit=RECENT_FATAL),
            max_mpf=max((s.modes_per_failed_run or 0 for s in summaries), default=0) or 1,
        )

    @router.get("/runs/{trace_id}", response_class=HTMLResponse)
    def run_page(trace_id: str) -> str:
        trace_id = trace_id.lower()
        if not _TRACE_ID.match(trace_id):
            raise HTTPException(status_code=404, detail="a trace id is 32 hex characters")
        diagnosis = store.get(trace_id)
        if diagnosis is None:
            raise HTTPException(status_code=404, detail=f"no diagnosis for trace {trace_id}")
        run = runs.get_run(trace_id) if runs is not None else None
        steps = store.steps(trace_id)
        if steps is None and run is not None:
            steps = run_steps(run)
        verdicts = diagnosis.verdicts
        return render(
            "run.html", d=diagnosis, verdicts=verdicts, rows=build_rows(steps or [], diagnosis, run),
            severity={m: mode_severity(m, overrides) for m in verdicts}, has_steps=steps is not None,
            held=run is not None,
        )

    return router
