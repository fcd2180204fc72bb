"""Bounds on the API's query parameters and a 422 answer that can always be encoded.

Values past what the store can compare (an offset past SQLite's 64-bit integers, a time
outside the nanosecond range of a 64-bit integer) are refused as 422 instead of failing
inside the query; a request body holding ``1e309`` or ``NaN`` is refused with its value
shown as text (JSON has no infinity, so FastAPI's own answer could not be encoded).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AfterValidator

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
