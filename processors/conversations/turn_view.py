"""What session detection reads off one turn: its first model call (the input the framework built
for the turn), its answer, and the user's new message when content was captured."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mast_otel.processors.conversations.model import SpanRef, Turn
from mast_otel.processors.model import TOOL, Run, Span

# A rendered message line starts with its role (see the normalizers' ``render``).
_ROLE_LINE = re.compile(r"^(?:system|user|assistant|tool|developer|model|function|human|ai): ")
_USER = "user: "
_SPACE = re.compile(r"\s+")


@dataclass(slots=True, frozen=True)
class TurnView:
    """One turn as session detection sees it."""

    index: int
    turn: Turn
    first_call: Span | None  # the turn's first model call of the agent's own (not one a tool makes)
    # each agent's first model call, by agent name: a router that sees only the new message by design
    # sits beside the agent that gets the conversation, and each is compared with itself across turns
    openings: dict[str | None, Span]
    answer_call: Span | None  # the model call that ended last: the turn's answer
    user_message: str | None  # the new user message, from the first call's input (content only)
    user_folded: str | None  # that message as :func:`folded` compares it
    user_added: str | None  # its last line folded: what a message packing the history adds last

    @property
    def trace_id(self) -> str:
        return self.turn.trace_id

    def ref(self, span: Span) -> SpanRef:
        return SpanRef(self.turn.trace_id, span.span_id)

    def folded_input(self, call: Span) -> str:
        """``call``'s rendered input as :func:`folded` compares it, kept with the run (an input
        holds the whole conversation so far, and each diagnosis of the session reads it again)."""
        inputs: dict[str, str] = self.turn.run.memo(_FOLDED_KEY, dict)
        text = inputs.get(call.span_id)
        if text is None:
            text = inputs[call.span_id] = folded(call.input_text or "")
        return text


def has_content(call: Span | None) -> bool:
    """Whether a model call's messages were captured (a redacted placeholder is no content)."""
    return call is not None and call.input_message_count is not None and bool(call.input_text)


def view_of(index: int, turn: Turn) -> TurnView:
    """``turn`` as the ``index``-th of its session. What is read off the run is kept with the run
    (``Run.memo``): a session is diagnosed again as each turn arrives, over every turn it holds,
    so without it each earlier turn would be read again every time."""
    return TurnView(index, turn, *turn.run.memo(_MEMO_KEY, lambda: _read(turn.run)))


_MEMO_KEY = "session_turn_view"
_FOLDED_KEY = "session_folded_inputs"


def _read(run: Run) -> tuple[Span | None, dict[str | None, Span], Span | None, str | None, str | None, str | None]:
    calls = [c for c in run.llm_calls if not _inside_tool(run, c)]
    calls.sort(key=lambda s: s.start_ns)
    first = calls[0] if calls else None
    openings: dict[str | None, Span] = {}
    for call in calls:
        agent = run.agent_of(call)
        openings.setdefault(agent.agent_name if agent is not None else None, call)
    answer = max(run.llm_calls, key=lambda s: s.end_ns) if run.llm_calls else None
    user = last_user_message(first.input_text) if first is not None and first.input_message_count is not None else None
    if not user:
        return first, openings, answer, user, None, None
    return first, openings, answer, user, folded(user), folded(user.strip().rsplit("\n", 1)[-1])


def _inside_tool(run: Run, span: Span) -> bool:
    """A model call a tool makes inside itself is the tool's own conversation, not the turn's input."""
    by_id = run.spans_by_id
    parent = by_id.get(span.parent_span_id) if span.parent_span_id else None
    seen = 0
    while parent is not None and seen < 64:
        if parent.role is TOOL:
            return True
        parent = by_id.get(parent.parent_span_id) if parent.parent_span_id else None
        seen += 1
    return False


def last_user_message(rendered: str | None) -> str | None:
    """The last user message of messages rendered as ``role: text`` lines (a message may span lines)."""
    if not rendered:
        return None
    lines = rendered.split("\n")
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(_USER)), None)
    if start is None:
        return None
    taken = [lines[start][len(_USER):]]
    for line in lines[start + 1:]:
        if _ROLE_LINE.match(line):
            break
        taken.append(line)
    text = "\n".join(taken).strip()
    return text or None


def folded(text: str) -> str:
    """Text compared across turns: case and runs of whitespace ignored."""
    return _SPACE.sub(" ", text).strip().casefold()
