"""A request refused part-way through its body leaves none of it behind.

The receiver releases a refused body's reservation at once, so the memory account stops
counting it; the bytes must go at the same moment. A refusal raised through
``asyncio.wait_for`` leaves a reference cycle (the task holds the exception, whose traceback
holds the frames that hold the task and the chunks read so far), and ``serve`` tunes the
garbage collector to pass over long-lived cycles rarely: chunks kept by such a cycle stayed in
memory, uncharged, for as long as the process ran, a refused request's worth each time.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import pytest
from starlette.requests import Request

from mast_otel.processors.service.memory.admission import BytesInFlight, Reservation
from mast_otel.processors.service.receivers.otlp_http import OverBytesInFlight, read_body, read_body_within

MB = 1024 * 1024


def _request(chunks: int, chunk_bytes: int) -> Request:
    sent = 0

    async def receive() -> dict:
        nonlocal sent
        sent += 1
        return {"type": "http.request", "body": bytes([sent % 251]) * chunk_bytes, "more_body": sent < chunks}

    scope = {"type": "http", "method": "POST", "path": "/v1/traces", "headers": [(b"content-type", b"application/x-protobuf")]}
    return Request(scope, receive)


async def _refused_read(pool: BytesInFlight) -> None:
    reservation = Reservation(pool, "10.0.0.1")
    try:
        await asyncio.wait_for(read_body(_request(16, MB // 4), 64 * MB, reservation, 0.0), 10)
    except OverBytesInFlight:
        pass
    finally:
        reservation.release()


@pytest.mark.parametrize("room_mb", [2, 3])
def test_a_body_refused_mid_read_is_freed_with_its_reservation(room_mb):
    pool = BytesInFlight(room_mb * MB)
    holder = Reservation(pool, "10.0.0.2")
    assert holder.grow_to(1)  # another request holds bytes: this one is not alone and stops at the limit
    gc.collect()
    gc.disable()  # as in serve (gc_young_threshold), where a cycle can outlive the process's use for it
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(_refused_read(pool))
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
        holder.release()
    assert pool.held == 0
    assert left < MB // 2, f"{left} bytes of a refused body still held after its reservation was released"


def _request_with_buffer(chunks: int, chunk_bytes: int) -> Request:
    """A request whose server side holds a receive buffer of its own (as uvicorn's does)."""
    buffer = bytearray(chunk_bytes)
    sent = 0

    async def receive() -> dict:
        nonlocal sent
        sent += 1
        buffer[:1] = bytes([sent % 251])
        return {"type": "http.request", "body": bytes(buffer), "more_body": sent < chunks}

    scope = {"type": "http", "method": "POST", "path": "/v1/traces", "headers": [(b"content-type", b"application/x-protobuf")]}
    return Request(scope, receive)


async def _refused_read_within(pool: BytesInFlight) -> None:
    reservation = Reservation(pool, "10.0.0.1")
    try:
        await read_body_within(_request_with_buffer(16, MB), 64 * MB, reservation, 0.0, 10)
    except OverBytesInFlight:
        pass
    finally:
        reservation.release()


def test_a_refused_read_leaves_neither_the_chunk_it_could_not_reserve_nor_the_request():
    """What the receiver calls: the chunk that did not fit (1 MB here) and the request with the
    server's receive buffer (another 1 MB) go when the refusal is answered, without a collection."""
    pool = BytesInFlight(3 * MB)
    holder = Reservation(pool, "10.0.0.2")
    assert holder.grow_to(1)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(_refused_read_within(pool))
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
        holder.release()
    assert pool.held == 0
    assert left < MB // 2, f"{left} bytes of a refused request still held after its reservation was released"
