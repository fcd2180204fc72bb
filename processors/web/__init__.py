"""The processor's built-in web view (overview and run pages), mounted at ``/`` by the service."""

from __future__ import annotations


def build_router(store, pipeline=None):
    """The web view's FastAPI router; see :mod:`mast_otel.processors.web.routes`."""
    from mast_otel.processors.web.routes import build_router as _build

    return _build(store, pipeline)


__all__ = ["build_router"]
