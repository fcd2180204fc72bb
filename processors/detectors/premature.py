"""FM-3.1 premature termination: the run gave up, not merely met an error on its way.

A run gave up at an error when all of these hold:

- **it stopped there** (read from the spans alone, the same with content capture on or off): the
  run's last tool call (handoffs aside) failed, the run ended on its own (no limit, timeout or
  cancellation, not abandoned), and after the failed call no agent did more than answer: at most
  one model call per agent, no other tool call, no handoff other than the failing agent handing
  its report back. A second model call of the failing agent (it planned again, or a code-writing
  agent ran more code), a manager's second model call or a new delegation is the run going on;
- **its last word does not go on** (content, when captured, refines): an answer that claims
  success, or that answers the task without a word of failing or stopping, is no stop (a success claim over a
  failure is FM-3.3 or FM-2.4, not a give-up); an answer that says the task was not done, or no
  answer the spans show, leaves the stop standing;
- **means were left untried**: an honest report of a failure is premature only when the agent
  could still have done more, and the finding names what: step budget left (at most
  ``premature.budget_fraction`` of the agent's declared ``max_steps`` used), or the failed tool
  never tried again (this was its first failure in the run). An agent that already retried the
  failing tool and used most of its budget reported a failure it could not get past.

Where the instrumentation writes no tool spans at all (OpenLLMetry over a framework's native tool
calls), the error is read from the conversation: the last model call was shown an error result
for the tool the call before it asked for, and answered without asking for anything more.

Without an error, an agent gave up when its own answer says the task was not done while most of
its step budget was unused (only agents that state a budget; steps outside any agent span, such
as a harness formatting the answer, are no agent of their own), and the run's last word gives up
too: a worker that gave up while its manager answered the task is not the run's give-up. The
first agent that gave up is the one attribution names (``attribution``).

Cost: one pass over the steps after the failed call, once per run; no per-span work.
"""

from __future__ import annotations

import re
from typing import Iterator

from mast_otel.processors.detectors.context import AgentScope, RunContext, describe, failed, finding
from mast_otel.processors.detectors import step_units
from mast_otel.processors.detectors.termination import ABANDONED, EXTERNAL_STOP, PREMATURE
from mast_otel.processors.ingest.normalize.common import redacted
from mast_otel.processors.model import LLM, TOOL, Finding, Span
from mast_otel.processors.team import same_agent
from mast_otel.processors.hints.claims import claim_in
from mast_otel.processors.tools.content_memo import failure_in
from mast_otel.wire.claims import ANSWER_CHARS

DETECTOR = "termination"  # the name findings carry, as before FM-3.1 had a module of its own
HANDOFF = "handoff"
_ROLE_PREFIX = re.compile(r"^\s*\w+:\s*")
# Words by which an answer speaks of a failure or of stopping at all: an answer with them reports the error or
# stops on it ("We stop here.", a chat's "TERMINATE"), it does not go on past it.
MENTIONS_FAILURE = re.compile(r"\b(fail\w*|errors?|exceptions?|refused|unsuccessful|unable|could\s*n[o']t|cannot|can't"
                              r"|stop(s|ped|ping)?|abort\w*|halt\w*|terminat\w*|g[ia]ve up|giving up)\b", re.IGNORECASE)


def stopped_after(ctx: RunContext, failed_call: Span) -> bool:
    """Whether nothing but answering came after ``failed_call`` (see the module docstring), read from
    the spans alone; ``False`` when an agent went on working after it.

    Agents are told apart by name: a team enters an agent once per turn (a span each time). Once
    the failing agent has handed its report back, its own later model calls only close its turn
    (a framework's round trip after the handoff tool)."""
    steps = ctx.steps
    at = next((i for i in range(len(steps) - 1, -1, -1) if steps[i] is failed_call), None)
    if at is None:
        return False
    failing = _who(ctx.scope(failed_call))
    answered: set[str | None] = set()
    handed_back = False
    for step in steps[at + 1:]:
        agent = _who(ctx.scope(step))
        if step.role is TOOL:
            if step.tool_kind == HANDOFF and _same(agent, failing):
                handed_back = True  # the failing agent handing its report back
                continue
            return False  # another call, or another agent sending work out again
        if step.role is LLM:
            if handed_back and _same(agent, failing):
                continue
            if agent in answered:
                return False  # this agent thought again, or ran more code, before it ended
            answered.add(agent)
    return True


def _who(scope: AgentScope) -> str | None:
    """An agent as told apart after an error: by name (one span per turn), ``None`` for steps outside every agent span."""
    return scope.name.lower() if scope.span_id is not None else None


def _same(agent: str | None, other: str | None) -> bool:
    return agent == other or (agent is not None and other is not None and same_agent(agent, other))


def went_on_in_words(ctx: RunContext, after: Span | None = None) -> bool:
    """Whether the run's last word goes on rather than stopping: it claims success, or it answers
    without a word of failure. ``False`` when it gives up or was not captured.

    The claim the application stated wins; a derived one is read again here from the run's last
    model call first (a team's or a harness's last word; only one made after ``after``, when
    given), then from its recorded final answer."""
    hints = ctx.run.hints
    if hints.claimed_success is not None and not (hints.derived and "claimed_success" in hints.derived):
        return hints.claimed_success
    for text in _last_words(ctx, after):
        found = claim_in(text)
        if found is not None:
            return found[0]
        return not MENTIONS_FAILURE.search(text[:ANSWER_CHARS])
    return False


