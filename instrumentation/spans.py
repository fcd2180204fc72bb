"""Small helpers shared by agent runs, tool calls and model calls: errors, decorators."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from opentelemetry.trace import Span, Status, StatusCode

from mast_otel.wire.attributes import ERROR_TYPE

F = TypeVar("F", bound=Callable[..., Any])


def error_type(exc: BaseException) -> str:
    """The ``error.type`` value of an exception: its class's qualified name."""
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def record_error(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed by ``exc``: status ERROR, ``error.type`` and an exception event."""
    span.set_attribute(ERROR_TYPE, error_type(exc))
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def wrap_calls(fn: F, scope: Callable[[tuple, dict], Any], on_result: Callable[[Any, Any], None]) -> F:
    """Decorate ``fn`` (sync or async): each call runs inside the context manager
    ``scope(args, kwargs)``, which then gets ``on_result(handle, return_value)``."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            async with scope(args, kwargs) as handle:
                result = await fn(*args, **kwargs)
                on_result(handle, result)
                return result

        return call_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def call_sync(*args: Any, **kwargs: Any) -> Any:
        with scope(args, kwargs) as handle:
            result = fn(*args, **kwargs)
            on_result(handle, result)
            return result

    return call_sync  # type: ignore[return-value]
