"""When a run stops: too late (FM-1.5) or too early (FM-3.1).

FM-1.5 unaware of termination conditions: an agent used up its step budget, counted per agent
invocation in the unit its framework counts (``step_units``; mast-otel's own: iterations), the run
was cut off by ``max_steps`` or a timeout, or it kept working well after its last check had
already passed. A run whose root never arrived (completion ``abandoned``: the agent process
stopped) is judged on what arrived: a missing end alone says nothing of the agent's
awareness, and its steps' own budget (``Span.step_budget``) stands in for the missing agent span's.

FM-3.1 premature termination, the run that stopped too early, is ``premature``; it shares the
constants below.

These read the whole run; live FM-1.5, while a trace still streams in, is ``budget.TerminationTracker``.
"""

from __future__ import annotations

from operator import attrgetter

from mast_otel.processors.detectors import step_units
from mast_otel.processors.detectors.context import RunContext, check_result, describe, finding, iterations
from mast_otel.processors.frameworks import registry
from mast_otel.processors.model import TOOL, Finding, Span

DETECTOR = "termination"
UNAWARE, PREMATURE = "FM-1.5", "FM-3.1"
CUT_OFF = ("max_steps", "timeout", "max_tokens")
EXTERNAL_STOP = CUT_OFF + ("cancelled",)
# How a finding names each cut-off termination reason.
STOPPED_BY = {"max_steps": "max steps", "timeout": "timeout", "max_tokens": "the model's output token limit"}
WORK_KINDS_EXCLUDED = ("verify", "clarify", "handoff")
_TOOL_KIND = attrgetter("tool_kind")
EVIDENCE_CAP = 5  # steps named as evidence of an overrun; the explanation gives the full count
ABANDONED = "abandoned"  # the completion of a run whose root never arrived (see Run.completion)


def stopped_by(reason: str) -> str:
    """How a finding names the limit behind termination reason ``reason``."""
    return STOPPED_BY.get(reason, reason.replace("_", " "))


def unaware_of_termination(ctx: RunContext) -> list[Finding]:
    found: list[Finding] = []
    root = ctx.run.root
    for scope in ctx.scopes:
        steps = ctx.steps_of(scope)
        budget = scope.hints.max_steps
        if budget is None and scope.span_id is None:  # no agent span arrived to state it
            budget = _carried_budget(steps)
        reasons = []
        evidence: list[str | None] = [ctx.anchor(scope)]
        anchor = ctx.anchor(scope)
        # counted in the unit of the framework that states the budget (step_units)
        if (used := step_units.spent(scope.hints, steps, budget)) is not None:
            reasons.append(used.describe())
            evidence += [step.span_id for step in used.crossing]
            anchor = used.crossing[0].span_id  # the step that used the budget up
        if scope.hints.termination_reason in CUT_OFF and not step_units.unspent_stop(scope.hints, used):
            agent = ctx.run.spans_by_id.get(scope.span_id) if scope.span_id else root
            told = _limit_stated(ctx, [agent] if agent is not None else [], steps)
            reasons.append(f"was stopped by {stopped_by(scope.hints.termination_reason)}{told}")
        if reasons:
            found.append(finding(UNAWARE, 0.9, f"agent {scope.name!r} " + " and ".join(reasons), evidence,
                                 DETECTOR, anchor=anchor))
        found += _work_after_success(ctx, scope.name, steps)
    if root is not None and ctx.run.hints.termination_reason in CUT_OFF and not found \
            and all(scope.span_id != root.span_id for scope in ctx.scopes):
        # A team's own limit stops the run on the span that wraps its agents (a workflow, a graph);
        # a limit checked before each request (a framework's token limits) can stop it before any step.
        stop = stopped_by(ctx.run.hints.termination_reason)
        told = _limit_stated(ctx, [root, *ctx.run.agent_spans], ctx.steps)  # the team's limit counts every agent's steps
        what = (f"agent {ctx.run.agent or root.name!r} was stopped by {stop}{told} before any model or tool call"
                if not ctx.steps else f"the team was stopped by {stop}{told}")
        found.append(finding(UNAWARE, 0.85, what, [root.span_id], DETECTOR, anchor=root.span_id))
    run_budget = ctx.config.termination.default_max_steps
    if run_budget and len(ctx.steps) > run_budget and not found and len(taken := iterations(ctx.steps)) > run_budget:
        over = taken[run_budget:run_budget + EVIDENCE_CAP]
        found.append(finding(UNAWARE, ASSUMED_CONFIDENCE, run_limit_overrun(len(taken), run_budget),
                             [group[0].span_id for group in over], DETECTOR, anchor=over[0][0].span_id))
    return found


# A budget no agent declared, assumed from the configuration: rated below a declared one.
ASSUMED_CONFIDENCE = 0.6


def run_limit_overrun(taken: int, limit: int) -> str:
    """How a finding says the run passed the run-wide limit the configuration assumes (no framework states it)."""
    return (f"the run took {taken} steps (model calls with the tool calls they led to), over the run-wide limit of "
            f"{limit} assumed from termination.default_max_steps")


def _limit_stated(ctx: RunContext, spans: list[Span], steps: list[Span]) -> str:
    """What the limit error on ``spans`` (or on the wrappers around the run's agents) says of its
    framework's budget ("" when it names none), with the units ``steps`` show when they are exactly
    the budget: each framework stops a run right at its budget, so another count means the spans do
    not hold that budget's units one for one (a team's agents run under budgets of their own)."""
    stated = step_units.stated_in([t for s in spans + ctx.run.wrappers for t in (s.status_message, s.error_type)])
    if stated is None:
        return ""
    family, declared, budget = stated
    shown = registry().shown_name(family)
    used = len(step_units.units(steps, declared))
    if used != budget:
        return f" (its {declared.setting} of {budget} {declared.unit}, as {shown} counts them)"
    return f" (used {used} of {budget} {declared.unit}, as {shown} counts them: its {declared.setting})"


_STEP_BUDGET = attrgetter("step_budget")


def _carried_budget(steps: list[Span]) -> int | None:
    """The budget the steps carry (the instrumentation writes the run's on each), for an agent
    whose own span, which states it, never arrived."""
    budgets = set(map(_STEP_BUDGET, steps))  # in C: most runs carry none
    budgets.discard(None)
    return min(budgets) if budgets else None


def _work_after_success(ctx: RunContext, agent: str, steps: list) -> list[Finding]:
    """The agent's last check passed, then it went on calling tools."""
    if ctx.shortcuts and "verify" not in map(_TOOL_KIND, steps):  # no check at all (told in C): none passed
        return []
    last = next((i for i in reversed(range(len(steps))) if check_result(steps[i]) is not None), None)
    if last is None or check_result(steps[last]) != "passed":
        return []
    after = [s for s in steps[last + 1:] if s.role is TOOL and s.tool_kind not in WORK_KINDS_EXCLUDED]
    if len(after) < ctx.config.termination.steps_after_success:
        return []
    check = steps[last]
    return [finding(UNAWARE, 0.6, f"agent {agent!r} made {len(after)} more tool calls after its last check "
                    f"({describe(check)}) had already passed",
                    [check.span_id] + [s.span_id for s in after[:EVIDENCE_CAP]], DETECTOR, anchor=after[0].span_id)]
