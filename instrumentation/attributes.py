"""Moved to :mod:`mast_otel.wire.attributes` (the vocabulary both sides share); kept so old imports work."""

from mast_otel.wire.attributes import *  # noqa: F401,F403
