"""FM-2.6 reasoning-action mismatch: the model asked for one tool and another one ran.

A tool call is judged against the model call that asked for it: the latest model call of the
same agent that started before it. When that call requested tools (``mast.llm.requested_tools``
/ the response's tool calls) and the tool that ran is not among them, that is the mismatch (one
finding per model call). Names are compared as people write them (case, spaces, ``_`` and ``-``
folded: ``delegate_work_to_coworker`` runs as ``Delegate work to coworker``), and a
handoff matches a handoff to the same agent whatever each is called (the model asks for
``transfer_to_operator``, the framework records ``handoff to operator``): a handoff is an edge
between agents, never a mismatch by itself. Incremental, shared with live detection.

Whole-run, steps are fed in start order, so every model call that started before a tool call
has been seen when the tool call is: it is judged at once. Live, spans arrive as they end, and
a model call's span may end after the tool calls it asked for (litellm ends it in a background
callback), so a tool call is held until its model call is surely known: once a later model call
of the same agent has arrived (an agent's model calls end in the order they started) or the
agent's own span has (its run is over). A tool call is never judged against a model call that
merely arrived before it.
"""

from __future__ import annotations

from bisect import bisect_right

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.context import RunContext, finding
from mast_otel.processors.model import AGENT, LLM, TOOL, Finding, Span
from mast_otel.processors.team import same_action

DETECTOR = "mismatch"
MODE = "FM-2.6"


class _Agent:
    """One agent's model calls (by start time) and the tool calls waiting to be judged."""

    __slots__ = ("starts", "calls", "held")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.calls: list[Span] = []
        self.held: list[Span] = []  # in arrival order


class MismatchTracker:
    def __init__(self, *, live: bool = False) -> None:
        self.live = live  # fed in end order: hold tool calls until their model call is known
        self._agents: dict[str | None, _Agent] = {}
        self._latest: dict[str | None, Span] = {}  # whole-run: each agent's latest model call so far
        self._flagged: set[str] = set()  # model calls a finding was raised for

    def observe(self, span: Span, key: str | None) -> Finding | None:
        role = span.role
        if not self.live:
            # Whole-run, steps come in start order: the model call a tool call answers to is its
            # agent's latest so far, no search needed (the live path below holds and searches).
            if role is LLM:
                self._latest[key] = span
            elif role is TOOL:
                call = self._latest.get(key)
                # the usual tool call: asked for by name (told here, without a call)
                if call is not None and call.requested_tools and span.tool_name not in call.requested_tools:
                    return self._verdict(call, span)
            return None
        if role is TOOL:
            agent = self._agents.get(key)
            if agent is None:
                agent = self._agents[key] = _Agent()
            elif not agent.held and agent.calls:
                # The usual tool call: the latest model call known, started before it, asked for it by
                # name. A model call arriving later can only show a mismatch the final diagnosis
                # finds; holding is for the calls that could be a false alarm now.
                call = agent.calls[-1]
                if call.start_ns <= span.start_ns and span.tool_name in call.requested_tools:
                    return None
            agent.held.append(span)
            return None
        if role is LLM:
            agent = self._agents.get(key)
            if agent is None:
                agent = self._agents[key] = _Agent()
            if not agent.held and (not agent.starts or span.start_ns >= agent.starts[-1]):
                agent.starts, agent.calls = [span.start_ns], [span]  # nothing waits: only the latest counts
                return None
            if agent.starts and span.start_ns < agent.starts[-1]:
                at = bisect_right(agent.starts, span.start_ns)
                agent.starts.insert(at, span.start_ns)
                agent.calls.insert(at, span)
            else:
                agent.starts.append(span.start_ns)
                agent.calls.append(span)
            if agent.held:
                return self._settle(agent, span.start_ns)
            self._forget(agent)
            return None
        if role is AGENT and self.live:  # an agent's run is over: every model call of it has arrived
            if span.parent_span_id is None:  # the run's root: all of them have
                settled = [self._settle(a, None) for a in self._agents.values() if a.held]
                return next(filter(None, settled), None)
            agent = self._agents.get(span.span_id)
            return self._settle(agent, None) if agent is not None and agent.held else None
        return None

    def _settle(self, agent: _Agent, before: int | None) -> Finding | None:
        """Judge the held tool calls that started before ``before`` (all: ``None``); the first
        finding (live detection raises a mode once per trace, and the diagnosis replays)."""
        held = agent.held
        if before is None:
            ready, agent.held = held, []
        else:
            ready = [t for t in held if t.start_ns < before]
            agent.held = [t for t in held if t.start_ns >= before] if len(ready) < len(held) else []
        found = [f for t in ready if (f := self._judge(agent, t)) is not None]
        if not agent.held:
            self._forget(agent)
        return found[0] if found else None

    @staticmethod
    def _forget(agent: _Agent) -> None:
        """With no tool call waiting, only the latest model call can be asked about again."""
        if len(agent.calls) > 1:
            del agent.starts[:-1], agent.calls[:-1]

    def _judge(self, agent: _Agent, tool: Span) -> Finding | None:
        at = bisect_right(agent.starts, tool.start_ns)
        if at == 0:
            return None  # no model call of its agent started before it
        return self._verdict(agent.calls[at - 1], tool)

    def _verdict(self, call: Span, tool: Span) -> Finding | None:
        """The mismatch, if ``tool`` is not what ``call`` asked for (once per model call)."""
        if not call.requested_tools or call.span_id in self._flagged:
            return None
        executed = tool.tool_name or tool.name
        # Exact match first (the usual case); names are folded only when it fails.
        if executed in call.requested_tools or same_action(executed, call.requested_tools):
            return None
        self._flagged.add(call.span_id)  # one finding per announcement
        asked = ", ".join(sorted(call.requested_tools))
        return finding(
            MODE, 0.85, f"the model announced {asked!r} but the agent ran tool {executed!r} instead",
            (call.span_id, tool.span_id), DETECTOR, anchor=tool.span_id, live=self.live)


def detect(ctx: RunContext) -> list[Finding]:
    # Never the live tracker's work: it may still hold tool calls whose model call it had not seen.
    return ctx.replay(DETECTOR, lambda: MismatchTracker().observe, reuse_live=False)


def live_tracker(config: DetectionConfig) -> MismatchTracker:
    return MismatchTracker(live=True)
