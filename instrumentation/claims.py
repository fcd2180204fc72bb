"""Moved to :mod:`mast_otel.wire.claims` (the vocabulary both sides share); kept so old imports work."""

from mast_otel.wire.claims import *  # noqa: F401,F403
