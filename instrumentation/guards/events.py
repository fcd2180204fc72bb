"""Interventions: what a guard did (or, observing, would have done), as a span event and as a refusal.

The event (``mast.guard.intervention``, see docs/guards.md) goes on the span the guard acted
on, so the processor can count it and mark the finding it prevented. The refusal is what the
agent hands back to the model instead of a tool result or a finished run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from opentelemetry.trace import Span

from mast_otel.wire import attributes as A


@dataclass(frozen=True, slots=True)
class Intervention:
    """One guard decision: which guard, in which mode, what it did, about which mode, on what evidence."""

    guard: str
    mode: str
    action: str  # recorded | blocked | stopped | refused_finish
    failure_mode: str
    reason: str
    evidence: tuple[str, ...] = ()

    @property
    def enforced(self) -> bool:
        return self.action != "recorded"

    def refusal(self) -> dict[str, object]:
        """A structured refusal the agent can return to the model (JSON-serialisable)."""
        return {"refused_by": f"mast.guard.{self.guard}", "action": self.action, "failure_mode": self.failure_mode,
                "reason": self.reason}

    def message(self) -> str:
        """The refusal as text, for agent loops that feed tool results back as strings."""
        return json.dumps(self.refusal(), sort_keys=True)


def record(span: Span, intervention: Intervention) -> None:
    """Write ``intervention`` as a ``mast.guard.intervention`` event on ``span``."""
    span.add_event(A.EVENT_GUARD_INTERVENTION, {
        A.MAST_GUARD_NAME: intervention.guard,
        A.MAST_GUARD_MODE: intervention.mode,
        A.MAST_GUARD_ACTION: intervention.action,
        A.MAST_FAILURE_MODE: intervention.failure_mode,
        A.MAST_EVIDENCE_SPAN_IDS: [e for e in intervention.evidence if _is_span_id(e)],
        A.GEN_AI_GUARDRAIL_VERDICT_REASON: intervention.reason,
    })


def _is_span_id(value: str) -> bool:
    """A real span id (16 hex characters), not the stand-in a step without a span of its own gets."""
    return len(value) == 16 and all(c in "0123456789abcdef" for c in value)


class GuardRefusal(Exception):
    """An enforcing guard refused a tool call; ``refusal()``/``message()`` say why, for the model."""

    def __init__(self, intervention: Intervention) -> None:
        super().__init__(intervention.reason)
        self.intervention = intervention

    def refusal(self) -> dict[str, object]:
        return self.intervention.refusal()

    def message(self) -> str:
        return self.intervention.message()


class RunStopped(GuardRefusal):
    """An enforcing guard ended the run; ``agent_run`` records the reason and ends quietly."""

    def __init__(self, intervention: Intervention, termination_reason: str, claimed_success: bool | None) -> None:
        super().__init__(intervention)
        self.termination_reason = termination_reason
        self.claimed_success = claimed_success
