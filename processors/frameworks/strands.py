"""Strands Agents: a Swarm hands over with ``handoff_to_agent(agent_name, message)``.

The receiving agent of a Swarm handoff never gets the conversation: it starts afresh from a
"Context:" message (the handoff message, the user's request, the agents so far). A small
receiving context is that design, not a dropped conversation.
"""

from __future__ import annotations

# Handoff tools whose receiver starts from a fresh context by design.
FRESH_START_HANDOFFS = frozenset({"handoff_to_agent"})
