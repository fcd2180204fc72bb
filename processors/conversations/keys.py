"""Where instrumentations write a session or conversation id: one list, read by every normalizer.

Each convention's normalizer reads its own key first (OpenInference ``session.id``, GenAI
``gen_ai.conversation.id``, OpenLLMetry's ``session_id`` association property); a span still
without an id is looked up here, so an id written in another convention's spelling (Langfuse's
``session.id`` on GenAI spans, the AI SDK's telemetry metadata, ADK's own attribute) is found
whichever normalizer claimed the span. docs/sessions.md has the table of who writes what.
"""

from __future__ import annotations

from typing import Any, Mapping

_ASSOCIATION = "traceloop.association.properties."
_AISDK_METADATA = "ai.telemetry.metadata."

# In the order they are trusted: the conventions' own keys, then SDK spellings, then the
# user-chosen metadata keys that by their name hold a conversation.
SESSION_ID_KEYS: tuple[str, ...] = (
    "session.id",  # OpenInference; Langfuse SDK v3 (propagated to child spans)
    "gen_ai.conversation.id",  # GenAI semantic conventions; OpenLLMetry's set_conversation_id
    "langfuse.session.id",  # Langfuse's own attribute mapping
    _ASSOCIATION + "session_id",  # OpenLLMetry association properties
    _ASSOCIATION + "conversation_id",
    _ASSOCIATION + "thread_id",
    _ASSOCIATION + "sessionId",
    _ASSOCIATION + "conversationId",
    _ASSOCIATION + "threadId",
    _AISDK_METADATA + "sessionId",  # Vercel AI SDK: experimental_telemetry.metadata
    _AISDK_METADATA + "session_id",
    _AISDK_METADATA + "conversationId",
    _AISDK_METADATA + "threadId",
    "gcp.vertex.agent.session_id",  # Google ADK, on its call_llm spans
)
_ANY_KEY = frozenset(SESSION_ID_KEYS)


def session_id_in(attrs: Mapping[str, Any]) -> str | None:
    """The first non-empty session id among :data:`SESSION_ID_KEYS`, as text (ids may be numbers)."""
    if _ANY_KEY.isdisjoint(attrs):  # the usual span: one pass over its keys in C, no look-up per key
        return None
    for key in SESSION_ID_KEYS:
        value = attrs.get(key)
        if value is None or isinstance(value, (list, tuple, dict, bool)):
            continue
        text = value if type(value) is str else str(value)
        text = text.strip()
        if text:
            return text[:256]
    return None
