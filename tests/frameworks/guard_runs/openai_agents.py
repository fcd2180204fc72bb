"""The OpenAI Agents SDK with ``OpenAIAgentsGuards`` (runs in ``.corpus-envs/openai-agents``)."""

from __future__ import annotations

from tests.frameworks.guard_runs.common import KINDS, TOOLS, main


def run(guard, stub, agent_run):
    from agents import Agent, OpenAIChatCompletionsModel, OutputGuardrailTripwireTriggered, Runner, function_tool
    from agents.tracing import set_tracing_disabled
    from openai import AsyncOpenAI

    from mast_otel.instrumentation.guards.adapters.openai_agents import OpenAIAgentsGuards

    set_tracing_disabled(True)  # nothing is uploaded to OpenAI
    guards = OpenAIAgentsGuards(guard, kinds=KINDS)
    client = AsyncOpenAI(base_url=stub.base_url, api_key="sk-stub")
    agent = Agent(name="sre-agent", instructions="Fix the incident.",
                  model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
                  tools=guards.tools([function_tool(t) for t in TOOLS]), output_guardrails=[guards.output_guardrail()])
    task = "checkout is down"
    for _ in range(3):
        try:
            result = Runner.run_sync(agent, task, hooks=guards.hooks(), max_turns=12)
        except OutputGuardrailTripwireTriggered as refused:
            # the gate's refusal goes back to the model, with the run so far
            info = refused.guardrail_result.output.output_info
            data = refused.run_data
            before = [{"role": "user", "content": data.input}] if isinstance(data.input, str) else list(data.input)
            task = [*before, *[item.to_input_item() for item in data.new_items],
                    {"role": "user", "content": f"Refused: {info['reason']}"}]
            continue
        agent_run.set_final_answer(result.final_output)  # the gate already ran in the output guardrail
        return result.final_output
    return None


if __name__ == "__main__":
    main(run)
