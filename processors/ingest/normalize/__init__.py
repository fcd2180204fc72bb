"""From one span's name and attributes to the ``Span`` fields detectors read.

A few key attributes pick the convention (``openinference.span.kind``,
``traceloop.span.kind``, a framework's own dialect key, ``gen_ai.*``); that convention's
normalizer sets role, model, tokens, tool names, messages and content on the span (a
framework with attributes of its own has its normalizer in its package under
``processors/frameworks/``, tried after OpenInference and OpenLLMetry and before GenAI); ``mast.*`` hints go on top. Spans no convention claims are ``Role.OTHER`` and pass
through untouched.

The decoder hands the normalizers the ``Span`` it is building, so each field is set once,
where it is read; :func:`normalize` runs the same code over a recorder and returns a dict.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from mast_otel.processors.frameworks import registry
from mast_otel.processors.ingest.normalize import genai, mast, openinference, openllmetry
from mast_otel.processors.ingest.normalize.events import Event, lent_content, with_event_content
from mast_otel.processors.ingest.normalize.common import CONTENT_CHARS, Fields
from mast_otel.processors.conversations.keys import session_id_in
from mast_otel.processors.model import AGENT

_OPENINFERENCE, _OPENLLMETRY, _GENAI_OPERATION = openinference.SPAN_KIND, openllmetry.SPAN_KIND, genai.OPERATION

__all__ = ["CONTENT_CHARS", "normalize", "normalize_into"]


def normalize_into(span: Any, name: str, attrs: Mapping[str, Any], content_chars: int = CONTENT_CHARS,
                   events: Sequence[Event] = (), event_source: str = "events") -> bool:
    """Set an agent-related span's fields on ``span`` (a ``Span``); ``False``, with nothing
    set, for any other span.

    ``content_chars`` caps every content field (messages, tool arguments and results, task,
    final answer). ``events`` are the span's events (and log records joined to it, read as
    events), read for content the attributes lack: a span whose content they supplied says so
    in ``content_source`` (``event_source``: ``"logs"`` when ``events`` are log records).
    Reads ``attrs`` and ``events``; writes only ``span``.
    """
    if _OPENINFERENCE in attrs:
        role = openinference.fill(span, name, attrs, content_chars)
    elif _OPENLLMETRY in attrs:
        role = openllmetry.fill(span, name, attrs, content_chars)
    else:
        for key, fill in registry().dialects:  # before GenAI: a dialect's model calls carry a few gen_ai.* keys too
            if key in attrs:
                role = fill(span, name, attrs, content_chars)
                break
        else:
            if not (_GENAI_OPERATION in attrs or genai.is_genai(attrs)):
                return False
            if not events:
                lent = attrs  # the usual GenAI span: no call
            elif genai.role_of(name, attrs) is None:
                return False  # no call, no agent (an event loop's cycle): what events lend gives no role
            else:
                lent = with_event_content(attrs, events)
            role = genai.fill(span, name, lent, content_chars)
            if lent is not attrs:
                if role is not None and lent_content(attrs, lent):
                    span.content_source = event_source
                attrs = lent
    if role is None:
        return False
    if span.conversation_id is None:  # an id in another convention's or a framework's own spelling
        session = session_id_in(attrs)
        if session is not None:
            span.conversation_id = session
    if role is AGENT:
        if span.agent_name and not span.workflow and span.agent_name in registry().wrapper_agents:
            span.workflow = True  # a framework's wrapper around its agents, not an agent itself
        mast.apply(span, role, attrs, content_chars)
    else:  # mast.apply for model and tool calls, the most spans, one call fewer
        mast.apply_step(span, role, attrs)
    return True


def normalize(name: str, attrs: Mapping[str, Any], content_chars: int = CONTENT_CHARS,
              events: Sequence[Event] = ()) -> dict[str, Any] | None:
    """The ``Span`` fields :func:`normalize_into` would set, as a new dict; ``None`` for a
    span no convention claims. Pure."""
    fields = Fields()
    return fields.values if normalize_into(fields, name, attrs, content_chars, events) else None
