"""Model-call spans, independent of the client library that reports them.

A call is *begun* when the client is about to send it, in the caller's context: that fixes the
parent span, the run, its step and conversation. It is *recorded* when the client reports the
response or the error, possibly on another thread: the ``chat {model}`` span is then written
with the real start and end times. The first report wins; later duplicates are ignored.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import Context, get_current
from opentelemetry.trace import SpanKind

from mast_otel.wire import attributes as A
from mast_otel.instrumentation.runs import AgentRun, current_run
from mast_otel.instrumentation.settings import get_tracer
from mast_otel.instrumentation.spans import record_error

MAX_OPEN_CALLS = 10_000  # calls that never report are dropped beyond this many
_FINISHED_MEMORY = 4096  # ids of recently recorded calls, to ignore duplicate reports


@dataclass(slots=True, eq=False)
class ModelCall:
    """A model call begun inside an agent run, waiting for its response."""

    call_id: str
    name: str
    parent: Context  # the context the call was made in: its span is the parent
    run: AgentRun
    start_ns: int
    attributes: dict[str, Any]

    def abandon(self) -> None:
        """Write the span with what is known, because its run is ending without a response."""
        if take_model_call(self.call_id) is self:
            record_model_call(self, end_ns=time.time_ns())


_open: OrderedDict[str, ModelCall] = OrderedDict()
_finished: OrderedDict[str, None] = OrderedDict()
_lock = threading.Lock()


def begin_model_call(call_id: str, request_model: str, attributes: dict[str, Any], *,
                     operation: str = A.OP_CHAT, start_ns: int | None = None) -> ModelCall | None:
    """Register a call starting now in the current run; None outside runs or if already begun."""
    run = current_run()
    if run is None:
        return None
    with _lock:
        if call_id in _open or call_id in _finished:
            return None
    attributes[A.GEN_AI_OPERATION_NAME] = operation
    attributes[A.GEN_AI_REQUEST_MODEL] = request_model
    step = run.model_step()
    run.mark_step(attributes, step)
    if run.guard is not None:  # litellm's hook cannot stop a call: an overrun is acted on at the next tool call
        run.guard.before_model_call(step=step, span=run.span, can_stop=False)
    call = ModelCall(call_id, f"{operation} {request_model}", get_current(), run,
                     start_ns if start_ns is not None else time.time_ns(), attributes)
    with _lock:
        _open[call_id] = call
        overflow = len(_open) - MAX_OPEN_CALLS
        dropped = [_open.popitem(last=False)[1] for _ in range(max(0, overflow))]
    run.call_opened(call_id, call)
    for old in dropped:
        old.run.call_closed(old.call_id)
    return call


def take_model_call(call_id: str) -> ModelCall | None:
    """The open call with this id, removed so that only one report records it."""
    with _lock:
        call = _open.pop(call_id, None)
        if call is not None:
            _finished[call_id] = None
            if len(_finished) > _FINISHED_MEMORY:
                _finished.popitem(last=False)
    return call


def was_recorded(call_id: str) -> bool:
    with _lock:
        return call_id in _finished


def record_model_call(call: ModelCall, *, end_ns: int, start_ns: int | None = None,
                      response_attributes: dict[str, Any] | None = None,
                      error: BaseException | None = None) -> None:
    """Write the call's span, a child of where it was begun, and release it from its run."""
    try:
        attributes = call.attributes  # the call's own dict, recorded once (take_model_call): extend it in place
        if response_attributes:
            attributes.update(response_attributes)
        span = get_tracer().start_span(call.name, context=call.parent, kind=SpanKind.CLIENT, attributes=attributes,
                                       start_time=start_ns if start_ns is not None else call.start_ns)
        if error is not None:
            record_error(span, error)
        span.end(end_time=max(end_ns, start_ns or call.start_ns))
    finally:
        call.run.call_closed(call.call_id)
