"""From one span's name and attributes to the ``Span`` fields detectors read.

A few key attributes pick the convention (``openinference.span.kind``,
``traceloop.span.kind``, ``gen_ai.*``); that convention's pure function extracts role, model,
tokens, tool names, messages and content; ``mast.*`` hints go on top. Spans no convention
claims are ``Role.OTHER`` and pass through untouched.
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.processors.ingest.normalize import genai, mast, openinference, openllmetry
from mast_otel.processors.ingest.normalize.common import CONTENT_CHARS

__all__ = ["CONTENT_CHARS", "normalize"]


def normalize(name: str, attrs: Mapping[str, Any], content_chars: int = CONTENT_CHARS) -> dict[str, Any] | None:
    """``Span`` field values for an agent-related span, or ``None`` for any other span.

    ``content_chars`` caps every content field (messages, tool arguments and results, task,
    final answer). Pure: reads ``attrs``, returns a new dict.
    """
    if openinference.SPAN_KIND in attrs:
        fields = openinference.fields(name, attrs, content_chars)
    elif openllmetry.SPAN_KIND in attrs:
        fields = openllmetry.fields(name, attrs, content_chars)
    elif genai.is_genai(attrs):
        fields = genai.fields(name, attrs, content_chars)
    else:
        return None
    if fields is not None:
        mast.apply(fields, attrs, content_chars)
    return fields
