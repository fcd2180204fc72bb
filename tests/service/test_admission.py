"""The bytes-in-flight budget both receivers share."""

from __future__ import annotations

import asyncio
import threading
import time

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.memory.admission import BytesInFlight, Reservation, bytes_in_flight_limit, per_peer_limit


def test_one_request_always_fits_then_the_limit_holds():
    seen = []
    pool = BytesInFlight(100, on_change=seen.append)
    assert pool.try_acquire(500)  # alone: larger than the limit, still admitted
    assert not pool.try_acquire(1)
    pool.release(500)
    assert pool.try_acquire(60) and pool.try_acquire(40) and not pool.try_acquire(1)
    assert seen == [500, 0, 60, 100]


def test_reservations_grow_with_the_body_and_release_once():
    pool = BytesInFlight(100)
    first = Reservation(pool)
    assert first.grow_to(30) and first.grow_to(90) and pool.held == 90
    second = Reservation(pool)
    assert second.grow_to(10) and not second.grow_to(11)
    first.release()
    assert pool.held == 10 and second.grow_to(80)
    first.release()
    second.release()
    first.release()
    assert pool.held == 0


def test_waiting_acquires_get_the_bytes_once_released():
    pool = BytesInFlight(100)
    assert pool.try_acquire(100)
    threading.Timer(0.1, pool.release, (100,)).start()
    started = time.monotonic()
    assert pool.acquire(50, timeout=5) and time.monotonic() - started < 2
    assert not pool.acquire(80, timeout=0.05)
    assert not asyncio.run(pool.acquire_async(80, timeout=0.05))
    threading.Timer(0.1, pool.release, (50,)).start()
    assert asyncio.run(pool.acquire_async(80, timeout=5)) and pool.held == 80


def test_the_default_limit_is_half_the_assembly_budget():
    assert bytes_in_flight_limit(ProcessorConfig(assembly={"max_buffered_bytes": 1000})) == 500
    assert bytes_in_flight_limit(ProcessorConfig(receiver={"max_bytes_in_flight": 7})) == 7


def test_a_request_alone_grows_past_the_limit():
    pool = BytesInFlight(100)
    alone = Reservation(pool)
    assert alone.grow_to(60) and alone.grow_to(500)
    other = Reservation(pool)
    assert other.grow_to(0) and not other.grow_to(1)


def test_one_peer_holds_at_most_its_share():
    pool = BytesInFlight(100, peer_limit=40)
    greedy, other = Reservation(pool, "10.0.0.9"), Reservation(pool, "10.0.0.8")
    assert greedy.grow_to(40) and not Reservation(pool, "10.0.0.9").grow_to(1)
    assert other.grow_to(40) and pool.held == 80
    greedy.release()
    assert Reservation(pool, "10.0.0.9").grow_to(20) and pool.held == 60
    assert per_peer_limit(ProcessorConfig(assembly={"max_buffered_bytes": 1000})) == 250
    assert per_peer_limit(ProcessorConfig(receiver={"max_bytes_in_flight_per_peer": 9})) == 9


def test_the_oldest_growing_body_always_progresses():
    pool = BytesInFlight(100)
    first, second = Reservation(pool), Reservation(pool)
    assert first.grow_to(50) and second.grow_to(50)  # both arriving, the budget spent
    assert not second.grow_to(60)  # a younger body waits ...
    assert first.grow_to(200)  # ... while the oldest goes on past the limit
    first.release()
    assert second.grow_to(100) and pool.held == 100
