"""Turning captured values into bounded span attribute text.

Content is only ever recorded when capture is on (see :func:`settings.capture_enabled`); these
helpers make sure what is recorded stays within the per-attribute cap, with a visible marker.
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel.instrumentation.settings import SETTINGS

TRUNCATION_MARKER = "...[truncated {} chars]"


def cap_text(text: str, limit: int | None = None) -> str:
    """``text`` cut to ``limit`` characters (default: the configured cap), marker included."""
    limit = SETTINGS.max_content_chars if limit is None else limit
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(TRUNCATION_MARKER.format(len(text))))  # the marker fits too
    return text[:keep] + TRUNCATION_MARKER.format(len(text) - keep)


def to_text(value: Any) -> str:
    """A readable text form: strings as they are, everything else as JSON (repr as fallback)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=_fallback)
    except (TypeError, ValueError):
        return repr(value)


def content_attribute(value: Any) -> str:
    """``to_text`` then ``cap_text``: the value of one content attribute."""
    return cap_text(to_text(value))


def _fallback(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return repr(value)
