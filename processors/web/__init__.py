"""The processor's built-in web view (overview, runs, run pages, sessions, severity, login), mounted at ``/`` by the service."""

from __future__ import annotations


def build_router(reader, runs=None, config=None, throttle=None, sessions=None):
    """The web view's FastAPI router over a diagnosis reader (and the held runs, for content);
    see :mod:`mast_otel.processors.web.routes`."""
    from mast_otel.processors.web.routes import build_router as _build

    return _build(reader, runs, config, throttle, sessions)


__all__ = ["build_router"]
