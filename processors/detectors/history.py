"""FM-1.4 loss of conversation history and FM-2.1 conversation reset.

Read from ``mast.llm.input_message_count`` (no content needed): an agent's context shrinking
well below what it had built up is lost history; shrinking back to where the conversation
started is a reset. With content, a task that reached the model early but no longer does is
lost history too, and so is asking the user again what a clarification already answered.

The count and clarification checks are incremental and shared with live detection; each
agent (live: each parent span) is tracked separately, so a sub-agent that starts its own
conversation is never read as a loss. A handoff is read on its own: a transfer whose receiving
agent starts from a small part of the conversation the sender had built up is a reset (FM-2.1).
Delegations start their worker afresh by design, and so do transfers in frameworks built that way
(a framework's ``fresh_start_handoffs``; a run in which every transfer started its receiver afresh): those stay quiet.
A model call a tool makes inside itself (a text-inspection tool asking a model about a file) is
the tool's own conversation, not the agent's: it is tracked apart, under the tool call (as live
detection, which keys a step by its parent, already does).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Callable

from mast_otel.processors.detectors.settings import DetectionConfig, HistoryConfig
from mast_otel.processors.detectors.context import RunContext, finding
from mast_otel.processors.model import LLM, TOOL, Finding, Span
from mast_otel.processors.frameworks import registry
from mast_otel.processors.team import Handoff, decision_of, same_agent

DETECTOR = "history"
LOSS, RESET = "FM-1.4", "FM-2.1"
_NONE: frozenset = frozenset()  # shared by every tracker that has flagged nothing
OPENING_MESSAGES = 2  # a conversation's first call: the instructions and the request


@dataclass(slots=True)
class _Context:
    first: int
    peak: int
    peak_span: str
    last_start: int  # the latest start among the model calls counted
    flagged: frozenset[str] = _NONE  # modes raised for this context (rare: grown by copy)


class HistoryTracker:
    def __init__(self, config: HistoryConfig, *, live: bool = False) -> None:
        self.drop_ratio = config.drop_ratio
        self.min_messages = config.min_messages
        self.live = live
        self._contexts: dict[str | None, _Context] = {}
        self._answered: dict[tuple[str | None, str], str] = {}  # clarify question -> span that answered it
        self._flagged: frozenset[tuple[str | None, str]] = _NONE  # rare: grown by copy, so most trackers hold none
        # False once this live tracker judged a context otherwise than a replay would (a first count
        # past the opening, read live as maybe not the conversation's first): its findings are then not
        # the diagnosis's (``LiveDetection.findings_of``)
        self.same_as_replay = True

    def observe(self, span: Span, key: str | None) -> Finding | None:
        role = span.role
        if role is LLM and span.input_message_count is not None:
            return self._count(span, key, span.input_message_count)
        if role is TOOL and span.tool_kind == "clarify" and span.args_hash:
            return self._clarify(span, key)
        return None

    def _count(self, span: Span, key: str | None, count: int) -> Finding | None:
        ctx = self._contexts.get(key)
        if ctx is None:
            self._contexts[key] = _Context(count, count, span.span_id, span.start_ns)
            return None
        if span.start_ns < ctx.last_start:
            # Live, spans arrive as batches are sent, not always in the order they ran: a call that
            # started before one already counted is no evidence of a shrinking context.
            if count < ctx.first:
                ctx.first = count
            return None
        ctx.last_start = span.start_ns
        result = None
        # Live, the first call counted may not be the conversation's first (its batch came later):
        # only a context first seen at its opening (instructions and request) can be "back at the start".
        opening = not self.live or ctx.first <= OPENING_MESSAGES
        if not opening and count <= ctx.first:
            self.same_as_replay = False
        if ctx.peak >= self.min_messages and ctx.peak > ctx.first:
            if count <= ctx.first and opening and RESET not in ctx.flagged:
                ctx.flagged = ctx.flagged | {RESET}
                result = finding(
                    RESET, 0.8,
                    f"the model's context went back from {ctx.peak} messages to {count}, where the "
                    "conversation started, dropping the progress made since",
                    (ctx.peak_span, span.span_id), DETECTOR, anchor=span.span_id, live=self.live)
            elif (count > ctx.first or not opening) and count <= self.drop_ratio * ctx.peak and LOSS not in ctx.flagged:
                ctx.flagged = ctx.flagged | {LOSS}
                result = finding(
                    LOSS, 0.75,
                    f"the model's context shrank from {ctx.peak} messages to {count} mid-run",
                    (ctx.peak_span, span.span_id), DETECTOR, anchor=span.span_id, live=self.live)
        if count >= ctx.peak:
            ctx.peak, ctx.peak_span = count, span.span_id
        return result

    def _clarify(self, span: Span, key: str | None) -> Finding | None:
        question = (key, span.args_hash or "")
        earlier = self._answered.get(question)
        if earlier is None:
            if span.result_hash and not span.error:
                self._answered[question] = span.span_id
            return None
        if question in self._flagged:
            return None
        self._flagged = self._flagged | {question}
        return finding(
            LOSS, 0.8,
            f"the agent asked again through {span.tool_name or span.name!r} for something it had already been told",
            (earlier, span.span_id), DETECTOR, anchor=span.span_id, live=self.live)


def _inner_calls(ctx: RunContext) -> frozenset[str]:
    """Ids of the model calls made inside a tool call (their parent is a tool span)."""
    tools = set(map(_SPAN_ID, ctx.run.tool_calls))
    if not tools:
        return _NONE
    return frozenset(s.span_id for s in ctx.run.llm_calls if s.parent_span_id in tools)


_SPAN_ID = attrgetter("span_id")


def _task_dropped(ctx: RunContext, inner: frozenset[str]) -> list[Finding]:
    """With captured content: the task text was in an agent's model input, then a shorter input lacked it."""
    found = []
    for scope in ctx.scopes:
        task = (scope.hints.task or ctx.run.hints.task or "").strip()
        if len(task) < 8:
            continue
        seen_with: Span | None = None
        for step in ctx.steps_of(scope):
            if step.role is not LLM or step.input_text is None or step.span_id in inner:
                continue
            if task in step.input_text:
                seen_with = step
            # A shorter input, so a size cap cutting the task off cannot look like a loss.
            elif seen_with is not None and len(step.input_text) < len(seen_with.input_text or ""):
                found.append(finding(
                    LOSS, 0.7, f"agent {scope.name!r} stopped sending its task to the model partway through",
                    (seen_with.span_id, step.span_id), DETECTOR, anchor=step.span_id))
                break
    return found


