"""FM-1.4 across turns: the agent asks the user again what it asked before, and the user answered.

An agent that asked a question in one turn got its answer in the user's next turn; asking the
same question again in a later turn means that answer did not reach it. Two forms show it: a
clarification tool call (``tool_kind`` clarify) with the same arguments hash as one in an earlier
turn, and, with content, a turn whose answer is a question worded as an earlier turn's answer.
Turns already inside a stretch of lost history are left to that finding.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mast_otel.processors.conversations.model import SessionFinding, SpanRef
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.conversations.turn_view import TurnView, folded
from mast_otel.processors.model import Span

DETECTOR = "session_asked_again"
MODE = "FM-1.4"
_MIN_QUESTION_CHARS = 12  # "Sorry?" is no question about what the user gave


def asked_again(views: Sequence[TurnView], config: SessionDetectionConfig,
                covered: Collection[str] = ()) -> list[SessionFinding]:
    """A finding on each turn that asks again what an earlier turn asked and the user then answered."""
    findings: list[SessionFinding] = []
    clarifications: dict[str, tuple[TurnView, Span]] = {}  # args hash -> the first turn that asked
    questions: dict[str, tuple[TurnView, Span]] = {}  # folded question -> the first turn that asked
    for view in views:
        earlier: tuple[TurnView, Span] | None = None
        again: Span | None = None
        asks, question = _asks(view)
        for args_hash, span in asks:
            first = clarifications.setdefault(args_hash, (view, span))
            if first[0] is not view and earlier is None:
                earlier, again = first, span
        answer = view.answer_call
        if question is not None and answer is not None:
            first = questions.setdefault(question, (view, answer))
            if first[0] is not view and earlier is None:
                earlier, again = first, answer
        if earlier is None or again is None or view.trace_id in covered:
            continue
        before, asked = earlier
        findings.append(SessionFinding(
            mode=MODE, confidence=0.6, turn_trace_id=view.trace_id, detector=DETECTOR,
            evidence=(SpanRef(before.trace_id, asked.span_id), view.ref(again))[: config.max_evidence],
            explanation=(f"Turn {view.index + 1} asks the user the same question turn {before.index + 1} asked; the "
                         f"user's reply came in turn {before.index + 2}, and the agent asks again as if it had not.")))
    return findings


_MEMO_KEY = "session_asks"


def _asks(view: TurnView) -> tuple[list[tuple[str, Span]], str | None]:
    """The turn's clarification calls with an arguments hash, and its answer as a question (kept
    with the run: each diagnosis of the session reads every turn again)."""
    run = view.turn.run
    return run.memo(_MEMO_KEY, lambda: (
        [(s.args_hash, s) for s in run.tool_calls if s.tool_kind == "clarify" and s.args_hash], _question(view.answer_call)))


def _question(answer: Span | None) -> str | None:
    """The answer folded, when it is a question (the agent asking the user), else ``None``."""
    if answer is None or not answer.output_text or answer.requested_tools:
        return None
    text = folded(answer.output_text)
    if text.startswith("assistant: "):
        text = text[len("assistant: "):]
    return text if text.endswith("?") and len(text) >= _MIN_QUESTION_CHARS else None
