"""AutoGen AgentChat: OpenInference names an agent's span after the method it ran
(``<agent>.on_messages``, ``<agent>.on_messages_stream``); a span per turn, so an agent entered
several times is one worker. Its ``max_turns`` stops a team quietly, with no error."""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework

FRAMEWORK = Framework(
    name="autogen",
    spellings=("AutoGen", "AG2", "autogen_agentchat"),
    agent_methods=("on_messages", "on_messages_stream"),
)
