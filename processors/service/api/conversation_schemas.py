"""Typed shapes of the sessions API (``/v1/sessions``): a session, its turns and its own findings."""

from __future__ import annotations

from typing import Literal, Mapping, Optional

from pydantic import BaseModel, Field

from mast_otel.processors import taxonomy
from mast_otel.processors.conversations.model import SessionFinding
from mast_otel.processors.model import Diagnosis
from mast_otel.processors.service.store.conversations import SessionRow

SessionStatus = Literal["open", "complete"]


class SpanRefOut(BaseModel):
    trace_id: str
    span_id: str


class SessionFindingOut(BaseModel):
    mode: str
    name: str
    category: str
    severity: str
    confidence: float
    explanation: str
    turn_trace_id: str = Field(description="the turn the finding is about")
    evidence: list[SpanRefOut] = Field(description="the spans on the turns that show it")
    detector: str
    source: str

    @classmethod
    def of(cls, f: SessionFinding, severity_overrides: Mapping[str, str] | None = None) -> SessionFindingOut:
        info = taxonomy.get(f.mode)
        return cls(mode=f.mode, name=info.name, category=info.category, severity=taxonomy.severity(f.mode, severity_overrides),
                   confidence=f.confidence, explanation=f.explanation, turn_trace_id=f.turn_trace_id,
                   evidence=[SpanRefOut(trace_id=r.trace_id, span_id=r.span_id) for r in f.evidence],
                   detector=f.detector, source=f.source)


class TurnOut(BaseModel):
    index: int = Field(description="the turn's place among the kept turns, from 0, in start order")
    trace_id: str
    started_ns: int
    diagnosed: bool = Field(description="the run's own diagnosis is known to this replica's reader")
    agent: Optional[str] = None
    modes: list[str] = Field(default_factory=list, description="the run's own failure modes")
    fatal: bool = False
    diagnosis_url: str = Field(description="the run's diagnosis in the API")
    run_url: str = Field(description="the run's page in the web view")


class SessionSummaryOut(BaseModel):
    session_id: str
    service_name: Optional[str]
    status: SessionStatus = Field(description="open while turns arrive; complete after sessions.quiet_seconds without one")
    started_ns: Optional[int]
    last_turn_at: float
    completed_at: Optional[float]
    turn_count: int = Field(description="turns kept")
    dropped_turns: int = Field(description="oldest turns left out of the diagnosis (beyond sessions.max_turns)")
    revision: int = Field(description="diagnoses so far: one more each time a turn arrives")
    modes: list[str] = Field(description="the session's own (cross-turn) failure modes")

    @classmethod
    def of(cls, row: SessionRow, now: float, quiet_seconds: float) -> SessionSummaryOut:
        return cls(session_id=row.session_id, service_name=row.service_name,
                   status="complete" if row.complete(now, quiet_seconds) else "open", started_ns=row.started_ns,
                   last_turn_at=row.last_turn_at, completed_at=row.completed_at, turn_count=row.turn_count,
                   dropped_turns=row.dropped_turns, revision=row.revision,
                   modes=sorted({f.mode for f in row.findings}))


class SessionOut(SessionSummaryOut):
    findings: list[SessionFindingOut]
    turns: list[TurnOut]
    note: Optional[str] = Field(None, description="what the diagnosis could not see (turns dropped)")


class SessionPage(BaseModel):
    total: int
    limit: int
    offset: int
    items: list[SessionSummaryOut]


def turn_out(index: int, trace_id: str, started_ns: int, d: Diagnosis | None) -> TurnOut:
    return TurnOut(index=index, trace_id=trace_id, started_ns=started_ns, diagnosed=d is not None,
                   agent=d.agent if d is not None else None, modes=sorted(d.modes) if d is not None else [],
                   fatal=d.fatal if d is not None else False, diagnosis_url=f"/v1/diagnoses/{trace_id}",
                   run_url=f"/runs/{trace_id}")
