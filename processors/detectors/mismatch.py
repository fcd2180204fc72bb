"""FM-2.6 reasoning-action mismatch: the model asked for one tool and another one ran.

A model call that requests tools (``mast.llm.requested_tools`` / the response's tool calls)
is matched against the tool calls its agent executes before its next model call. A tool run
that the model never asked for is the mismatch. Names are compared as people write them (case,
spaces, ``_`` and ``-`` folded: CrewAI's ``delegate_work_to_coworker`` runs as ``Delegate work to
coworker``), and a handoff matches a handoff to the same agent whatever each is called (the model
asks for ``transfer_to_operator``, the framework records ``handoff to operator``): a handoff is an
edge between agents, never a mismatch by itself. Incremental, shared with live detection.
"""

from __future__ import annotations

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.context import RunContext, finding
from mast_otel.processors.model import LLM, TOOL, Finding, Span
from mast_otel.processors.team import same_action

DETECTOR = "mismatch"
MODE = "FM-2.6"


class MismatchTracker:
    def __init__(self, *, live: bool = False) -> None:
        self.live = live
        self._pending: dict[str | None, Span] = {}  # per agent: the model call whose tools are awaited

    def observe(self, span: Span, key: str | None) -> Finding | None:
        role = span.role
        if role is LLM:
            if span.requested_tools:
                self._pending[key] = span
            else:
                self._pending.pop(key, None)
            return None
        if role is not TOOL or key not in self._pending:
            return None
        call = self._pending[key]
        executed = span.tool_name or span.name
        # Exact match first (the usual case); names are folded only when it fails.
        if executed in call.requested_tools or same_action(executed, call.requested_tools):
            return None
        del self._pending[key]  # one finding per announcement
        asked = ", ".join(sorted(call.requested_tools))
        return finding(
            MODE, 0.85, f"the model announced {asked!r} but the agent ran tool {executed!r} instead",
            (call.span_id, span.span_id), DETECTOR, anchor=span.span_id, live=self.live)


def detect(ctx: RunContext) -> list[Finding]:
    return ctx.replay(DETECTOR, lambda: MismatchTracker().observe)


def live_tracker(config: DetectionConfig) -> MismatchTracker:
    return MismatchTracker(live=True)
