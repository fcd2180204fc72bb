"""From one span's name and attributes to the ``Span`` fields detectors read.

A few key attributes pick the convention (``openinference.span.kind``,
``traceloop.span.kind``, the Vercel AI SDK's ``ai.operationId``, ``gen_ai.*``); that
convention's normalizer sets role, model, tokens, tool names, messages and content on the
span; ``mast.*`` hints go on top. Spans no convention claims are ``Role.OTHER`` and pass
through untouched.

The decoder hands the normalizers the ``Span`` it is building, so each field is set once,
where it is read; :func:`normalize` runs the same code over a recorder and returns a dict.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from mast_otel.processors.ingest.normalize import aisdk, genai, mast, openinference, openllmetry
from mast_otel.processors.ingest.normalize.events import Event, with_event_content
from mast_otel.processors.ingest.normalize.common import CONTENT_CHARS, Fields
from mast_otel.processors.conversations.keys import session_id_in
from mast_otel.processors.model import AGENT

_OPENINFERENCE, _OPENLLMETRY, _AISDK, _GENAI_OPERATION = openinference.SPAN_KIND, openllmetry.SPAN_KIND, aisdk.OPERATION, genai.OPERATION

__all__ = ["CONTENT_CHARS", "normalize", "normalize_into"]


def normalize_into(span: Any, name: str, attrs: Mapping[str, Any], content_chars: int = CONTENT_CHARS,
                   events: Sequence[Event] = ()) -> bool:
    """Set an agent-related span's fields on ``span`` (a ``Span``); ``False``, with nothing
    set, for any other span.

    ``content_chars`` caps every content field (messages, tool arguments and results, task,
    final answer). ``events`` are the span's events, read for content the attributes lack.
    Reads ``attrs`` and ``events``; writes only ``span``.
    """
    if _OPENINFERENCE in attrs:
        role = openinference.fill(span, name, attrs, content_chars)
    elif _OPENLLMETRY in attrs:
        role = openllmetry.fill(span, name, attrs, content_chars)
    elif _AISDK in attrs:  # before GenAI: its model calls carry a few gen_ai.* keys too
        role = aisdk.fill(span, name, attrs, content_chars)
    elif _GENAI_OPERATION in attrs or genai.is_genai(attrs):  # the usual GenAI span, without a call
        if events:
            attrs = with_event_content(attrs, events)
        role = genai.fill(span, name, attrs, content_chars)
    else:
        return False
    if role is None:
        return False
    if span.conversation_id is None:  # an id in another convention's spelling (Langfuse, AI SDK metadata, ADK)
        session = session_id_in(attrs)
        if session is not None:
            span.conversation_id = session
    if role is AGENT:
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
