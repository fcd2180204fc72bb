"""Moved to :mod:`mast_otel.wire.hashing` (the vocabulary both sides share); kept so old imports work."""

from mast_otel.wire.hashing import *  # noqa: F401,F403
