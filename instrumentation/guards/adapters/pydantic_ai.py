"""Guards for Pydantic AI, at its native hook points.

- a capability (``AbstractCapability``) wraps each tool's execution: a refused call returns the
  refusal to the model as the tool's result (the tool does not run), a stopped run raises
  ``RunStopped`` out of ``agent.run``; after the tool runs it tells the guards what it returned
  (a ``verify`` tool's ``bool``/``{"passed": ...}`` result is its verdict); each model request
  counts against the budget;
- an output validator is the verification gate: on a success claim no passing check supports
  it raises ``ModelRetry`` with the refusal, so the model is asked again.

    guards = PydanticAIGuards(run.guard, kinds={"restart": "write", "check_health": "verify"})
    agent = Agent(model, tools=[...], capabilities=[guards.capability()])
    agent.output_validator(guards.output_validator)
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.instrumentation.guards.adapters._common import arguments_of, claims_success, stop, tell
from mast_otel.instrumentation.guards.run_guard import RunGuard


class PydanticAIGuards:
    """One run's guards wired into a Pydantic AI agent."""

    def __init__(self, guard: RunGuard, *, kinds: Mapping[str, str] | None = None) -> None:
        self.guard = guard
        self.kinds = dict(kinds or {})

    def kind(self, tool: str) -> str:
        return self.kinds.get(tool, "other")

    def capability(self) -> Any:
        """The capability to pass in ``Agent(..., capabilities=[...])``."""
        from pydantic_ai.capabilities import AbstractCapability

        adapter = self

        class MastGuards(AbstractCapability):
            async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
                decision = adapter.guard.before_model_call()
                if decision is not None and decision.enforced:
                    raise stop(adapter.guard, decision)
                return request_context

            async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
                name, kind = call.tool_name, adapter.kind(call.tool_name)
                arguments = arguments_of(args)
                decision = adapter.guard.before_tool(name, kind=kind, arguments=arguments)
                if decision is not None and decision.enforced:
                    if decision.action == "stopped":
                        raise stop(adapter.guard, decision)
                    return decision.refusal()  # the model reads the refusal as the tool's result
                result = await handler(args)
                tell(adapter.guard, name, kind, arguments, result)
                return result

        return MastGuards()

    def output_validator(self, ctx: Any, output: Any) -> Any:
        """The verification gate (register with ``agent.output_validator``)."""
        from pydantic_ai import ModelRetry

        refused = self.guard.before_finish(claimed_success=claims_success(output))
        if refused is not None and refused.enforced:
            raise ModelRetry(refused.message())
        return output