def _message_counts(ctx: RunContext, handoff: Handoff) -> tuple[Span | None, Span | None]:
    """The sender's last model call before a transfer and the receiver's first one after it."""
    after = next((c for c in ctx.run.llm_calls if c.start_ns > handoff.start_ns
                  and (a := ctx.run.agent_of(c)) is not None and same_agent(a.agent_name, handoff.target)), None)
    return decision_of(ctx.run, handoff), after


def _dropped_by_handoff(ctx: RunContext) -> list[Finding]:
    if len(ctx.run.agent_spans) < 2:
        return []
    config = ctx.config.history
    by_id = ctx.run.spans_by_id
    carried, dropped = False, []
    for handoff in ctx.team.handoffs:
        carrier = by_id.get(handoff.span_id)
        if handoff.kind != "transfer" or not handoff.target or carrier is None \
                or (carrier.tool_name or carrier.name).lower() in registry().fresh_start_handoffs:
            continue
        before, after = _message_counts(ctx, handoff)
        if before is None or after is None or before.input_message_count is None or after.input_message_count is None:
            continue
        if before.input_message_count < config.min_messages:
            continue  # no conversation yet: nothing to carry or drop
        if after.input_message_count >= before.input_message_count:
            carried = True
        elif after.input_message_count <= config.drop_ratio * before.input_message_count:
            dropped.append((handoff, before, after))
    # Every transfer of the run starting its receiver afresh is how the framework works, not a reset.
    if not dropped or (len(dropped) > 1 and not carried):
        return []
    handoff, before, after = dropped[0]
    return [finding(RESET, 0.75, f"the handoff from {handoff.source!r} to {handoff.target!r} dropped the conversation: "
                    f"{handoff.target!r} started from {after.input_message_count} messages where {handoff.source!r} had "
                    f"{before.input_message_count}", (before.span_id, handoff.span_id, after.span_id), DETECTOR,
                    anchor=handoff.span_id)]


def detect(ctx: RunContext) -> list[Finding]:
    inner = _inner_calls(ctx)
    if inner:
        def tracker() -> Callable[[Span, str | None], Finding | None]:
            observe = HistoryTracker(ctx.config.history).observe
            return lambda span, key: observe(span, span.parent_span_id if span.span_id in inner else key)
        found = ctx.replay(DETECTOR, tracker)
    else:
        found = ctx.replay(DETECTOR, lambda: HistoryTracker(ctx.config.history).observe)
    if not any(f.mode == RESET for f in found):
        found += _dropped_by_handoff(ctx)
    if not any(f.mode == LOSS for f in found):
        found += _task_dropped(ctx, inner)
    return found


def live_tracker(config: DetectionConfig) -> HistoryTracker:
    return HistoryTracker(config.history, live=True)
