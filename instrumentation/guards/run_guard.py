"""One run's guards: the processor's live trackers fed the run's steps as they happen, and acting on them.

A ``RunGuard`` sits in any agent loop: ask ``before_tool`` before running a tool, tell
``after_tool`` what it returned, ask ``before_model_call`` before each model call and
``before_finish`` before ending the run. Each returns ``None`` (go ahead) or the
``Intervention`` that applies; in ``enforce`` mode the caller must then not run the step (the
intervention's ``action`` says whether to refuse just this call or to end the run), in
``observe`` mode the intervention only records. ``agent_run``/``tool_call``/``@tool`` do this
for you when the run is given ``guards=``.

The judgments are the processor's own trackers (``RepetitionTracker``, ``TerminationTracker``,
``VerificationTracker``, ``ClarificationTracker``): one implementation, so a guard refuses
exactly what the diagnosis would later call a failure.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span as OtelSpan

from mast_otel.instrumentation.guards.config import GuardConfig
from mast_otel.instrumentation.guards.events import GuardRefusal, Intervention, RunStopped, record
from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.detectors.budget import TerminationTracker
from mast_otel.processors.detectors.repetition import RepetitionTracker
from mast_otel.processors.detectors.specification import ClarificationTracker
from mast_otel.processors.detectors.termination import WORK_KINDS_EXCLUDED
from mast_otel.processors.detectors.verification import VerificationTracker
from mast_otel.processors.model import Finding, Role, Span

_ids = itertools.count(1)


def span_id_of(span: OtelSpan | None) -> str | None:
    """The hex span id the processor will see, or ``None`` for a non-recording span."""
    if span is None:
        return None
    ctx = span.get_span_context()
    return format(ctx.span_id, "016x") if ctx.is_valid else None


def _hash(value: Any) -> str | None:
    try:
        return stable_hash(value)
    except (TypeError, ValueError, RecursionError):
        return None


class RunGuard:
    """The four guards for one agent run. Thread-safe: steps may come from several threads."""

    def __init__(self, config: GuardConfig | None = None, *, agent: str = "agent", max_steps: int | None = None,
                 ambiguous: bool = False, run_span_id: str | None = None) -> None:
        self.config = config = config or GuardConfig()
        self.agent = agent
        self.max_steps = max_steps
        self.ambiguous = bool(ambiguous)
        self.run_span_id = run_span_id or f"run-{next(_ids)}"
        detection = config.detection()
        self._repetition = RepetitionTracker(detection.repetition, live=True)
        self._termination = TerminationTracker(detection)
        self._verification = VerificationTracker()
        self._clarification = ClarificationTracker(lambda key: self.ambiguous)
        self._over_budget: Finding | None = None  # found on a model call the caller could not stop
        self.resolved = False  # an enforcing "done" state ended the run as resolved
        self._stopped_once: set[str] = set()  # observe mode: a run is stopped once, so recorded once
        self._lock = threading.Lock()
        self._pending: dict[str, Span] = {}  # tool calls asked about and not reported yet, by span id
        self.interventions: list[Intervention] = []

    # --- what the run has done ----------------------------------------------------------------
    @property
    def done(self) -> bool:
        """The "done" state: the last check passed and nothing changed since."""
        return self._verification.done

    def _step(self, role: Role, span_id: str | None, *, name: str = "", kind: str | None = None,
              args_hash: str | None = None, step: int | None = None) -> Span:
        return Span(trace_id="", span_id=span_id or f"guard-{next(_ids)}", parent_span_id=self.run_span_id,
                    name=name, start_ns=0, end_ns=0, role=role, agent_name=self.agent, tool_name=name or None,
                    tool_kind=kind, args_hash=args_hash, step_index=step, step_budget=self.max_steps)

    # --- decisions ----------------------------------------------------------------------------
    def before_model_call(self, *, step: int | None = None, span: OtelSpan | None = None,
                          can_stop: bool = True) -> Intervention | None:
        """Count a model call against the budget. ``can_stop=False`` for hooks that cannot stop it:
        an overrun found then is acted on at the next step that can be stopped."""
        with self._lock:
            found = self._termination.observe(self._step(Role.LLM, span_id_of(span), step=step), self.run_span_id)
            if found is not None and not can_stop:
                self._over_budget = self._over_budget or found
                return None
            return self._budget_stop(found or self._over_budget, span)

    def before_tool(self, name: str, *, kind: str = "other", arguments: Any = None, args_hash: str | None = None,
                    step: int | None = None, span: OtelSpan | None = None) -> Intervention | None:
        """Whether a tool call may run; the first enforcing guard that refuses it wins."""
        if args_hash is None and arguments is not None:
            args_hash = _hash(arguments)
        span_id = span_id_of(span)
        with self._lock:
            call = self._step(Role.TOOL, span_id, name=name, kind=kind, args_hash=args_hash, step=step)
            found = self._termination.observe(call, self.run_span_id) or self._over_budget
            decision = self._budget_stop(found, span)
            if decision is None or not decision.enforced:
                decision = self._done_stop(call, span)
            if decision is None or not decision.enforced:
                decision = self._clarify(call, span)
            if decision is None or not decision.enforced:
                decision = self._loop(call, span)
            if decision is not None and decision.enforced:
                return decision
            if span_id is not None:  # a recording span: after_tool finds the record by its id and fills it in
                self._pending[span_id] = call
            return None

    def after_tool(self, name: str, *, kind: str = "other", arguments: Any = None, args_hash: str | None = None,
                   result: Any = None, result_hash: str | None = None, error: bool = False,
                   verification_passed: bool | None = None, step: int | None = None,
                   span: OtelSpan | None = None) -> None:
        """What a tool call that ran returned (its result is hashed, never kept)."""
        if args_hash is None and arguments is not None:
            args_hash = _hash(arguments)
        if result_hash is None and result is not None:
            result_hash = _hash(result)
        span_id = span_id_of(span)
        with self._lock:
            call = self._pending.pop(span_id, None) if span_id else None
        if call is None or call.tool_name != name or call.args_hash != args_hash:
            call = self._step(Role.TOOL, span_id, name=name, kind=kind, args_hash=args_hash, step=step)
        call.result_hash, call.error, call.verification_passed = result_hash, bool(error), verification_passed
        with self._lock:
            self._repetition.observe(call)
            self._verification.observe(call)

    def before_finish(self, *, claimed_success: bool = True, span: OtelSpan | None = None) -> Intervention | None:
        """The verification gate: a success claim needs a passed check after the last change."""
        cfg = self.config.verification
        if not claimed_success or not cfg.enabled:
            return None
        with self._lock:
            root = span_id_of(span) or self.run_span_id
            found = self._verification.wrong_claim(root) or self._verification.unverified_claim(root)
            if found is None:
                return None
            return self._intervene("verification", cfg.mode, "refused_finish", found.mode,
                                   f"{found.explanation}; check the work (a passing verify step after the last "
                                   "change) before declaring the task done", found.evidence_span_ids, span)

    def refusal_error(self, intervention: Intervention) -> GuardRefusal:
        """The exception that carries an enforced intervention out of a tool call: ``RunStopped`` ends the run
        (as resolved after the "done" state, at ``max_steps`` for the budget, ``cancelled`` for a loop)."""
        if intervention.action != "stopped":
            return GuardRefusal(intervention)
        if intervention.guard == "budget" and self.resolved:
            return RunStopped(intervention, "final_answer", True)
        return RunStopped(intervention, "max_steps" if intervention.guard == "budget" else "cancelled", None)

    # --- the guards ---------------------------------------------------------------------------
    def _intervene(self, guard: str, mode: str, action: str, failure_mode: str, reason: str,
                   evidence: tuple[str, ...], span: OtelSpan | None) -> Intervention:
        done = Intervention(guard, mode, action if mode == "enforce" else "recorded", failure_mode, reason,
                            tuple(evidence))
        self.interventions.append(done)
        record(span if span is not None else trace.get_current_span(), done)
        return done

    def _budget_stop(self, found: Finding | None, span: OtelSpan | None) -> Intervention | None:
        cfg = self.config.budget
        if found is None or not cfg.enabled or (cfg.mode == "observe" and "budget" in self._stopped_once):
            return None
        self._stopped_once.add("budget")
        return self._intervene("budget", cfg.mode, "stopped", found.mode,
                               f"{found.explanation}: the run is stopped at its step budget", found.evidence_span_ids, span)

    def _done_stop(self, call: Span, span: OtelSpan | None) -> Intervention | None:
        cfg = self.config.budget
        if not (cfg.enabled and cfg.stop_when_done and self.done) or call.tool_kind in WORK_KINDS_EXCLUDED:
            return None
        if cfg.mode == "observe" and "done" in self._stopped_once:
            return None
        self._stopped_once.add("done")
        self.resolved = cfg.mode == "enforce"
        check = self._verification.last_check
        checked = check.tool_name if check is not None else None
        return self._intervene("budget", cfg.mode, "stopped", "FM-1.5",
                               f"the task is done: the last check ({checked!r}) passed and nothing changed "
                               f"since, so {call.tool_name!r} is not needed; the run ends as resolved",
                               (check.span_id,) if check else (), span)

    def _clarify(self, call: Span, span: OtelSpan | None) -> Intervention | None:
        cfg = self.config.clarify_or_read_only
        found = self._clarification.observe(call, self.run_span_id)
        if found is None or not cfg.enabled:
            return None
        return self._intervene("clarify_or_read_only", cfg.mode, "blocked", found.mode,
                               f"{found.explanation}; ask for clarification first, or stay read-only",
                               (call.span_id,), span)

    def _loop(self, call: Span, span: OtelSpan | None) -> Intervention | None:
        cfg = self.config.loop
        streak = self._repetition.looping(call.tool_name or "", call.args_hash) if cfg.enabled else ()
        if not streak:
            return None
        action = "stopped" if cfg.on_loop == "stop" else "blocked"
        return self._intervene("loop", cfg.mode, action, "FM-1.3",
                               f"tool {call.tool_name!r} already returned the same result {len(streak)} times for "
                               "these arguments; calling it again will not tell you anything new: change the "
                               "arguments, try something else, or finish", streak, span)
