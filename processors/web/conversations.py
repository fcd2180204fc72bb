"""The web view's session pages: the sessions list and one page per session (its turns in order,
each turn's own modes and a link to its run, the session's cross-turn findings)."""

from __future__ import annotations

import time
from typing import Any, Callable

from fastapi import HTTPException, Request
from fastapi.responses import Response

from mast_otel.processors import taxonomy
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.store.conversations import ConversationStore
from mast_otel.processors.service.api.conversations import session_detail
from mast_otel.processors.service.api.conversation_schemas import SessionOut, SessionSummaryOut
from mast_otel.processors.service.outputs.store import DiagnosisReader
from mast_otel.processors.step_names import StepNames

Handler = Callable[[Request, dict[str, str]], Response]
Render = Callable[..., Response]


def evidence_labels(detail: SessionOut, reader: DiagnosisReader) -> dict[tuple[str, str], str]:
    """(trace id, span id) -> "turn 2, #3 tool restart" for the evidence of a session's findings: each turn's
    stored step list read once, and only for the turns the evidence is on."""
    turn_of = {t.trace_id: t.index + 1 + detail.dropped_turns for t in detail.turns}
    wanted: dict[str, list[str]] = {}
    for finding in detail.findings:
        for e in finding.evidence:
            wanted.setdefault(e.trace_id, []).append(e.span_id)
    labels: dict[tuple[str, str], str] = {}
    for trace_id, span_ids in wanted.items():
        steps = reader.steps(trace_id)
        names = StepNames(steps, complete=not steps.folds) if steps is not None else None
        turn = f"turn {turn_of[trace_id]}" if trace_id in turn_of else f"run {trace_id[:8]}"
        for span_id in span_ids:
            step = names.label(span_id) if names is not None else None
            labels[(trace_id, span_id)] = f"{turn}, {step}" if step else f"{turn}, span {span_id}"
    return labels


def session_pages(render: Render, sessions: ConversationStore, reader: DiagnosisReader, config: ProcessorConfig,
                  bad_filter: Callable[[str], Exception], page_number: Callable[[dict[str, str], int], int]) -> list[tuple[str, Handler]]:
    """``/sessions`` and ``/sessions/{session_id}``, as (path, handler) pairs for the web router."""
    size = config.web.runs_page_size
    quiet = config.sessions.quiet_seconds

    def sessions_list(request: Request, params: dict[str, str]) -> Response:
        filters: dict[str, Any] = {"service": params.get("service") or None}
        mode = params.get("mode") or None
        if mode is not None:
            try:
                mode = taxonomy.get(mode).id
            except KeyError:
                raise bad_filter(f"mode: {mode!r} is not a failure mode id (FM-1.1 … FM-3.3)") from None
        with_modes = params.get("with_modes") or None
        if with_modes not in (None, "true", "false"):
            raise bad_filter(f"with_modes: {with_modes!r} is not true or false")
        filters.update(mode=mode, with_modes=None if with_modes is None else with_modes == "true")
        number = page_number(params, size)
        total = sessions.count(**filters)
        now = time.time()
        items = [SessionSummaryOut.of(r, now, quiet) for r in sessions.query(**filters, limit=size, offset=(number - 1) * size)]
        shown = {"service": params.get("service") or "", "mode": mode or "", "with_modes": with_modes or ""}
        return render("sessions.html", items=items, total=total, page=number, pages=max(1, -(-total // size)),
                      shown=shown, mode_ids=list(taxonomy.MODE_IDS))

    def session_page(request: Request, params: dict[str, str]) -> Response:
        session_id = request.path_params["session_id"]
        detail = session_detail(sessions, reader, config, session_id)
        if detail is None:
            raise HTTPException(status_code=404, detail=f"no session {session_id!r}")
        return render("session.html", s=detail, step_labels=evidence_labels(detail, reader))

    return [("/sessions", sessions_list), ("/sessions/{session_id}", session_page)]
