"""``GET /v1/sessions`` and ``GET /v1/sessions/{session_id}``: conversations and their turns.

Answers are bounded: a page holds at most ``MAX_SESSION_PAGE`` sessions, and a session at most
``sessions.max_turns`` turns (its turns' own modes read in one query)."""

from __future__ import annotations

import time
from typing import Optional

from fastapi import APIRouter, Depends, HTTPException, Query

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.api.params import MAX_OFFSET, QueryTime, mode_filter
from mast_otel.processors.service.api.conversation_schemas import (
    SessionFindingOut, SessionOut, SessionPage, SessionSummaryOut, turn_out,
)
from mast_otel.processors.service.store.conversations import ConversationStore
from mast_otel.processors.service.outputs.store import DiagnosisReader

MAX_SESSION_PAGE = 500


def session_detail(store: ConversationStore, reader: DiagnosisReader, config: ProcessorConfig,
                   session_id: str) -> SessionOut | None:
    """A session with its turns in start order (each with its run's own modes) and its findings."""
    row = store.get(session_id)
    if row is None:
        return None
    turns = store.turn_ids(session_id)
    ids = [t for t, _ in turns]
    diagnoses = {d.trace_id: d for d in reader.query(trace_ids=ids, limit=max(1, len(ids)))} if ids else {}
    overrides = config.detection.severity_overrides
    summary = SessionSummaryOut.of(row, time.time(), config.sessions.quiet_seconds)
    note = (f"the {row.dropped_turns} oldest turns were left out (sessions.max_turns = {config.sessions.max_turns})"
            if row.dropped_turns else None)
    return SessionOut(**summary.model_dump(), findings=[SessionFindingOut.of(f, overrides) for f in row.findings],
                      turns=[turn_out(i, t, n, diagnoses.get(t)) for i, (t, n) in enumerate(turns)], note=note)


def sessions_router(store: ConversationStore, reader: DiagnosisReader, config: ProcessorConfig) -> APIRouter:
    """The sessions API; the host adds the API token check and the refusal of unknown parameters."""
    router = APIRouter(prefix="/v1", tags=["sessions"])
    quiet = config.sessions.quiet_seconds

    @router.get("/sessions", response_model=SessionPage, summary="Sessions (conversations), most recently active first")
    def list_sessions(
        service: Optional[str] = None,
        mode: Optional[str] = Depends(mode_filter),
        with_modes: Optional[bool] = Query(None, description="true: only sessions with a cross-turn mode; false: only those without"),
        since: Optional[QueryTime] = Query(None, description="latest turn at or after (ISO 8601 or Unix seconds)"),
        until: Optional[QueryTime] = Query(None, description="latest turn before"),
        limit: int = Query(50, ge=1, le=MAX_SESSION_PAGE),
        offset: int = Query(0, ge=0, le=MAX_OFFSET),
    ) -> SessionPage:
        start = since.timestamp() if since is not None else None
        end = until.timestamp() if until is not None else None
        now = time.time()
        rows = store.query(service=service, mode=mode, with_modes=with_modes, since=start, until=end,
                           limit=limit, offset=offset)
        total = store.count(service=service, mode=mode, with_modes=with_modes, since=start, until=end)
        return SessionPage(total=total, limit=limit, offset=offset,
                           items=[SessionSummaryOut.of(r, now, quiet) for r in rows])

    @router.get("/sessions/{session_id}", response_model=SessionOut,
                summary="One session: its turns in order with their modes, and its own findings with evidence")
    def get_session(session_id: str) -> SessionOut:
        out = session_detail(store, reader, config, session_id)
        if out is None:
            raise HTTPException(status_code=404, detail=f"no session {session_id!r}")
        return out

    return router
