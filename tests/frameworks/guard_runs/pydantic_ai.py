"""Pydantic AI with ``PydanticAIGuards`` (runs in ``.corpus-envs/pydantic-ai``)."""

from __future__ import annotations

from tests.frameworks.guard_runs.common import KINDS, TOOLS, main


def run(guard, stub, agent_run):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from mast_otel.instrumentation.guards.adapters.pydantic_ai import PydanticAIGuards

    guards = PydanticAIGuards(guard, kinds=KINDS)
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=stub.base_url, api_key="sk-stub"))
    agent = Agent(model, name="sre-agent", instructions="Fix the incident.", tools=TOOLS,
                  capabilities=[guards.capability()], retries=3)
    agent.output_validator(guards.output_validator)
    result = agent.run_sync("checkout is down")
    agent_run.set_final_answer(result.output)  # the gate already ran in the output validator
    return result.output


if __name__ == "__main__":
    main(run)
