"""What both adapters need: a tool's arguments as a value, a tool result's check verdict, the
verdict's claim, and the exception an enforced stop raises."""

from __future__ import annotations

import json
from typing import Any, Mapping

from mast_otel.wire.claims import claim_in
from mast_otel.instrumentation.guards.events import Intervention
from mast_otel.instrumentation.guards.run_guard import RunGuard
from mast_otel.instrumentation.tools import verification_result


def arguments_of(raw: Any) -> Any:
    """Tool arguments as frameworks pass them (a JSON string or a mapping), as a value to hash."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return dict(raw) if isinstance(raw, Mapping) else raw


def claims_success(answer: Any) -> bool:
    """A final answer claims success unless it says the task was not done."""
    found = claim_in(answer) if isinstance(answer, str) else None
    return found is None or bool(found[0])


def tell(guard: RunGuard, name: str, kind: str, arguments: Any, result: Any) -> None:
    """Report a tool call that ran, with a check's verdict read from its result."""
    verdict = verification_result(result) if kind == "verify" else None
    guard.after_tool(name, kind=kind, arguments=arguments, result=result if result is not None else "",
                     verification_passed=verdict)


def stop(guard: RunGuard, intervention: Intervention) -> Exception:
    """The exception that ends the run (``RunStopped``; ``agent_run`` ends quietly on it)."""
    return guard.refusal_error(intervention)
