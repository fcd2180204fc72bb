"""Hostile clients of every kind at once beside normal traffic, for minutes, against a real
``mast-otel serve``: does RSS stay in the envelope, and is every acknowledged span of the normal
traffic diagnosed?

    .venv/bin/python benchmarks/hostile_soak.py [--minutes 10] [--clients 20] [--budget-mb 32]

``--clients`` clients of each hostile kind run for the whole time, each over and over, ignoring
``Retry-After`` (a short pause between tries): large bodies (12 MB of agent runs written over
3 s, from their own loopback addresses) and long ids (the ``long_ids`` profile of ``soak.py``:
whole runs and runs that never end, 200,000-character ids in every value that becomes a key).
Two well-behaved exporters send agent runs throughout, honouring ``Retry-After``. RSS is sampled
from ``/proc`` against the envelope ``idle + 2 x budget + 64 MB``. At the end every trace the
normal exporters were told was accepted must be in the store with every span they sent
(``span_count``); the report says how many were not.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from large_bodies import large_bodies, send_slowly
from soak import OVERHEAD_MB, PROTOBUF, RSSSampler, RunFactory, Sender, ServeProcess, Tally, long_ids_body, scrape, total

MB = 1024 * 1024


class CountingFactory(RunFactory):
    """A :class:`RunFactory` that remembers each run's span count by trace id."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spans_of: dict[str, int] = {}

    def run(self) -> tuple[bytes, str, int]:
        body, trace_id, spans = super().run()
        self.spans_of[trace_id] = spans
        return body, trace_id, spans


def stored_span_counts(url: str) -> dict[str, int]:
    """Every stored diagnosis's span count, by trace id (paged through ``/v1/diagnoses``)."""
    counts: dict[str, int] = {}
    with httpx.Client(timeout=60) as client:
        offset = 0
        while True:
            page = client.get(f"{url}/v1/diagnoses", params={"limit": 1000, "offset": offset}).json()
            for item in page["items"]:
                counts[item["trace_id"]] = item["span_count"]
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return counts


def run(workdir: Path, *, minutes: float = 10.0, clients: int = 20, budget_mb: float = 32) -> dict[str, Any]:
    budget = int(budget_mb * MB)
    bodies = large_bodies(clients, 12 * MB)
    factory = CountingFactory(seed=5)
    overrides: dict[str, Any] = {"assembly": {"max_buffered_bytes": budget}, "log_level": "WARNING",
                                 "receiver": {"body_timeout_seconds": 5.0}}
    attackers: Counter = Counter()
    lock = threading.Lock()
    with ServeProcess(workdir, overrides) as serve:
        time.sleep(1.0)
        idle = serve.rss()
        sampler = RSSSampler(serve.pid, interval=0.1)
        sampler.start()
        stop = threading.Event()

        def large(i: int) -> None:
            while not stop.is_set():
                status = send_slowly(serve.http_port, bodies[i], 3.0, f"127.0.1.{1 + i}")
                with lock:
                    attackers[f"large_bodies {status}"] += 1
                stop.wait(0.2)

        def long_ids(i: int) -> None:
            with httpx.Client(timeout=60) as client:
                n = i
                while not stop.is_set():
                    try:
                        status = str(client.post(f"{serve.url}/v1/traces", content=long_ids_body(n),
                                                 headers={"Content-Type": PROTOBUF}).status_code)
                    except httpx.HTTPError as exc:
                        status = type(exc).__name__
                    with lock:
                        attackers[f"long_ids {status}"] += 1
                    n += clients
                    stop.wait(0.2)

        normal, normal_stop = Tally(), threading.Event()
        senders = [Sender(serve.url, factory, normal, normal_stop, runs_per_request=2, pause=0.05) for _ in range(2)]
        threads = [threading.Thread(target=large, args=(i,), daemon=True) for i in range(clients)]
        threads += [threading.Thread(target=long_ids, args=(i,), daemon=True) for i in range(clients)]
        started = time.monotonic()
        for t in [*threads, *senders]:
            t.start()
        time.sleep(minutes * 60)
        normal_stop.set()
        for s in senders:
            s.join(60)
        stop.set()
        for t in threads:
            t.join(120)
        elapsed = time.monotonic() - started
        acked = set(normal.traces_acked)
        deadline = time.monotonic() + 120
        while True:  # the normal runs' diagnoses reach the store (their roots ended; grace and sweep)
            stored = stored_span_counts(serve.url)
            missing = [t for t in acked if t not in stored]
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(2)
        short = [t for t in acked if t in stored and stored[t] < factory.spans_of[t]]
        m = scrape(serve.url)
        sampler.halt.set()
        sampler.join()
        alive = serve.proc.poll() is None
    limit = idle + 2 * budget + OVERHEAD_MB * MB
    report = {
        "minutes": round(elapsed / 60, 1), "clients_per_kind": clients, "budget_mb": budget_mb,
        "attackers": dict(attackers), "normal": normal.summary(),
        "normal_traces_acked": len(acked), "normal_traces_missing": len(missing), "normal_traces_short_of_spans": len(short),
        "refused_requests": {dict(ls)["reason"]: v for (n, ls), v in m.items() if n == "mast_ingest_refused_requests_total"},
        "idle_rss_mb": round(idle / MB, 1), "peak_rss_mb": round(sampler.peak / MB, 1), "rss_limit_mb": round(limit / MB, 1),
        "rss_p50_mb": round(sorted(sampler.samples)[len(sampler.samples) // 2] / MB, 1) if sampler.samples else None,
        "buffered_mb_at_end": round(total(m, "mast_buffered_bytes") / MB, 1), "alive": alive,
    }
    report["held"] = (alive and sampler.peak <= limit and not missing and not short and bool(normal.statuses.get(200))
                      and not normal.errors)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--budget-mb", type=float, default=32)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mast-hostile-soak-") as tmp:
        report = run(Path(tmp), minutes=args.minutes, clients=args.clients, budget_mb=args.budget_mb)
    print(json.dumps(report, indent=2))
    return 0 if report["held"] else 1


if __name__ == "__main__":
    sys.exit(main())