def _last_words(ctx: RunContext, after: Span | None) -> Iterator[str]:
    """The run's last model call's output (made after ``after``), then its recorded final answer, as
    captured (content off: none)."""
    last = next((s for s in reversed(ctx.steps) if s.role is LLM), None)
    if last is not None and after is not None and last.start_ns < after.start_ns:
        last = None
    for text in (last.output_text if last is not None else None, ctx.run.hints.final_answer):
        if captured(text):
            yield text  # type: ignore[misc]


def captured(text: str | None) -> bool:
    """Whether ``text`` is content rather than nothing or a redaction marker (after a role prefix
    such as ``assistant:`` that normalizers put before a message)."""
    return bool(text) and not redacted(_ROLE_PREFIX.sub("", text or "", count=1))


def untried_means(ctx: RunContext, scope: AgentScope, failed_call: Span) -> list[str]:
    """What the agent that met ``failed_call`` could still have done: budget left, a first failure not retried."""
    left: list[str] = []
    budget = scope.hints.max_steps
    if budget and (use := step_units.used(scope.hints, ctx.steps_of(scope)))[0] <= ctx.config.premature.budget_fraction * budget:
        left.append(f"{budget - use[0]} of its {budget} {use[1]} left")
    name = failed_call.tool_name or failed_call.name
    earlier = [s for s in ctx.tool_calls_of(scope) if s is not failed_call and s.start_ns <= failed_call.start_ns
               and (s.tool_name or s.name) == name and failed(s)]
    if not earlier:
        left.append(f"{describe(failed_call)} not tried again")
    return left


def _error_ending(ctx: RunContext, ended_by_agent: bool) -> tuple[Finding, AgentScope] | None:
    last = next((s for s in reversed(ctx.run.tool_calls) if s.tool_kind != HANDOFF), None)
    if last is None or not failed(last) or not ended_by_agent:
        return None
    if not stopped_after(ctx, last) or went_on_in_words(ctx, after=last):
        return None
    scope = ctx.scope(last)
    means = untried_means(ctx, scope, last)
    if not means:
        return None
    what = "a failed check" if last.verification_passed is False else "an error"
    return finding(PREMATURE, 0.8, f"the run stopped right after {what} from {describe(last)} and never tried to "
                   f"resolve it (agent {scope.name!r} had means left: {'; '.join(means)})",
                   [last.span_id, ctx.anchor(scope)], DETECTOR, anchor=last.span_id), scope


def _error_only_in_the_conversation(ctx: RunContext) -> tuple[Span, str] | None:
    """For a run whose instrumentation writes no tool spans (OpenLLMetry over a framework's native tool
    calls): the run's last step is a model call answering the tool calls the call before it asked for,
    and a result it was shown reads as an error. The call and the tool's name, else ``None``."""
    steps = ctx.steps
    if len(steps) < 2 or steps[-1].role is not LLM or steps[-2].role is not LLM:
        return None
    last, asked = steps[-1], steps[-2]
    if last.requested_tools or not last.tool_exchanges or not asked.tool_exchanges or len(asked.requested_tools) != 1:
        return None
    requested = [cid for cid, (_, _, result) in asked.tool_exchanges.items() if result is None]
    for cid in requested:
        shown = last.tool_exchanges.get(cid)
        if shown is not None and failure_in(shown[2]) is not None:
            return last, asked.requested_tools[0]
    return None


def _own_claim(scope: AgentScope) -> bool | None:
    """Whether the agent's own answer claims success: read from its answer when captured (a harness
    that reformats the answer after the agent ended does not speak for it), else its hint."""
    own = scope.hints.final_answer
    if own and captured(own):
        found = claim_in(own)
        return found[0] if found is not None else None
    return scope.hints.claimed_success


def premature_termination(ctx: RunContext) -> list[Finding]:
    found: list[Finding] = []
    hints = ctx.run.hints
    ended_by_agent = ctx.run.completion != ABANDONED and hints.termination_reason not in EXTERNAL_STOP
    error = _error_ending(ctx, ended_by_agent)
    if error is not None:
        found.append(error[0])
    gave_up: list[bool] = []  # whether the run's last word gives up, read once and only when a rule needs it

    def run_gave_up() -> bool:
        if not gave_up:
            gave_up.append(not went_on_in_words(ctx))
        return gave_up[0]

    if not ctx.run.tool_calls and ended_by_agent and (unanswered := _error_only_in_the_conversation(ctx)) is not None \
            and run_gave_up():
        call, tool = unanswered
        found.append(finding(PREMATURE, 0.7, f"the run stopped right after an error from tool {tool!r} and never tried to "
                             "resolve it (the error is read from the conversation: the instrumentation wrote no tool span)",
                             [call.span_id, ctx.anchor(ctx.scope(call))], DETECTOR, anchor=call.span_id))
    fraction = ctx.config.premature.budget_fraction
    named = error[1] if error is not None else None  # the agent the error finding already names
    scopes = ctx.scopes
    for scope in scopes:
        budget = scope.hints.max_steps
        # steps outside every agent span of a run that has some (a harness formatting the answer) are no agent
        if scope is named or not budget or (scope.span_id is None and len(scopes) > 1) \
                or scope.hints.termination_reason in EXTERNAL_STOP:
            continue
        # an agent's give-up the run's last word went past (its manager answered) is not the run's
        used, unit = step_units.used(scope.hints, ctx.steps_of(scope))
        if used <= fraction * budget and _own_claim(scope) is False and run_gave_up():
            found.append(finding(PREMATURE, 0.7, f"agent {scope.name!r} gave up without success after {used} of "
                                 f"its {budget} allowed {unit}", [ctx.anchor(scope)], DETECTOR,
                                 anchor=ctx.anchor(scope)))
    return found
