"""Guards for the OpenAI Agents SDK (``openai-agents``), at its native hook points.

- tool input guardrails ask the guards before each function tool runs: a refused call becomes
  ``ToolGuardrailFunctionOutput.reject_content(...)`` (the model gets the refusal instead of
  a result), a stopped run raises ``RunStopped`` out of ``Runner.run``;
- tool output guardrails tell the guards what the tool returned (a ``verify`` tool's
  ``bool``/``{"passed": ...}`` result is its verdict);
- ``RunHooks.on_llm_start`` counts each model call against the budget;
- an output guardrail is the verification gate: it trips (``OutputGuardrailTripwireTriggered``)
  on a success claim no passing check supports; the refusal is its ``output_info``.

    guards = OpenAIAgentsGuards(run.guard, kinds={"restart": "write", "check_health": "verify"})
    agent = Agent(..., tools=guards.tools([function_tool(f) for f in fns]),
                  output_guardrails=[guards.output_guardrail()])
    Runner.run_sync(agent, task, hooks=guards.hooks())
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.instrumentation.guards.adapters._common import arguments_of, claims_success, stop, tell
from mast_otel.instrumentation.guards.run_guard import RunGuard


class OpenAIAgentsGuards:
    """One run's guards wired into an OpenAI Agents SDK agent."""

    def __init__(self, guard: RunGuard, *, kinds: Mapping[str, str] | None = None) -> None:
        self.guard = guard
        self.kinds = dict(kinds or {})  # tool name -> mast tool kind (read, write, verify, clarify, ...)

    def kind(self, tool: str) -> str:
        return self.kinds.get(tool, "other")

    def tools(self, tools: list[Any]) -> list[Any]:
        """``tools`` (function tools) with the guards' input and output guardrails added."""
        from agents.tool_guardrails import ToolInputGuardrail, ToolOutputGuardrail

        before = ToolInputGuardrail(self._before, name="mast_guards")
        after = ToolOutputGuardrail(self._after, name="mast_guards")
        for tool in tools:
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), before]
            tool.tool_output_guardrails = [*(tool.tool_output_guardrails or []), after]
        return tools

    def _before(self, data: Any) -> Any:
        from agents.tool_guardrails import ToolGuardrailFunctionOutput

        name = data.context.tool_name
        decision = self.guard.before_tool(name, kind=self.kind(name), arguments=arguments_of(data.context.tool_arguments))
        if decision is None or not decision.enforced:
            return ToolGuardrailFunctionOutput.allow()
        if decision.action == "stopped":
            raise stop(self.guard, decision)
        return ToolGuardrailFunctionOutput.reject_content(decision.message(), output_info=decision.refusal())

    def _after(self, data: Any) -> Any:
        from agents.tool_guardrails import ToolGuardrailFunctionOutput

        name = data.context.tool_name
        tell(self.guard, name, self.kind(name), arguments_of(data.context.tool_arguments), data.output)
        return ToolGuardrailFunctionOutput.allow()

    def hooks(self) -> Any:
        """``RunHooks`` that count model calls against the budget (pass as ``Runner.run(..., hooks=)``)."""
        from agents import RunHooks

        guard = self.guard

        class _GuardHooks(RunHooks):
            async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
                decision = guard.before_model_call()
                if decision is not None and decision.enforced:
                    raise stop(guard, decision)

        return _GuardHooks()

    def output_guardrail(self) -> Any:
        """The verification gate as an output guardrail: trips on an unsupported success claim."""
        from agents import GuardrailFunctionOutput, OutputGuardrail

        def gate(context: Any, agent: Any, output: Any) -> Any:
            refused = self.guard.before_finish(claimed_success=claims_success(output))
            if refused is None or not refused.enforced:
                return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)
            return GuardrailFunctionOutput(output_info=refused.refusal(), tripwire_triggered=True)

        return OutputGuardrail(gate, name="mast_verification_gate")
