"""Tool calls: ``execute_tool {name}`` spans with the tool kind, step and content hashes.

Argument and result hashes are recorded even with content capture off, so repeated calls can be
recognised without seeing what they carried. The tool's own exceptions pass through unchanged.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable

from opentelemetry import context, trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

from mast_otel.wire import attributes as A
from mast_otel.instrumentation.content import content_attribute
from mast_otel.instrumentation.errors import log_once
from mast_otel.wire.hashing import stable_hash
from mast_otel.instrumentation.runs import AgentRun, current_run
from mast_otel.instrumentation.settings import capture_enabled, get_tracer
from mast_otel.instrumentation.spans import F, record_error, wrap_calls

if TYPE_CHECKING:
    from contextvars import Token

    from opentelemetry.context import Context



def _kind(kind: str) -> str:
    if kind not in A.TOOL_KINDS:
        raise ValueError(f"tool kind must be one of {', '.join(A.TOOL_KINDS)}; got {kind!r}")
    return kind


def safe_hash(value: Any) -> str | None:
    """``stable_hash``, or None when the value cannot be serialised (e.g. it is circular)."""
    try:
        return stable_hash(value)
    except (TypeError, ValueError, RecursionError) as exc:
        log_once("hashing a tool value", exc)
        return None


def verification_result(value: Any) -> bool | None:
    """What a verify tool's return value says: a bool, or an object or mapping with ``passed``."""
    if isinstance(value, bool):
        return value
    passed = value.get("passed") if isinstance(value, dict) else getattr(value, "passed", None)
    return None if passed is None else bool(passed)


class ToolCall:
    """One tool call; a context manager (sync or async). Get one from :func:`tool_call`."""

    __slots__ = ("name", "kind", "arguments", "span", "_token", "_verified", "_args_hash", "_result_hash", "_step",
                 "_run", "_passed")

    def __init__(self, name: str, kind: str = "other", arguments: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a tool call needs a non-empty name")
        self.name = name
        self.kind = _kind(kind)
        self.arguments = arguments
        self.span: Span = INVALID_SPAN
        self._token: Token[Context] | None = None
        self._verified = False
        self._args_hash: str | None = None
        self._result_hash: str | None = None
        self._step: int | None = None
        self._passed: bool | None = None
        self._run: AgentRun | None = None  # set when the run has guards to tell

    def set_result(self, value: Any) -> None:
        """Record the result: its hash always, its content only when capture is on."""
        try:
            digest = safe_hash(value)
            if digest is not None:
                self._result_hash = digest
                self.span.set_attribute(A.MAST_TOOL_RESULT_HASH, digest)
            if capture_enabled():
                self.span.set_attribute(A.GEN_AI_TOOL_CALL_RESULT, content_attribute(value))
        except Exception as exc:  # noqa: BLE001 - never break the agent
            log_once("recording a tool result", exc)

    def set_verification(self, passed: bool) -> None:
        """The real result of a verification (meaningful for ``verify`` tools)."""
        self._verified = True
        self._passed = bool(passed)
        self.span.set_attribute(A.MAST_TOOL_VERIFICATION_PASSED, bool(passed))

    def _start(self) -> None:
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: self.name,
            A.MAST_TOOL_KIND: self.kind,
        }
        run = current_run()
        if run is not None:
            self._step = run.tool_step()
            run.mark_step(attrs, self._step)
        if self.arguments is not None:
            digest = safe_hash(self.arguments)
            if digest is not None:
                self._args_hash = attrs[A.MAST_TOOL_ARGS_HASH] = digest
            if capture_enabled():
                attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] = content_attribute(self.arguments)
        self.span = get_tracer().start_span(f"execute_tool {self.name}", kind=SpanKind.INTERNAL, attributes=attrs)
        self._token = context.attach(trace.set_span_in_context(self.span))

    def _record_return(self, value: Any) -> None:
        """A decorated tool's return value: the result, and for verify tools the verdict."""
        self.set_result(value)
        if self.kind == "verify" and not self._verified:
            passed = verification_result(value)
            if passed is not None:
                self.set_verification(passed)

    def _guard(self) -> None:
        """Ask the run's guards before the tool runs; an enforced refusal ends this span and is raised."""
        run = current_run()
        if run is None or run.guard is None:
            return
        self._run = run
        decision = run.guard.before_tool(self.name, kind=self.kind, args_hash=self._args_hash, step=self._step,
                                         span=self.span)
        if decision is None or not decision.enforced:
            return
        self._run = None  # the tool does not run: nothing to tell the guards afterwards
        self.span.end()
        token, self._token = self._token, None
        if token is not None:
            context.detach(token)
        raise run.guard.refusal_error(decision)

    def _tell_guard(self, exc: BaseException | None) -> None:
        run, self._run = self._run, None
        if run is None or run.guard is None:
            return
        verdict = self._passed if self.kind == "verify" else None
        run.guard.after_tool(self.name, kind=self.kind, args_hash=self._args_hash, result_hash=self._result_hash,
                             error=exc is not None, verification_passed=verdict, step=self._step, span=self.span)

    def __enter__(self) -> ToolCall:
        try:
            self._start()
        except Exception as exc:  # noqa: BLE001
            log_once("starting a tool call span", exc)
        self._guard()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is not None and isinstance(exc, Exception):
                record_error(self.span, exc)
            self._tell_guard(exc)
            self.span.end()
        except Exception as err:  # noqa: BLE001
            log_once("ending a tool call span", err)
        token, self._token = self._token, None
        if token is not None:
            context.detach(token)

    async def __aenter__(self) -> ToolCall:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.__exit__(exc_type, exc, tb)


def tool_call(name: str, *, kind: str = "other", arguments: Any = None) -> ToolCall:
    """An ``execute_tool {name}`` span: ``with tool_call("kubectl_get", kind="read", arguments=args) as call:``."""
    return ToolCall(name, kind, arguments)


def _argument_binder(fn: Callable[..., Any]) -> Callable[[tuple, dict], dict[str, Any]]:
    """Names a call's positional arguments by the function's parameters (``self``/``cls`` left out)."""
    params = list(inspect.signature(fn).parameters.values())
    skip = 1 if params and params[0].name in ("self", "cls") else 0
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), "args")

    def bind(args: tuple, kwargs: dict) -> dict[str, Any]:
        named = dict(zip(names[skip:], args[skip:]))
        if len(args) > len(names):
            named[star] = list(args[len(names):])
        named.update(kwargs)
        return named

    return bind


def tool(name: str | None = None, *, kind: str = "other") -> Callable[[F], F]:
    """Decorate a tool function (sync or async): each call is a tool call span.

    The call's arguments are hashed (by parameter name); the return value is the result, and
    for ``verify`` tools a bool or an object/mapping with ``passed`` is the verification verdict.
    """
    kind = _kind(kind)

    def decorate(fn: F) -> F:
        tool_name = name or fn.__name__
        bind = _argument_binder(fn)
        return wrap_calls(fn, lambda args, kwargs: ToolCall(tool_name, kind, bind(args, kwargs)),
                          ToolCall._record_return)

    return decorate
