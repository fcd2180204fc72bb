"""A run's session id, from whatever its instrumentation wrote (normalizers fill ``conversation_id``)."""

from __future__ import annotations

from mast_otel.processors.model import Run


def session_id_of(run: Run) -> str | None:
    """The session this run is a turn of: the root's id, else the first span that carries one."""
    if run.root is not None and run.root.conversation_id:
        return run.root.conversation_id
    return next((s.conversation_id for s in run.spans if s.conversation_id), None)
