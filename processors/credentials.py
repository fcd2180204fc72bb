"""Whether a litellm model string can be called: the provider keys it needs that are not set."""

from __future__ import annotations

from mast_otel.processors.usage import UsageError


def missing_keys(model: str) -> list[str]:
    """Environment variables holding keys or tokens that ``model``'s provider needs and that are unset.

    Only keys and tokens count: an unset ``*_API_BASE`` (Ollama's, say) has a working default.
    """
    import litellm

    return [k for k in litellm.validate_environment(model).get("missing_keys", ()) if k.endswith(("_KEY", "_TOKEN"))]


def require_credentials(model: str, flag: str) -> None:
    """Raise :class:`UsageError` naming the unset variables, before anything starts."""
    missing = missing_keys(model)
    if missing:
        raise UsageError(f"{flag} {model} needs {' and '.join(missing)} in the environment")
