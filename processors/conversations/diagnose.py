"""Session-level detection: the turns of one conversation in order, findings on the turns out."""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel.processors.conversations.model import SessionFinding, Turn
from mast_otel.processors.conversations.settings import SessionDetectionConfig


def diagnose_session(turns: Sequence[Turn], config: SessionDetectionConfig | None = None) -> list[SessionFinding]:
    """Cross-turn findings for a session whose turns are given in start order (pure: no I/O)."""
    return []
