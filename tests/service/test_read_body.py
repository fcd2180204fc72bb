"""How the OTLP/HTTP receiver reads a body from the server's ASGI messages: the chunks joined
whatever their sizes (empty ones included), a disconnect named as such, a body too slow for
``body_timeout_seconds`` ended by the deadline with nothing of it left in memory."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import pytest
from starlette.requests import ClientDisconnect, Request

from mast_otel.processors.service.memory.admission import BytesInFlight, Reservation
from mast_otel.processors.service.receivers.otlp_http import read_body, read_body_within

MB = 1024 * 1024


def _request(messages: list[dict], then_wait: bool = False) -> Request:
    """A request whose server hands over ``messages``, then (``then_wait``) nothing more."""
    pending = list(messages)

    async def receive() -> dict:
        if pending:
            return pending.pop(0)
        assert then_wait, "read past the last message"
        await asyncio.Event().wait()
        return {}

    scope = {"type": "http", "method": "POST", "path": "/v1/traces", "headers": [(b"content-type", b"application/x-protobuf")]}
    return Request(scope, receive)


def _body(data: bytes, more: bool) -> dict:
    return {"type": "http.request", "body": data, "more_body": more}


def test_chunks_of_any_size_are_joined_and_reserved():
    pool = BytesInFlight(MB)
    reservation = Reservation(pool, "10.0.0.1")
    messages = [_body(b"", True), _body(b"ab", True), _body(b"", True), _body(b"cde", True), {"type": "http.request"}]
    assert asyncio.run(read_body(_request(messages), 100, reservation)) == b"abcde"
    assert pool.held == reservation.nbytes == 5
    reservation.release()
    assert asyncio.run(read_body(_request([_body(b"", False)]), 100)) == b""


def test_a_disconnect_mid_body_is_a_client_disconnect():
    messages = [_body(b"abc", True), {"type": "http.disconnect"}]
    with pytest.raises(ClientDisconnect):
        asyncio.run(read_body(_request(messages), 100))


async def _slow_read(pool: BytesInFlight) -> None:
    reservation = Reservation(pool, "10.0.0.1")
    try:
        await read_body_within(_request([_body(bytes(MB), True)], then_wait=True), 64 * MB, reservation, 0.0, 0.05)
    finally:
        reservation.release()


def test_a_body_past_its_deadline_times_out_and_leaves_nothing_behind():
    pool = BytesInFlight(8 * MB)
    gc.collect()
    gc.disable()  # as in serve: a reference cycle would keep the chunk until a full collection
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(_slow_read(pool))
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
    assert pool.held == 0
    assert left < MB // 2, f"{left} bytes of a timed-out body still held"
