"""Agent runs: the ``invoke_agent {name}`` span, its ``mast.*`` hints and its step counter.

The current run travels in the OpenTelemetry context (a contextvar), so it is found from nested
functions, threads started with a copied context and asyncio tasks alike. Nested runs
(sub-agents, handoffs) keep their own step counters and inherit the conversation id. A run
carries a conversation id only when the application gives one (``conversation_id=``, or a run it
is nested in was given one): an invented id would make every run a one-turn session of its own.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from opentelemetry import context, trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

from mast_otel.wire import attributes as A
from mast_otel.wire.claims import claim_in
from mast_otel.instrumentation.content import content_attribute
from mast_otel.instrumentation.errors import log_once
from mast_otel.instrumentation.messages import text_messages_attribute
from mast_otel.instrumentation.settings import SETTINGS, capture_enabled, get_tracer
from mast_otel.instrumentation.spans import F, record_error, wrap_calls

if TYPE_CHECKING:  # guards need pydantic: imported only when a run is given guards
    from contextvars import Token

    from opentelemetry.context import Context

    from mast_otel.instrumentation.guards import GuardConfig, RunGuard

# Called as each run starts, before its span: ``litellm_support`` hooks litellm here once the
# application has imported it (it registers itself, so this module needs no litellm knowledge).
_START_HOOKS: list[Callable[[], None]] = []


def on_run_start(hook: Callable[[], None]) -> None:
    """Call ``hook`` as each agent run starts (once per hook however often it is registered)."""
    if hook not in _START_HOOKS:
        _START_HOOKS.append(hook)


_RUN_KEY = context.create_key("mast-otel-agent-run")


class PendingModelCall(Protocol):
    """A model call of this run whose response has not been recorded yet."""

    def abandon(self) -> None: ...


def current_run() -> AgentRun | None:
    """The innermost agent run of the calling context, if any."""
    return context.get_value(_RUN_KEY)  # type: ignore[return-value]


def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _strings(values: Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError(f"{what} must be a sequence of strings, not a single string")
    return tuple(str(v) for v in values)


def _exit_reason(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    if isinstance(exc, Exception):
        return "error"
    return "cancelled"  # CancelledError, KeyboardInterrupt, GeneratorExit, SystemExit


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class AgentRun:
    """One agent run. Use as a context manager (sync or async) or as a decorator.

    As a decorator, every call of the decorated function is a new run with these settings;
    a string it returns is recorded as the final answer. Inside, :func:`current_run` gives
    the run.
    """

    def __init__(
        self,
        name: str,
        *,
        max_steps: int | None = None,
        ambiguous: bool | None = None,
        constraints: Iterable[str] = (),
        role: str | None = None,
        allowed_tools: Iterable[str] | None = None,
        conversation_id: str | None = None,
        task: str | None = None,
        guards: GuardConfig | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("an agent run needs a non-empty name")
        if max_steps is not None and (isinstance(max_steps, bool) or int(max_steps) < 0):
            raise ValueError(f"max_steps must be a non-negative integer, got {max_steps!r}")
        self._options: dict[str, Any] = dict(max_steps=max_steps, ambiguous=ambiguous, constraints=constraints, role=role,
                             allowed_tools=allowed_tools, conversation_id=conversation_id, task=task,
                             guards=guards)
        self.guards = guards
        self.guard: RunGuard | None = None  # made when the run starts, when it has guards
        self.name = name
        self.max_steps = None if max_steps is None else int(max_steps)
        self.ambiguous = None if ambiguous is None else bool(ambiguous)
        self.constraints = _strings(constraints, "constraints") or ()
        self.role = role
        self.allowed_tools = _strings(allowed_tools, "allowed_tools")
        self.task = task
        self.conversation_id = conversation_id
        self.span: Span = INVALID_SPAN
        self._token: Token[Context] | None = None
        self._step = 0
        self._step_used = False  # a model or tool call already took the current step
        self._step_has_model = False
        self._lock = threading.Lock()
        self._calls_settled = threading.Condition(self._lock)
        self._open_calls: dict[str, PendingModelCall] = {}
        self._termination_reason: str | None = None
        self._has_final_answer = False
        self._claim_set = False

    # --- steps --------------------------------------------------------------------------------
    @property
    def step(self) -> int:
        """The current iteration index (0 for the first)."""
        return self._step

    def next_step(self) -> int:
        """Start a new iteration and return its index (an iteration with nothing in it is reused)."""
        with self._lock:
            if self._step_used:
                self._step += 1
                self._step_used = self._step_has_model = False
            return self._step

    def model_step(self) -> int:
        """The step of a model call starting now: each model call opens a new iteration."""
        with self._lock:
            if self._step_has_model:
                self._step += 1
            self._step_used = self._step_has_model = True
            return self._step

    def tool_step(self) -> int:
        """The step of a tool call starting now: the current iteration."""
        with self._lock:
            self._step_used = True
            return self._step

    def mark_step(self, attrs: dict[str, Any], step: int) -> None:
        """Put this run's step facts on a model or tool span's attributes: its step, conversation,
        agent name and budget, so the processor can check the budget before this run's span ends."""
        attrs[A.MAST_STEP_INDEX] = step
        if self.conversation_id is not None:
            attrs[A.GEN_AI_CONVERSATION_ID] = self.conversation_id
        attrs[A.GEN_AI_AGENT_NAME] = self.name
        if self.max_steps is not None:
            attrs[A.MAST_TASK_MAX_STEPS] = self.max_steps

    # --- run facts ----------------------------------------------------------------------------
    def set_final_answer(self, text: str) -> None:
        """Record the run's answer (its text only when content capture is on).

        Ending with an answer reads as claiming the task done, unless the answer says it was
        not ("NOT RESOLVED: ...", "I could not ..."): then no success is claimed, even with
        content capture off. ``set_claimed_success`` always has the last word.
        """
        self._has_final_answer = True
        if capture_enabled():
            self.span.set_attribute(A.MAST_RUN_FINAL_ANSWER, content_attribute(text))
        if not self._claim_set:
            found = claim_in(text) if isinstance(text, str) else None
            if found is not None and not found[0]:
                self.span.set_attribute(A.MAST_RUN_CLAIMED_SUCCESS, False)

    def finish(self, answer: str, *, claimed_success: bool | None = None) -> dict[str, object] | None:
        """End the run's work with ``answer``, through the verification gate when the run has guards.

        Returns ``None`` when the answer is recorded, or, when an enforcing gate refuses a success
        claim that no passing check supports, the structured refusal to feed back to the model
        (nothing is recorded then and the run goes on).
        """
        claimed = claimed_success
        if claimed is None:
            found = claim_in(answer) if isinstance(answer, str) else None
            claimed = found is None or bool(found[0])
        if self.guard is not None:
            refused = self.guard.before_finish(claimed_success=claimed, span=self.span)
            if refused is not None and refused.enforced:
                return refused.refusal()
        self.set_final_answer(answer)
        if claimed_success is not None:
            self.set_claimed_success(claimed_success)
        return None

    def set_termination_reason(self, reason: str) -> None:
        """Why the run stopped: one of ``attributes.TERMINATION_REASONS``."""
        self._termination_reason = _choice(reason, A.TERMINATION_REASONS, "termination reason")
        self.span.set_attribute(A.MAST_RUN_TERMINATION_REASON, reason)

    def set_claimed_success(self, claimed: bool) -> None:
        """Whether the agent itself declared the task done."""
        self._claim_set = True
        self.span.set_attribute(A.MAST_RUN_CLAIMED_SUCCESS, bool(claimed))

    def set_outcome(self, outcome: str, score: float | None = None) -> None:
        """Ground truth when known: ``success``/``failure``/``unknown``, and an optional score."""
        _choice(outcome, A.OUTCOMES, "outcome")
        if score is not None and not math.isfinite(float(score)):
            raise ValueError(f"score must be a finite number, got {score!r}")
        self.span.set_attribute(A.MAST_RUN_OUTCOME, outcome)
        if score is not None:
            self.span.set_attribute(A.MAST_RUN_SCORE, float(score))

    # --- model calls still waiting for their response -----------------------------------------
    def call_opened(self, call_id: str, call: PendingModelCall) -> None:
        with self._lock:
            self._open_calls[call_id] = call

    def call_closed(self, call_id: str) -> None:
        with self._lock:
            if self._open_calls.pop(call_id, None) is not None and not self._open_calls:
                self._calls_settled.notify_all()

    def _settle_calls(self) -> None:
        """Give model calls a moment to report, so their spans end before this run's."""
        if not self._open_calls or _loop_running():  # their reports come on this very loop
            return
        with self._calls_settled:
            self._calls_settled.wait_for(lambda: not self._open_calls, SETTINGS.model_call_grace_seconds)
        self._abandon_calls()

    async def _settle_calls_async(self) -> None:
        deadline = time.monotonic() + SETTINGS.model_call_grace_seconds
        while self._open_calls and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        self._abandon_calls()

    def _abandon_calls(self) -> None:
        with self._lock:
            calls = list(self._open_calls.values())
        for call in calls:
            call.abandon()

    # --- lifecycle ----------------------------------------------------------------------------
    def _start(self) -> None:
        for hook in _START_HOOKS:
            hook()
        parent = current_run()
        if self.conversation_id is None and parent is not None:
            self.conversation_id = parent.conversation_id
        attrs: dict[str, Any] = {A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: self.name}
        if self.conversation_id is not None:
            attrs[A.GEN_AI_CONVERSATION_ID] = self.conversation_id
        if self.max_steps is not None:
            attrs[A.MAST_TASK_MAX_STEPS] = self.max_steps
        if self.ambiguous is not None:
            attrs[A.MAST_TASK_AMBIGUOUS] = self.ambiguous
        if self.constraints:
            attrs[A.MAST_TASK_CONSTRAINTS] = list(self.constraints)
        if self.role:
            attrs[A.MAST_AGENT_ROLE] = self.role
        if self.allowed_tools is not None:
            attrs[A.MAST_AGENT_ALLOWED_TOOLS] = list(self.allowed_tools)
        if self.task and capture_enabled():
            attrs[A.GEN_AI_INPUT_MESSAGES] = text_messages_attribute("user", self.task)
        self.span = get_tracer().start_span(f"invoke_agent {self.name}", kind=SpanKind.INTERNAL, attributes=attrs)
        if self.guards is not None:
            from mast_otel.instrumentation.guards.run_guard import RunGuard, span_id_of

            self.guard = RunGuard(self.guards, agent=self.name, max_steps=self.max_steps,
                                  ambiguous=bool(self.ambiguous), run_span_id=span_id_of(self.span))
        ctx = context.set_value(_RUN_KEY, self, trace.set_span_in_context(self.span))
        self._token = context.attach(ctx)

    def _stopped_by_guard(self, exc: BaseException | None) -> bool:
        """A guard ended the run (``RunStopped``): record why, as the run's own ending, not an error."""
        stopped = getattr(exc, "termination_reason", None) if self.guard is not None else None
        if stopped is None:
            return False
        self.set_termination_reason(stopped)
        claimed = getattr(exc, "claimed_success", None)
        if claimed is not None:
            self.set_claimed_success(bool(claimed))
        return True

    def _record_exit(self, exc: BaseException | None) -> None:
        if exc is not None and isinstance(exc, Exception):
            record_error(self.span, exc)
        if self._termination_reason is None:
            reason = _exit_reason(exc) if exc is not None else ("final_answer" if self._has_final_answer else None)
            if reason is not None:
                self._termination_reason = reason
                self.span.set_attribute(A.MAST_RUN_TERMINATION_REASON, reason)

    def _end(self) -> None:
        # litellm's own OTel callback writes a model call's attributes onto the active span
        # when it does not open a span of its own; say again what this span is.
        self.span.set_attribute(A.GEN_AI_OPERATION_NAME, A.OP_INVOKE_AGENT)
        self.span.end()
        token, self._token = self._token, None
        if token is not None:
            context.detach(token)

    def __enter__(self) -> AgentRun:
        if self._token is not None:
            raise RuntimeError(f"agent run {self.name!r} is already active; create a new one per run")
        try:
            self._start()
        except Exception as exc:  # noqa: BLE001 - never break the agent
            log_once("starting an agent run span", exc)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        stopped = False
        try:
            stopped = self._stopped_by_guard(exc)
            self._record_exit(None if stopped else exc)
            self._settle_calls()
        except Exception as err:  # noqa: BLE001
            log_once("ending an agent run span", err)
        self._end()
        return stopped  # a run a guard stopped ends here, quietly

    async def __aenter__(self) -> AgentRun:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        stopped = False
        try:
            stopped = self._stopped_by_guard(exc)
            self._record_exit(None if stopped else exc)
            await self._settle_calls_async()
        except Exception as err:  # noqa: BLE001
            log_once("ending an agent run span", err)
        self._end()
        return stopped

    # --- decorator ----------------------------------------------------------------------------
    def _fresh(self) -> AgentRun:
        return AgentRun(self.name, **self._options)

    def _answer_from(self, result: Any) -> None:
        if isinstance(result, str) and not self._has_final_answer:
            self.set_final_answer(result)

    def __call__(self, fn: F) -> F:
        return wrap_calls(fn, lambda args, kwargs: self._fresh(), AgentRun._answer_from)


agent_run = AgentRun
"""``agent_run(name, *, max_steps=None, ambiguous=None, constraints=(), role=None,
allowed_tools=None, conversation_id=None, task=None, guards=None)``: an ``invoke_agent {name}`` span around
one agent run. ``task`` (the request) is recorded only when content capture is on;
``conversation_id`` (the application's own session or conversation id) makes the run a turn of
that session, and nested runs inherit it."""
