"""Where instrumentations write a session or conversation id: one list, read by every normalizer.

Each convention's normalizer reads its own key first (OpenInference ``session.id``, GenAI
``gen_ai.conversation.id``, OpenLLMetry's ``session_id`` association property); a span still
without an id is looked up here, so an id written in another convention's spelling (Langfuse's
``session.id`` on GenAI spans, a framework's own attribute from its folder's
``session_id_keys``) is found whichever normalizer claimed the span. docs/sessions.md has the
table of who writes what.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Mapping

from mast_otel.processors import frameworks

_ASSOCIATION = "traceloop.association.properties."

# In the order they are trusted: the conventions' own keys, then the user-chosen association
# properties that by their name hold a conversation; the frameworks' own keys come after.
GENERIC_SESSION_ID_KEYS: tuple[str, ...] = (
    "session.id",  # OpenInference; Langfuse SDK v3 (propagated to child spans)
    "gen_ai.conversation.id",  # GenAI semantic conventions; OpenLLMetry's set_conversation_id
    "langfuse.session.id",  # Langfuse's own attribute mapping
    _ASSOCIATION + "session_id",  # OpenLLMetry association properties
    _ASSOCIATION + "conversation_id",
    _ASSOCIATION + "thread_id",
    _ASSOCIATION + "sessionId",
    _ASSOCIATION + "conversationId",
    _ASSOCIATION + "threadId",
)


@cache
def session_id_keys() -> tuple[tuple[str, ...], frozenset[str]]:
    """Every key in trust order, and the same as a set (built once from the framework registry)."""
    keys = tuple(dict.fromkeys((*GENERIC_SESSION_ID_KEYS, *frameworks.registry().session_id_keys)))
    return keys, frozenset(keys)


frameworks.on_reload(session_id_keys.cache_clear)


def session_id_in(attrs: Mapping[str, Any]) -> str | None:
    """The first non-empty session id among :func:`session_id_keys`, as text (ids may be numbers)."""
    keys, any_key = session_id_keys()
    if any_key.isdisjoint(attrs):  # the usual span: one pass over its keys in C, no look-up per key
        return None
    for key in keys:
        value = attrs.get(key)
        if value is None or isinstance(value, (list, tuple, dict, bool)):
            continue
        text = value if type(value) is str else str(value)
        text = text.strip()
        if text:
            return text[:256]
    return None
