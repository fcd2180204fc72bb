"""FM-1.4 across turns: a turn whose model input does not hold the earlier turns of its session.

Each turn's first model call is the input the framework built for that turn. A framework that
carries the conversation sends the earlier turns along, so that input grows from turn to turn;
one that drops them sends only its instructions and the new message, so the input stays the
size of the session's first turn (or falls back to it after having grown: a reset).

Read in this order, from what the spans hold:
- with content, the previous turn's user message found in this turn's input means the history
  is there, whatever the counts say (a framework may pack it into one message);
- the number of input messages, when known: no more than the session's smallest opening;
- without content, input tokens: back near the smallest opening and short of the growth the
  previous answer alone would add.
A context trimmed to a window plateaus well above the opening and stays quiet. An answer saying
the agent does not know what the user gave earlier (with content) adds to the confidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mast_otel.processors.conversations.model import SessionFinding, SpanRef
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.conversations.turn_view import TurnView, has_content
from mast_otel.processors.model import Span

DETECTOR = "session_history"
MODE = "FM-1.4"
CARRIED, LOST, UNKNOWN = "carried", "lost", "unknown"
_SNIPPET = 120  # characters of the previous user message looked for in the next input


def lost_history(views: Sequence[TurnView], config: SessionDetectionConfig) -> list[SessionFinding]:
    """Findings on the first turn of each stretch of turns that lack the session's earlier turns."""
    findings: list[SessionFinding] = []
    not_known = [re.compile(p, re.IGNORECASE) for p in config.not_known_patterns]
    stretch: list[tuple[TurnView, str, list[Span]]] = []  # consecutive lost turns: (turn, what showed it, calls)
    reset = False
    previous = CARRIED
    openings = _Openings()
    if views:
        openings.add(views[0])
    for k in range(1, len(views)):
        verdict, basis, calls = _verdict(views, k, openings, config)
        openings.add(views[k])
        if verdict == LOST:
            if not stretch:
                # back at the opening after the conversation had grown: a reset, clear at once
                reset = previous == CARRIED and k >= 2
            stretch.append((views[k], basis, calls))
        else:
            _close(stretch, reset, config, not_known, findings)
            stretch, reset = [], False
        previous = verdict
    _close(stretch, reset, config, not_known, findings)
    return findings


def _close(stretch: list[tuple[TurnView, str, list[Span]]], reset: bool, config: SessionDetectionConfig,
           not_known: list[re.Pattern[str]], out: list[SessionFinding]) -> None:
    if not stretch or (not reset and len(stretch) < config.history_min_flat_turns):
        return
    first, basis, _ = stretch[0]
    evidence: list[SpanRef] = []
    asked_again: list[int] = []
    for view, _, calls in stretch:
        evidence.extend(view.ref(call) for call in calls)
        answer = view.answer_call
        if answer is not None and answer.output_text and any(p.search(answer.output_text) for p in not_known):
            asked_again.append(view.index)
            if all(answer is not call for call in calls):
                evidence.append(view.ref(answer))
    confidence = {"content": 0.85, "messages": 0.8, "tokens": 0.6}.get(basis, 0.6)
    if asked_again:
        confidence = min(0.95, confidence + 0.1)
    turns = _turn_list([v.index for v, _, _ in stretch])
    if reset:
        what = f"turn {first.index + 1} started over: its model input fell back to the size of the session's first turn"
    else:
        what = f"from turn {first.index + 1} on ({turns}) each turn's model input holds no more than the session's first turn"
    why = {"content": "the previous turn's user message is not in it",
           "messages": "no more input messages than the opening",
           "tokens": "input tokens stopped growing, so no earlier turn was sent along"}.get(basis, "")
    explanation = f"History lost between turns: {what} ({why})."
    if asked_again:
        explanation += f" The answer of {_turn_list(asked_again)} says the agent does not have what the user gave earlier."
    out.append(SessionFinding(mode=MODE, confidence=round(confidence, 2), explanation=explanation,
                              evidence=tuple(evidence[: config.max_evidence]), turn_trace_id=first.trace_id,
                              detector=DETECTOR))


def _turn_list(indices: list[int]) -> str:
    names = [str(i + 1) for i in indices]
    return ("turn " if len(names) == 1 else "turns ") + ", ".join(names)


class _Openings:
    """The smallest first model call each agent has had so far (messages, input tokens): the session's opening size."""

    __slots__ = ("counts", "tokens")

    def __init__(self) -> None:
        self.counts: dict[str | None, int] = {}
        self.tokens: dict[str | None, int] = {}

    def add(self, view: TurnView) -> None:
        for agent, call in view.openings.items():
            if call.input_message_count is not None:
                self.counts[agent] = min(self.counts.get(agent, call.input_message_count), call.input_message_count)
            if call.input_tokens:
                self.tokens[agent] = min(self.tokens.get(agent, call.input_tokens), call.input_tokens)


def _verdict(views: Sequence[TurnView], k: int, openings: _Openings,
             config: SessionDetectionConfig) -> tuple[str, str, list[Span]]:
    """Whether turn ``k``'s model input carries the earlier turns, what showed it, and the calls that lack them.

    Each agent's first call is compared with the same agent's in earlier turns; the turn carries
    the history when any of its agents gets it (a router may see only the new message by design)."""
    view, before = views[k], views[k - 1]
    said, added = before.user_folded, before.user_added
    if said is not None:
        for call in view.openings.values():
            if has_content(call):
                holds = view.folded_input(call)
                if said[:_SNIPPET] in holds or (added and added[-_SNIPPET:] in holds):
                    return CARRIED, "content", []
    verdicts = [_agent_verdict(before, agent, call, openings, config) for agent, call in view.openings.items()]
    known = [(v, basis, call) for v, basis, call in verdicts if v != UNKNOWN]
    if not known:
        return UNKNOWN, "", []
    if any(v == CARRIED for v, _, _ in known):
        return CARRIED, known[0][1], []
    return LOST, known[0][1], [call for _, _, call in known]


def _agent_verdict(before: TurnView, agent: str | None, call: Span, openings: _Openings,
                   config: SessionDetectionConfig) -> tuple[str, str, Span]:
    prev_call = before.openings.get(agent)
    if prev_call is None:
        return UNKNOWN, "", call
    content_lost = has_content(call) and bool(before.user_message)  # looked for above, and not found
    opening_count, opening_tokens = openings.counts.get(agent), openings.tokens.get(agent)
    if call.input_message_count is not None and prev_call.input_message_count is not None and opening_count is not None:
        lost = call.input_message_count <= opening_count
        return (LOST, "content" if content_lost else "messages", call) if lost else (CARRIED, "messages", call)
    if call.input_tokens is not None and prev_call.input_tokens and opening_tokens:
        answer_tokens = before.answer_call.output_tokens if before.answer_call is not None else None
        growth = max(config.history_min_token_growth, config.history_answer_share * (answer_tokens or 0))
        near_opening = call.input_tokens <= opening_tokens * (1 + config.history_token_slack)
        lost = near_opening and call.input_tokens < prev_call.input_tokens + growth
        return (LOST, "tokens", call) if lost else (CARRIED, "tokens", call)
    if content_lost:
        return LOST, "content", call
    return UNKNOWN, "", call
