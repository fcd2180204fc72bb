"""OTLP over HTTP, the parts every signal's route shares: reading a request body under the size
limit and the bytes-in-flight budget (gzip and deflate decompressed in bounded steps), and
answering in the request's encoding (protobuf or JSON) with a ``google.rpc.Status`` body for errors.
"""

from __future__ import annotations

import asyncio
import zlib

from google.protobuf import json_format
from google.rpc import status_pb2
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from mast_otel.processors.service.memory.admission import Reservation

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
PROTOBUF_TYPES = {PROTOBUF, "application/protobuf", "application/octet-stream"}
# google.rpc.Code values used in Status bodies
CODE = {400: 3, 401: 16, 408: 4, 413: 8, 415: 3, 429: 8, 503: 14}
# A refusal leaves the rest of the body unread: uvicorn reads it past the answer and discards it,
# so the sender sees the status; only a body too slow to wait for closes the connection.
CLOSE = {"Connection": "close"}


class BodyTooLarge(Exception):
    pass


class OverBytesInFlight(Exception):
    """A chunked or compressed body grew past what the bytes-in-flight budget could give it."""


def encode(message, as_json: bool) -> tuple[bytes, str]:
    if as_json:
        return json_format.MessageToJson(message, indent=None).encode(), JSON
    return message.SerializeToString(), PROTOBUF


def status_response(status_code: int, message: str, as_json: bool, headers: dict[str, str] | None = None) -> Response:
    body, media_type = encode(status_pb2.Status(code=CODE.get(status_code, 2), message=message), as_json)
    return Response(body, status_code=status_code, media_type=media_type, headers=headers)


def declared_length(request: Request, limit: int) -> int:
    """``Content-Length`` (0 when absent, as for chunked bodies); ``BodyTooLarge`` over ``limit``."""
    declared = request.headers.get("content-length", "")
    size = int(declared) if declared.isdigit() else 0
    if size > limit:
        raise BodyTooLarge(f"body of {declared} bytes exceeds the {limit}-byte limit")
    return size


async def read_body(request: Request, limit: int, reservation: Reservation | None = None, wait: float = 0.0) -> bytes:
    """The request body, decompressed, refusing more than ``limit`` bytes at any stage; the
    bytes held are reserved inside ``reservation`` as they arrive, each step waiting up to
    ``wait`` seconds for room (``OverBytesInFlight`` otherwise)."""
    declared_length(request, limit)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", "deflate", ""):
        raise ValueError(f"unsupported Content-Encoding {encoding!r}; use gzip or none")
    inflater = None if encoding in ("identity", "") else zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    parts: list[bytes] = []
    size = raw_size = 0
    receive = request.receive  # the ASGI messages themselves: Request.stream() is an async generator more per chunk
    more = True
    try:
        while more:
            message = await receive()
            if message["type"] != "http.request":  # http.disconnect
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            more = message.get("more_body", False)
            if not chunk:
                continue
            raw_size += len(chunk)
            if raw_size > limit:
                raise BodyTooLarge(f"body exceeds the {limit}-byte limit")
            if inflater is not None:
                # max_length bounds the output per step: a zip bomb never gets inflated in full.
                chunk = inflater.decompress(chunk, limit - size + 1)
                if inflater.unconsumed_tail:
                    raise BodyTooLarge(f"decompressed body exceeds the {limit}-byte limit")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"decompressed body exceeds the {limit}-byte limit")
            if reservation is not None and not await reservation.grow_to_async(max(size, raw_size), wait):
                raise OverBytesInFlight()
            parts.append(chunk)
        if inflater is not None:
            tail = inflater.flush(limit - size + 1)
            size += len(tail)
            if size > limit:
                raise BodyTooLarge(f"decompressed body exceeds the {limit}-byte limit")
            parts.append(tail)
            if not inflater.eof:
                raise ValueError(f"truncated {encoding} body")
    except zlib.error as exc:
        parts.clear()
        raise ValueError(f"invalid {encoding} body: {exc}") from None
    except BaseException:
        parts.clear()  # the chunks go now, with the reservation (see read_body_within)
        raise
    return b"".join(parts)


# asyncio.timeout (Python 3.11 on) bounds the read in the request's own task: wait_for runs it in
# a task of its own, one more task and event-loop turn per request.
_timeout = getattr(asyncio, "timeout", None)

# What a body read ends with when it is refused, timed out or cut off (answered, never logged with a traceback).
_REFUSED_READS = (BodyTooLarge, OverBytesInFlight, asyncio.TimeoutError, ClientDisconnect, ValueError)


def forget_frames(exc: BaseException) -> None:
    """Drop the tracebacks of ``exc`` and of the exceptions it chains. Raised through
    ``asyncio.wait_for``, an exception is held by the task that ran the read, while its traceback
    holds the frames that hold that task and the read's locals (the chunk being reserved, the
    request and through it the server's receive buffer): a reference cycle, freed only by a full
    collection, which ``serve`` tunes to be rare. Each refused request left about half a megabyte
    that way, uncharged, and under a steady stream of refusals hundreds of megabytes. (From Python
    3.11 on the read runs in the request's own task under ``asyncio.timeout``; a traceback kept
    would still hold the read's frames.)"""
    pending, seen = [exc], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


async def read_body_within(request: Request, limit: int, reservation: Reservation | None, wait: float,
                           timeout: float) -> bytes:
    """:func:`read_body` within ``timeout`` seconds; a refusal leaves no frame (and no chunk) behind."""
    try:
        if _timeout is None:
            return await asyncio.wait_for(read_body(request, limit, reservation, wait), timeout)
        async with _timeout(timeout):  # no task of its own, as wait_for makes
            return await read_body(request, limit, reservation, wait)
    except _REFUSED_READS as exc:
        forget_frames(exc)
        raise exc  # not a bare raise: before Python 3.11 that would restore the traceback just dropped
