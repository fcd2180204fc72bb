"""Between the agents of a team: a failure reported upstream as success (FM-2.4), a report acted
against (FM-2.5). Both need the reports' text, so they read captured content only.

Both read runs with handoffs only: a report is what a worker hands back to the agent that gave it
work, and a chat without handoffs (a group chat) has no such relation to read.

FM-2.4 information withholding: a worker (any agent but the team's entry agent) whose own change
failed (a ``write`` call that errored, not retried with success) ends its turn with a report
that claims success: the agent it reports to is told the opposite of what happened.
FM-2.5 ignored other agent's input: the last report an agent received from a worker says the
work failed (a failing verdict, or an admission that it was not done), and the agent then
claims success over it.
"""

from __future__ import annotations

from mast_otel.processors.hints import claims
from mast_otel.processors.detectors.context import RunContext, claims_success, finding
from mast_otel.processors.tools.kinds import verdict
from mast_otel.processors.model import LLM, TOOL, Finding, Span

DETECTOR = "teamwork"
WITHHELD, IGNORED = "FM-2.4", "FM-2.5"


REPORT_LOOKBACK = 3  # a worker's last model calls read for its report (frameworks add a closing turn or two)


def _report(ctx: RunContext, steps: list[Span]) -> tuple[Span, str] | None:
    """A worker's report: among its last few model calls, the last whose words say how the work went
    (a framework may add a closing turn of its own, "Handed off to coordinator."), else its last
    model call with the answer its agent span recorded; ``None`` without captured content."""
    calls = [s for s in steps if s.role is LLM]
    if not calls:
        return None
    for call in reversed(calls[-REPORT_LOOKBACK:]):
        if call.output_text and claims.claim_in(call.output_text) is not None:
            return call, call.output_text
    last = calls[-1]
    agent = ctx.run.agent_of(last)
    text = last.output_text or (agent.output_text if agent is not None else None)
    return (last, text) if text else None


def _unrepaired_failure(steps: list[Span]) -> Span | None:
    """The agent's last failed change, unless a later call of the same tool succeeded."""
    failed = None
    for s in steps:
        if s.role is TOOL and s.tool_kind == "write":
            if s.error:
                failed = s
            elif failed is not None and (s.tool_name or s.name) == (failed.tool_name or failed.name):
                failed = None
    return failed


def _says_failed(text: str) -> bool:
    found = claims.claim_in(text)
    return (found is not None and not found[0]) or verdict(text) is False


def _workers(ctx: RunContext) -> dict[str, list[Span]]:
    """Each agent but the team's entry agent, by name, with its steps in order: an agent that is
    entered several times (a span per turn, as some frameworks record it) is one worker."""
    entry = ctx.run.agent
    workers: dict[str, list[Span]] = {}
    for scope in ctx.scopes:
        if scope.name != entry:
            workers.setdefault(scope.name, []).extend(ctx.steps_of(scope))
    for steps in workers.values():
        steps.sort(key=lambda s: s.start_ns)
    return workers


def withheld_failure(ctx: RunContext) -> list[Finding]:
    if not ctx.team.handoffs:
        return []
    found = []
    for name, steps in _workers(ctx).items():
        failure = _unrepaired_failure(steps)
        report = _report(ctx, steps) if failure is not None else None  # most workers never failed a change
        if failure is None or report is None or report[0].start_ns < failure.start_ns:
            continue
        said = claims.claim_in(report[1])
        if said is not None and said[0] and verdict(report[1]) is not False:
            found.append(finding(WITHHELD, 0.75, f"agent {name!r} reported success although its "
                                 f"{failure.tool_name or failure.name!r} call had failed",
                                 [failure.span_id, report[0].span_id], DETECTOR, anchor=report[0].span_id))
    return found


def ignored_report(ctx: RunContext) -> list[Finding]:
    if not claims_success(ctx.run.hints) or len(ctx.scopes) < 2 or not ctx.team.handoffs:
        return []
    # the worker that reported last: the one whose model calls end latest
    workers = [(max(s.start_ns for s in steps if s.role is LLM), name, steps)
               for name, steps in _workers(ctx).items() if any(s.role is LLM for s in steps)]
    if not workers:
        return []
    _, name, steps = max(workers, key=lambda w: w[0])
    report = _report(ctx, steps)
    calls = ctx.run.llm_calls
    last = (name, *report) if report is not None else None
    if last is None or not calls or calls[-1].start_ns <= last[1].start_ns or not _says_failed(last[2]):
        return []
    claim = calls[-1]
    return [finding(IGNORED, 0.7, f"the team claimed success right after {last[0]!r} reported that the work had "
                    "failed", [last[1].span_id, claim.span_id], DETECTOR, anchor=claim.span_id)]
