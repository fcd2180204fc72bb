"""Runtime guards: act inside the agent on what the diagnosis would later call a failure.

Four guards (loop, budget and "done", verification gate, clarify-or-read-only), each in
``observe`` (default: record, change nothing) or ``enforce`` mode. Use ``RunGuard`` from any
agent loop, or pass ``guards=GuardConfig(...)`` to ``agent_run`` and let ``tool_call``/``@tool``
ask it. Needs pydantic (``pip install "mast-otel[guards]"``); never FastAPI, gRPC or litellm.
"""

from __future__ import annotations

try:
    import pydantic  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError('mast-otel guards need pydantic: pip install "mast-otel[guards]"') from exc

from mast_otel.instrumentation.guards.config import (
    BudgetGuardConfig, ClarifyGuardConfig, GuardConfig, GuardMode, LoopGuardConfig, VerificationGuardConfig,
)
from mast_otel.instrumentation.guards.events import GuardRefusal, Intervention, RunStopped
from mast_otel.instrumentation.guards.run_guard import RunGuard

__all__ = ["BudgetGuardConfig", "ClarifyGuardConfig", "GuardConfig", "GuardMode", "GuardRefusal", "Intervention",
           "LoopGuardConfig", "RunGuard", "RunStopped", "VerificationGuardConfig"]
