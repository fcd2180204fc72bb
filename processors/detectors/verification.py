"""Checking the work before claiming success: missing checks (FM-3.2), wrong ones (FM-3.3).

FM-3.2: the run claims success but something it changed (a ``write`` tool call) was never
followed by a check (a ``verify`` tool call, whether or not its verdict is known).
FM-3.3: the run claims success although its last check failed, or although every tool call
it made failed, so no tool produced the evidence the claim rests on.
"""

from __future__ import annotations

from collections import deque

from mast_otel.processors.detectors.context import FAILED_CHECK, RunContext, check_result, claims_success, describe, finding
from mast_otel.processors.model import TOOL, Finding, Span

DETECTOR = "verification"
UNVERIFIED, WRONG = "FM-3.2", "FM-3.3"
EVIDENCE_CAP = 5


class VerificationTracker:
    """What the run's checks say so far, fed step by step: changes not yet checked, the last check, failing tools.

    The whole-run checks below replay a run through it; the agent-side verification gate and the
    "done" state feed it the same steps as they happen, so both sides judge a claim by one rule.
    """

    __slots__ = ("unchecked", "last_check", "tools", "failed_tools", "_recent_tools")

    def __init__(self) -> None:
        self.unchecked: list[Span] = []  # ``write`` calls since the last check (of any verdict)
        self.last_check: Span | None = None  # the last check whose verdict is known
        self.tools = 0
        self.failed_tools = 0
        self._recent_tools: deque[str] = deque(maxlen=EVIDENCE_CAP)

    def observe(self, span: Span, key: str | None = None) -> Finding | None:
        """Record one step; a claim is judged by ``unverified_claim``/``wrong_claim``, so this raises nothing."""
        if span.role is not TOOL:
            return None
        self.tools += 1
        if span.error:
            self.failed_tools += 1
        self._recent_tools.append(span.span_id)
        kind = span.tool_kind
        if kind == "verify":  # a check, even one whose verdict is unknown
            self.unchecked = []
            if check_result(span) is not None:  # only a check has a result
                self.last_check = span
        elif kind == "write":
            self.unchecked.append(span)
        return None

    @property
    def done(self) -> bool:
        """The last check passed and nothing changed after it: the evidence a success claim needs."""
        return self.last_check is not None and check_result(self.last_check) == "passed" and not self.unchecked

    def unverified_claim(self, root: str | None) -> Finding | None:
        """FM-3.2 for a success claim made now."""
        if not self.unchecked:
            return None
        names = ", ".join(sorted({s.tool_name or s.name for s in self.unchecked}))
        return finding(UNVERIFIED, 0.8, f"the run claimed success, but {len(self.unchecked)} change(s) made with "
                       f"{names!r} were never checked afterwards",
                       [s.span_id for s in self.unchecked[:EVIDENCE_CAP]] + [root], DETECTOR,
                       anchor=self.unchecked[-1].span_id)

    def wrong_claim(self, root: str | None) -> Finding | None:
        """FM-3.3 for a success claim made now."""
        last = self.last_check
        if last is not None and check_result(last) == FAILED_CHECK:
            return finding(WRONG, 0.9, f"the run claimed success although its last check, {describe(last)}, "
                           "failed", [last.span_id, root], DETECTOR, anchor=root or last.span_id)
        if self.tools and self.failed_tools == self.tools:
            return finding(WRONG, 0.75, f"the run claimed success although all {self.tools} of its tool calls "
                           "failed, so no tool produced evidence for it", [*self._recent_tools, root], DETECTOR,
                           anchor=root or self._recent_tools[-1])
        return None


def _replayed(ctx: RunContext) -> VerificationTracker:
    """The run's steps through a tracker, once per diagnosis (FM-3.2 and FM-3.3 both read it)."""
    return ctx.shared(DETECTOR, lambda: _replay_all(ctx))


def _replay_all(ctx: RunContext) -> VerificationTracker:
    tracker = VerificationTracker()
    observe = tracker.observe
    for step in ctx.run.tool_calls:  # the tracker records tool calls only
        observe(step)
    return tracker


def no_verification(ctx: RunContext) -> list[Finding]:
    if not claims_success(ctx.run.hints):
        return []
    found = _replayed(ctx).unverified_claim(ctx.run.root.span_id if ctx.run.root else None)
    return [found] if found is not None else []


def incorrect_verification(ctx: RunContext) -> list[Finding]:
    if not claims_success(ctx.run.hints):
        return []
    found = _replayed(ctx).wrong_claim(ctx.run.root.span_id if ctx.run.root else None)
    return [found] if found is not None else []
