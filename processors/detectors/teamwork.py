"""Between the agents of a team: a failure reported upstream as success (FM-2.4), a report acted
against (FM-2.5). Both need the reports' text, so they read captured content only.

FM-2.4 information withholding: a worker (any agent but the team's entry agent) whose own change
failed (a ``write`` call that errored, not retried with success) ends its turn with a report
that claims success: the agent it reports to is told the opposite of what happened.
FM-2.5 ignored other agent's input: the last report an agent received from a worker says the
work failed (a failing verdict, or an admission that it was not done), and the agent then
claims success over it.
"""

from __future__ import annotations

from mast_otel.wire import claims
from mast_otel.processors.detectors.context import RunContext, claims_success, finding
from mast_otel.processors.hints.tool_kinds import verdict
from mast_otel.processors.model import LLM, TOOL, Finding, Span

DETECTOR = "teamwork"
WITHHELD, IGNORED = "FM-2.4", "FM-2.5"


def _report(steps: list[Span]) -> Span | None:
    """A worker's report: the text of its last model call, when content was captured."""
    calls = [s for s in steps if s.role is LLM]
    return calls[-1] if calls and calls[-1].output_text else None


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


def withheld_failure(ctx: RunContext) -> list[Finding]:
    entry = ctx.run.agent
    found = []
    for scope in ctx.scopes:
        if scope.name == entry:
            continue
        steps = ctx.steps_of(scope)
        failure, report = _unrepaired_failure(steps), _report(steps)
        if failure is None or report is None or report.start_ns < failure.start_ns:
            continue
        said = claims.claim_in(report.output_text)
        if said is not None and said[0] and verdict(report.output_text) is not False:
            found.append(finding(WITHHELD, 0.75, f"agent {scope.name!r} reported success although its "
                                 f"{failure.tool_name or failure.name!r} call had failed",
                                 [failure.span_id, report.span_id], DETECTOR, anchor=report.span_id))
    return found


def ignored_report(ctx: RunContext) -> list[Finding]:
    if not claims_success(ctx.run.hints) or len(ctx.scopes) < 2:
        return []
    entry = ctx.run.agent
    last_report: Span | None = None
    for scope in ctx.scopes:
        if scope.name != entry:
            report = _report(ctx.steps_of(scope))
            if report is not None and (last_report is None or report.start_ns > last_report.start_ns):
                last_report = report
    calls = ctx.run.llm_calls
    if last_report is None or not calls or calls[-1].start_ns < last_report.start_ns \
            or not _says_failed(last_report.output_text or ""):
        return []
    claim = calls[-1]
    return [finding(IGNORED, 0.7, f"the team claimed success right after {ctx.scope(last_report).name!r} "
                    "reported that the work had failed", [last_report.span_id, claim.span_id], DETECTOR,
                    anchor=claim.span_id)]
