"""Keeping to what was declared: task constraints (FM-1.1), roles (FM-1.2), ambiguity (FM-2.2).

These read the ``mast.task.*`` and ``mast.agent.*`` hints, so they see only what the
application declared; without hints they stay silent and the judge covers the modes. One
framework check is read as FM-1.1 too: a guardrail that rejected the agent's answer on every
attempt it allowed (``RunHints.rejected_by_check``, derived from the agent span's error).

Constraints understood (case, ``-`` and spaces ignored):
``read_only`` (no ``write`` tools), ``no_clarification`` (no ``clarify`` tools),
``no_handoff`` (no ``handoff`` tools), ``forbid_tool:NAME`` (no calls of tool NAME).
"""

from __future__ import annotations

import functools
from typing import Callable

from mast_otel.processors.detectors.context import RunContext, claims_success, finding
from mast_otel.processors.tools.kinds import words
from mast_otel.processors.model import TOOL, Finding, Span

DETECTOR = "specification"
TASK, ROLE, CLARIFY = "FM-1.1", "FM-1.2", "FM-2.2"
FORBIDDEN_KINDS = {"read_only": "write", "no_clarification": "clarify", "no_handoff": "handoff"}
FORBID_TOOL = "forbid_tool:"
EVIDENCE_CAP = 5


@functools.lru_cache(maxsize=1024)  # runs declare the same few constraints again and again
def _canonical(constraint: str) -> str:
    head, sep, tail = constraint.partition(":")
    return head.strip().lower().replace("-", "_").replace(" ", "_") + (sep + tail.strip() if sep else "")


def _breaking(tools: list[Span], constraint: str) -> list[Span]:
    """The tool calls that break ``constraint`` (none for a constraint not understood)."""
    if constraint.startswith(FORBID_TOOL):
        name = constraint[len(FORBID_TOOL):]
        return [s for s in tools if (s.tool_name or "") == name]
    kind = FORBIDDEN_KINDS.get(constraint)
    return [s for s in tools if s.tool_kind == kind] if kind is not None else []


def task_constraints(ctx: RunContext) -> list[Finding]:
    found = []
    for scope in ctx.scopes:
        if scope.hints.rejected_by_check:  # the framework's own check of the answer gave up on it
            found.append(finding(
                TASK, 0.8, f"agent {scope.name!r} kept breaking the task's rules: the framework's check of its answer "
                f"rejected every attempt it allowed ({scope.hints.rejected_by_check!r})", [ctx.anchor(scope)], DETECTOR,
                anchor=ctx.anchor(scope)))
        constraints = sorted({_canonical(c) for c in scope.constraints})
        for constraint in constraints:
            bad = _breaking(ctx.tool_calls_of(scope), constraint)
            if bad:
                names = ", ".join(sorted({s.tool_name or s.name for s in bad}))
                found.append(finding(
                    TASK, 0.9, f"agent {scope.name!r} called {names!r} although the task was declared {constraint!r}",
                    [s.span_id for s in bad[:EVIDENCE_CAP]] + [ctx.anchor(scope)], DETECTOR, anchor=bad[0].span_id))
    return found


# Words in an agent's name that say its role is to check, not to change (a derived role).
CHECKING_ROLES = frozenset({"verifier", "verify", "validator", "validate", "checker", "reviewer", "review", "auditor",
                            "audit", "qa", "tester", "inspector", "critic", "observer", "monitor", "readonly"})


@functools.lru_cache(maxsize=1024)  # a run's few agent names, asked for every team run
def checking_role(name: str) -> bool:
    """Whether an agent's name says it only checks (``verifier``, ``code-reviewer``, ``QA agent``)."""
    return not CHECKING_ROLES.isdisjoint(words(name))


def role_violations(ctx: RunContext) -> list[Finding]:
    found = []
    for scope in ctx.scopes:
        allowed = scope.hints.allowed_tools
        if allowed is None:
            if len(ctx.scopes) > 1 and scope.hints.role is None and checking_role(scope.name):
                found += _checker_changed(ctx, scope)
            continue
        bad = [s for s in ctx.tool_calls_of(scope) if (s.tool_name or s.name) not in allowed]
        if bad:
            names = ", ".join(sorted({s.tool_name or s.name for s in bad}))
            role = f" (role {scope.hints.role!r})" if scope.hints.role else ""
            found.append(finding(
                ROLE, 0.9, f"agent {scope.name!r}{role} called {names!r}, which its role does not allow",
                [s.span_id for s in bad[:EVIDENCE_CAP]] + [ctx.anchor(scope)], DETECTOR, anchor=bad[0].span_id))
    return found


def _checker_changed(ctx: RunContext, scope) -> list[Finding]:
    """A team member whose name says it only checks made a change (a derived role: lower confidence)."""
    bad = [s for s in ctx.tool_calls_of(scope) if s.tool_kind == "write"]
    if not bad:
        return []
    names = ", ".join(sorted({s.tool_name or s.name for s in bad}))
    return [finding(ROLE, 0.7, f"agent {scope.name!r} changed something with {names!r}, although its name gives it "
                    "a checking role (derived hints: the role read from the agent's name)",
                    [s.span_id for s in bad[:EVIDENCE_CAP]] + [ctx.anchor(scope)], DETECTOR, anchor=bad[0].span_id)]


class ClarificationTracker:
    """FM-2.2 step by step: a change (``write`` call) on an ambiguous request before anyone was asked.

    ``ambiguous(key)`` says whether the agent scope ``key`` works on an ambiguous request. Every
    offending change raises a finding (the whole-run check keeps the first; the agent-side guard
    refuses each), and a ``clarify`` call lifts the rule for the rest of the run.
    """

    __slots__ = ("ambiguous", "asked")

    def __init__(self, ambiguous: Callable[[str | None], bool]) -> None:
        self.ambiguous = ambiguous
        self.asked = False

    def observe(self, span: Span, key: str | None = None) -> Finding | None:
        if span.role is not TOOL:
            return None
        if span.tool_kind == "clarify":
            self.asked = True
        elif span.tool_kind == "write" and not self.asked and self.ambiguous(key):
            return finding(CLARIFY, 0.85, f"the request was marked ambiguous, yet {span.tool_name or span.name!r} "
                           "changed something before anyone was asked to clarify", [span.span_id, key], DETECTOR,
                           anchor=span.span_id)
        return None


def missing_clarification(ctx: RunContext) -> list[Finding]:
    if not ctx.run.hints.ambiguous and not any(scope.ambiguous for scope in ctx.scopes):
        return []  # no step works on an ambiguous request: nothing needed asking first
    tracker = ClarificationTracker(lambda key: ctx.scope_by_id(key).ambiguous)
    for step, key in ctx.keyed_steps:
        found = tracker.observe(step, key)
        if found is not None:
            anchor = ctx.anchor(ctx.scope(step))
            return [finding(CLARIFY, found.confidence, found.explanation, [step.span_id, anchor], DETECTOR,
                            anchor=step.span_id)]
    root = ctx.run.root
    if not tracker.asked and root is not None and ctx.run.hints.ambiguous and claims_success(ctx.run.hints):
        return [finding(CLARIFY, 0.65, "the request was marked ambiguous, yet the run declared it done without "
                        "ever asking for clarification", [root.span_id], DETECTOR)]
    return []
