"""Switching the litellm hook on and off, without importing litellm until it is wanted."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from mast_otel.instrumentation.errors import log_once
from mast_otel.instrumentation.runs import on_run_start

# litellm moves a callback object from ``litellm.callbacks`` into these lists on first use.
_CALLBACK_LISTS = ("callbacks", "input_callback", "success_callback", "failure_callback",
                   "_async_input_callback", "_async_success_callback", "_async_failure_callback")

_callback: Any = None
_auto = False  # set by setup_tracing: hook litellm as soon as the application imports it
_lock = threading.Lock()


def instrument_litellm() -> None:
    """Record every litellm ``completion``/``acompletion`` inside an agent run as a model-call span."""
    global _callback
    with _lock:
        if _callback is not None:
            return
        if "litellm" not in sys.modules:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
        import litellm

        from mast_otel.instrumentation.litellm_hook import MastOtelLiteLLMCallback

        _callback = MastOtelLiteLLMCallback()
        litellm.callbacks.append(_callback)


def uninstrument_litellm() -> None:
    """Remove the litellm hook (from every list litellm may have copied it into), and stop
    hooking it automatically."""
    global _callback, _auto
    with _lock:
        _auto = False
        callback, _callback = _callback, None
        if callback is None or "litellm" not in sys.modules:
            return
        litellm = sys.modules["litellm"]
        for name in _CALLBACK_LISTS:
            entries = getattr(litellm, name, None)
            if isinstance(entries, list):
                entries[:] = [c for c in entries if c is not callback]


def auto_instrument_litellm(enabled: bool = True) -> None:
    """Hook litellm once the application has imported it (checked when an agent run starts)."""
    global _auto
    _auto = enabled
    if enabled:
        on_run_start(maybe_instrument_litellm)
    maybe_instrument_litellm()


def maybe_instrument_litellm() -> None:
    if _auto and _callback is None and "litellm" in sys.modules:
        try:
            instrument_litellm()
        except Exception as exc:  # noqa: BLE001 - never break the agent
            log_once("hooking into litellm", exc)
