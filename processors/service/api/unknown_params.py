"""Query parameters a route does not take are refused, not ignored.

FastAPI ignores a query parameter no route argument declares, so a misspelled filter
(``?service_name=`` for ``?service=``) silently answers as if no filter were given: every run.
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request


def _known_parameters(route: Any) -> frozenset[str]:
    """The query parameters ``route`` declares, its dependencies' included (computed once per route)."""
    known = getattr(route, "_mast_known_query", None)
    if known is None:
        names: set[str] = set()
        pending = [route.dependant]
        while pending:
            dependant = pending.pop()
            names.update(p.alias for p in dependant.query_params)
            pending.extend(dependant.dependencies)
        known = route._mast_known_query = frozenset(names)
    return known


def refuse_unknown_parameters(request: Request) -> None:
    """A route dependency: a query parameter the route does not declare answers 400 naming the
    ones it does. Ignored, a misspelled filter (``?service_name=`` for ``?service=``) would
    silently return every run."""
    if not request.query_params:
        return
    route = request.scope.get("route")
    if route is None:
        return
    known = _known_parameters(route)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        names = ", ".join(sorted(known)) or "none"
        raise HTTPException(status_code=400, detail=f"unknown query parameter{'s' if len(unknown) > 1 else ''} "
                                                    f"{', '.join(unknown)}; this route takes: {names}")
