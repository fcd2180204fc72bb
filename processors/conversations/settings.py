"""Thresholds of session-level detection (the ``sessions.detection`` config section)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SessionDetectionConfig(BaseModel):
    """What counts as a cross-turn failure."""

    model_config = ConfigDict(extra="forbid")
