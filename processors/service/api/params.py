"""Bounds on the API's query parameters and a 422 answer that can always be encoded.

Values past what the store can compare (an offset past SQLite's 64-bit integers, a time
outside the nanosecond range of a 64-bit integer) are refused as 422 instead of failing
inside the query; a request body holding ``1e309`` or ``NaN`` is refused with its value
shown as text (JSON has no infinity, so FastAPI's own answer could not be encoded). Text the
store cannot hold (a NUL character, a lone surrogate) is refused as 400 before any query runs:
PostgreSQL would fail the query, and the answer would wrongly be 503 "store unavailable".
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Annotated, Any, Optional

from fastapi import HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AfterValidator

from mast_otel.processors import taxonomy

MAX_OFFSET = 2**31 - 1
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(2262, 1, 1, tzinfo=timezone.utc)  # nanoseconds since 1970 still fit 64 bits


def in_store_range(value: datetime) -> datetime:
    """UTC when no zone is given; within what the store's nanosecond times can hold (``ValueError`` otherwise)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    if not EARLIEST <= value < LATEST:
        raise ValueError(f"must be from {EARLIEST:%Y-%m-%d} to before {LATEST:%Y-%m-%d}")
    return value


QueryTime = Annotated[datetime, AfterValidator(in_store_range)]


def _encodable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value


async def validation_error_response(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 body, with values JSON cannot hold written as text."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    return JSONResponse(status_code=422, content={"detail": _encodable(jsonable_encoder(errors))})


def unstorable_parameter(params: Any) -> str | None:
    """What is wrong with the first of ``params`` (name, value pairs) the store cannot compare, or ``None``."""
    for name, value in params:
        if "\x00" in value:
            return f"{name}: holds a NUL character (U+0000), which no stored text holds"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{name}: holds a lone surrogate, which is not text"
    return None


def refuse_unstorable_text(request: Request) -> None:
    """A dependency: 400 for a query or path parameter holding text the store cannot hold."""
    problem = unstorable_parameter([*request.query_params.multi_items(), *request.path_params.items()])
    if problem is not None:
        raise HTTPException(status_code=400, detail=problem)


def mode_filter(mode: Optional[str] = Query(None, description="a failure mode id such as FM-1.3")) -> Optional[str]:
    """A ``mode`` filter as its canonical id; an unknown mode is a 422 naming it."""
    if mode is None:
        return None
    try:
        return taxonomy.get(mode).id
    except KeyError as exc:
        raise HTTPException(status_code=422, detail=str(exc.args[0])) from None
