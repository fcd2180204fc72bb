"""Strands Agents (1.62) through its native OpenTelemetry GenAI spans: how a new user sets up tracing per its docs.

The docs' "Option 1": a global tracer provider configured before the agent is built is used
automatically (no StrandsTelemetry, default semantic conventions). Limit: the per-invocation
``limits={"turns": LIMIT}`` cap (graceful stop, ``stop_reason="limit_turns"``, no exception).
History: a custom ConversationManager whose ``BeforeModelCallEvent`` hook trims
``agent.messages``. Content off: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_unredacted_attributes=``
(an empty allow-list: every sensitive attribute is redacted).
"""

import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:
        # Strands' documented redaction switch: an empty allow-list redacts every sensitive attribute.
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_unredacted_attributes="
    provider, exporter = tracer_provider()  # the global provider, set before strands creates its tracer

    from strands import Agent, tool
    from strands.agent.conversation_manager import ConversationManager
    from strands.hooks import BeforeModelCallEvent
    from strands.models.openai import OpenAIModel

    class TightWindow(ConversationManager):
        """Once the conversation about to be sent exceeds HISTORY_TRIGGER messages, keep the last HISTORY_KEEP."""

        def register_hooks(self, registry, **kwargs):
            super().register_hooks(registry, **kwargs)
            registry.add_callback(BeforeModelCallEvent, self._trim)

        def _trim(self, event):
            messages = event.agent.messages
            if len(messages) > HISTORY_TRIGGER:  # the system prompt is sent apart from the messages
                self.removed_message_count += len(messages) - HISTORY_KEEP
                del messages[:-HISTORY_KEEP]

        def apply_management(self, agent, **kwargs):
            pass

        def reduce_context(self, agent, e=None, **kwargs):
            if e is not None:
                raise e

    def run(scenario, stub, cluster):
        model = OpenAIModel(client_args={"base_url": stub.base_url, "api_key": "x"}, model_id="gpt-4o-mini")
        extra = {"conversation_manager": TightWindow()} if scenario.name == "history" else {}
        agent = Agent(name="sre-agent", model=model, system_prompt=INSTRUCTIONS,
                      tools=[tool(method) for method in cluster.tools()], callback_handler=None, **extra)
        result = agent(TASK, limits={"turns": LIMIT})
        return result

    record_all(
        framework="strands",
        instrumentation="strands-agents native OpenTelemetry (strands.telemetry.tracer, default conventions)",
        packages=["strands-agents", "openai", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("Limit: agent(TASK, limits={'turns': LIMIT}) stops gracefully with stop_reason 'limit_turns' "
               "(no exception). History: custom ConversationManager with a BeforeModelCallEvent hook that, once "
               f"agent.messages (system prompt excluded) exceeds {HISTORY_TRIGGER}, deletes all but the last "
               f"{HISTORY_KEEP} in place. No-content: OTEL_SEMCONV_STABILITY_OPT_IN='gen_ai_unredacted_attributes=' "
               "(strands' redaction opt-in with an empty allow-list): content values become a redaction marker."),
    )


if __name__ == "__main__":
    main()
