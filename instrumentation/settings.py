"""Process-wide instrumentation settings: which tracer provider, and whether content is captured.

Set by :func:`configure` (or :func:`~mast_otel.instrumentation.setup_tracing`, which calls it).
Nothing is read or created at import time: the tracer and the environment switch are resolved
on first use and cached until the next ``configure``.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry import trace

from mast_otel import __version__
from mast_otel.wire.attributes import CAPTURE_CONTENT_ENV

INSTRUMENTATION_NAME = "mast_otel.instrumentation"
DEFAULT_MAX_CONTENT_CHARS = 8192
# Seconds an ending agent run waits for its model calls' responses to be recorded (litellm
# reports successes on a background worker), so their spans end before the run's own span.
DEFAULT_MODEL_CALL_GRACE_SECONDS = 1.0

# Values of OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT that switch capture on; the
# newer semconv modes that put content on spans count as on.
_TRUTHY = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})

_KEEP: Any = object()


class _Settings:
    __slots__ = ("tracer_provider", "capture_content", "max_content_chars", "model_call_grace_seconds",
                 "_tracer", "_env_capture")

    def __init__(self) -> None:
        self.tracer_provider: trace.TracerProvider | None = None
        self.capture_content: bool | None = None  # None: follow the environment variable
        self.max_content_chars = DEFAULT_MAX_CONTENT_CHARS
        self.model_call_grace_seconds = DEFAULT_MODEL_CALL_GRACE_SECONDS
        self._tracer: trace.Tracer | None = None
        self._env_capture: bool | None = None


SETTINGS = _Settings()


def configure(
    *,
    tracer_provider: trace.TracerProvider | None = _KEEP,
    capture_content: bool | None = _KEEP,
    max_content_chars: int = _KEEP,
    model_call_grace_seconds: float = _KEEP,
) -> None:
    """Change what the instrumentation uses; arguments left out keep their current value.

    ``tracer_provider=None`` means the global provider; ``capture_content=None`` means the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` environment variable decides.
    """
    if tracer_provider is not _KEEP:
        SETTINGS.tracer_provider = tracer_provider
    if capture_content is not _KEEP:
        SETTINGS.capture_content = None if capture_content is None else bool(capture_content)
    if max_content_chars is not _KEEP:
        if int(max_content_chars) < 64:
            raise ValueError(f"max_content_chars must be at least 64, got {max_content_chars!r}")
        SETTINGS.max_content_chars = int(max_content_chars)
    if model_call_grace_seconds is not _KEEP:
        if model_call_grace_seconds < 0:
            raise ValueError(f"model_call_grace_seconds must be >= 0, got {model_call_grace_seconds!r}")
        SETTINGS.model_call_grace_seconds = float(model_call_grace_seconds)
    SETTINGS._tracer = None
    SETTINGS._env_capture = None


def get_tracer() -> trace.Tracer:
    """The tracer every mast-otel span is started with (cached)."""
    tracer = SETTINGS._tracer
    if tracer is None:
        tracer = trace.get_tracer(INSTRUMENTATION_NAME, __version__, tracer_provider=SETTINGS.tracer_provider)
        SETTINGS._tracer = tracer
    return tracer


def capture_enabled() -> bool:
    """Whether message, argument and result content may be recorded (off by default)."""
    if SETTINGS.capture_content is not None:
        return SETTINGS.capture_content
    env = SETTINGS._env_capture
    if env is None:
        env = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _TRUTHY
        SETTINGS._env_capture = env
    return env
