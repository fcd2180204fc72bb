"""What a session diagnosis is made of: turns in order and findings that point into them."""

from __future__ import annotations

from dataclasses import dataclass

from mast_otel.processors.model import Run


@dataclass(slots=True, frozen=True)
class SpanRef:
    """One span of one turn: evidence across traces needs the trace id beside the span id."""

    trace_id: str
    span_id: str


@dataclass(slots=True, frozen=True)
class SessionFinding:
    """A failure mode that shows only between turns, with the spans on the turns that show it."""

    mode: str  # "FM-1.1" .. "FM-3.3"
    confidence: float  # 0..1
    explanation: str  # plain words, no message content
    evidence: tuple[SpanRef, ...]
    turn_trace_id: str  # the turn the finding is about (its evaluation event goes on that turn)
    detector: str = ""
    source: str = "rules"


@dataclass(slots=True, frozen=True)
class Turn:
    """One turn of a session: a finished run and where it sits in the conversation."""

    session_id: str
    run: Run

    @property
    def trace_id(self) -> str:
        return self.run.trace_id

    @property
    def started_ns(self) -> int:
        """When the turn started (kept with the run: each diagnosis of the session orders every turn again)."""
        run = self.run
        return run.memo("session_turn_start", lambda: min((s.start_ns for s in run.spans), default=0))
