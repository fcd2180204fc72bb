"""Checking the work before claiming success: missing checks (FM-3.2), wrong ones (FM-3.3).

FM-3.2: the run claims success but something it changed (a ``write`` tool call) was never
followed by a check (a ``verify`` tool call, whether or not its verdict is known).
FM-3.3: the run claims success although its last check failed, or although every tool call
it made failed, so no tool produced the evidence the claim rests on.
"""

from __future__ import annotations

from mast_otel.processors.detectors.context import FAILED_CHECK, RunContext, check_result, claims_success, describe, finding
from mast_otel.processors.model import Finding, Role

DETECTOR = "verification"
UNVERIFIED, WRONG = "FM-3.2", "FM-3.3"
EVIDENCE_CAP = 5


def no_verification(ctx: RunContext) -> list[Finding]:
    if not claims_success(ctx.run.hints):
        return []
    unchecked = []
    for step in reversed(ctx.steps):
        if step.role is Role.TOOL and step.tool_kind == "verify":  # a check, even one whose verdict is unknown
            break
        if step.role is Role.TOOL and step.tool_kind == "write":
            unchecked.append(step)
    if not unchecked:
        return []
    unchecked.reverse()
    names = ", ".join(sorted({s.tool_name or s.name for s in unchecked}))
    root = ctx.run.root.span_id if ctx.run.root else None
    return [finding(UNVERIFIED, 0.8, f"the run claimed success, but {len(unchecked)} change(s) made with {names!r} "
                    "were never checked afterwards", [s.span_id for s in unchecked[:EVIDENCE_CAP]] + [root],
                    DETECTOR, anchor=unchecked[-1].span_id)]


def incorrect_verification(ctx: RunContext) -> list[Finding]:
    if not claims_success(ctx.run.hints):
        return []
    root = ctx.run.root.span_id if ctx.run.root else None
    checks = [s for s in ctx.steps if check_result(s) is not None]
    if checks and check_result(checks[-1]) == FAILED_CHECK:
        return [finding(WRONG, 0.9, f"the run claimed success although its last check, {describe(checks[-1])}, "
                        "failed", [checks[-1].span_id, root], DETECTOR, anchor=root or checks[-1].span_id)]
    tools = [s for s in ctx.steps if s.role is Role.TOOL]
    if tools and all(s.error for s in tools):
        return [finding(WRONG, 0.75, f"the run claimed success although all {len(tools)} of its tool calls "
                        "failed, so no tool produced evidence for it",
                        [s.span_id for s in tools[-EVIDENCE_CAP:]] + [root], DETECTOR, anchor=root or tools[-1].span_id)]
    return []
