"""The gRPC receiver's thread pool serves waiting calls fairly by client address."""

from __future__ import annotations

import queue
import threading

import pytest

from mast_otel.processors.service.receivers.grpc_pool import FairPool, FairQueue, peer_address


def _queue(running: dict[str, int], stalled: set[str]) -> FairQueue:
    return FairQueue(lambda address: running.get(address, 0), stalled.__contains__)


def _put(fair: FairQueue, address: str, item: str) -> None:
    fair.next_address = address
    fair.put(item)


def test_the_address_with_fewest_calls_running_goes_first_and_stalled_ones_last():
    running = {"10.0.0.1": 3, "10.0.0.2": 0}
    fair = _queue(running, stalled={"10.0.0.9"})
    for address, item in (("10.0.0.9", "stalled"), ("10.0.0.1", "busy-1"), ("10.0.0.1", "busy-2"), ("10.0.0.2", "quiet")):
        _put(fair, address, item)
    fair.put(None)  # the pool's shutdown sentinel: after every call
    assert [fair.get() for _ in range(5)] == ["quiet", "busy-1", "busy-2", "stalled", None]
    with pytest.raises(queue.Empty):
        fair.get_nowait()


def test_the_pool_runs_calls_counts_the_waiting_and_remembers_stalls():
    pool = FairPool(1, "test", stall_memory_seconds=60)
    release = threading.Event()
    first = pool.submit(release.wait, 5)
    queued = pool.submit(lambda: "done")
    assert pool.waiting() == 1  # the one thread is taken
    pool.stalled("10.0.0.9")
    assert pool.stalled_lately("10.0.0.9") and not pool.stalled_lately("10.0.0.1")
    release.set()
    assert first.result(5) and queued.result(5) == "done" and pool.waiting() == 0
    pool.shutdown(wait=True)


@pytest.mark.parametrize("peer, address", [("ipv4:10.0.0.9:41234", "10.0.0.9"), ("ipv6:[::1]:5000", "::1")])
def test_peer_address(peer, address):
    assert peer_address(peer) == address
