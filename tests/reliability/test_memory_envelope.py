"""RSS within the envelope (idle + 2 x budget + 64 MB) while clients try, as an attacker would,
to make the processor hold more than its memory account charges: large bodies held open while
they are sent, wave after wave, and runs that never end with ids of hundreds of kilobytes in
every value that becomes a key (service and agent names, session and conversation ids, tool call
ids). Each runs against a real ``mast-otel serve`` at the budgets where these first broke the
envelope; what one refused or admitted request leaves behind shows over many of them."""

from __future__ import annotations

import os

import httpx
import pytest
from hostile_clients import long_key_run, tool_spans
from large_bodies import run as large_bodies_run
from soak import OVERHEAD_MB, RSSSampler, ServeProcess, hostile, scrape, total

MB = 1024 * 1024
PB = {"Content-Type": "application/x-protobuf"}


@pytest.mark.timeout(600)
def test_large_bodies_held_open_wave_after_wave_stay_within_the_envelope(tmp_path):
    """24 clients, each from its own address, write a 12 MB body over 3 s at once (16 MB budget),
    ten waves in a row to the same process, RSS sampled every 20 ms. Each client gets its share
    of the bytes in flight, so most are refused after a few hundred kilobytes were read; what a
    refusal leaves behind (its chunks, held by the refusal's traceback until a rare full
    collection) adds up wave after wave, and one admitted body costs several times its size
    while it is decoded. Three waves of one address showed neither (peak 153 MB against 171 MB
    on the build that held 239 MB in the issue's case); ten waves of 24 addresses fail there."""
    waves = 10
    report = large_bodies_run(tmp_path, protocol="http", clients=24, body_mb=12, budget_mb=16, waves=waves,
                              addresses=24, sample_seconds=0.02)
    assert report["alive"], report
    assert report["peak_rss_mb"] <= report["rss_limit_mb"], report
    accepted, refused = report["statuses"].get("200", 0), report["statuses"].get("429", 0)
    assert accepted >= 1 and accepted + refused == waves * 24, report  # refused with a status, not cut off


@pytest.mark.timeout(600)
def test_refused_requests_with_long_keys_leave_nothing_behind(tmp_path):
    """Runs that never end, a tool call with 200,000-character ids a request, fill the account to
    within 4 MB of its budget (as far as any build takes them); then every request is refused,
    each after part of its body was read, while Prometheus scrapes as it would. What the account
    released at each refusal must leave the process too: RSS may not grow with them (each left
    its bytes read behind, uncharged, until a rare full collection)."""
    budget = 32 * MB
    overrides = {"assembly": {"max_buffered_bytes": budget}, "log_level": "WARNING", "receiver": {"body_timeout_seconds": 5.0}}
    with ServeProcess(tmp_path, overrides) as serve, httpx.Client(timeout=60) as client:
        idle = serve.rss()
        sampler = RSSSampler(serve.pid, interval=0.05)
        sampler.start()
        statuses: list[int] = []
        try:
            while 429 not in statuses and len(statuses) < 200:  # runs that never end, until the account is nearly full
                statuses.append(client.post(f"{serve.url}/v1/traces", headers=PB,
                                            content=tool_spans(os.urandom(16), 1, 200_000).SerializeToString()).status_code)
                if total(scrape(serve.url), "mast_buffered_bytes") >= budget - 4 * MB:
                    break
            full = serve.rss()
            for i in range(30):  # refused: long conversation and tool call ids, or a long id in every key
                body = tool_spans(os.urandom(16), 12, 200_000).SerializeToString() if i % 2 else long_key_run(200_000, steps=6)
                r = client.post(f"{serve.url}/v1/traces", content=body, headers=PB)
                statuses.append(r.status_code)
                assert r.status_code == 429 and r.headers["retry-after"], r.text
                scrape(serve.url)
            refused_growth = serve.rss() - full
            buffered = total(scrape(serve.url), "mast_buffered_bytes")
        finally:
            sampler.halt.set()
            sampler.join()
        alive = serve.proc.poll() is None
    limit = idle + 2 * budget + OVERHEAD_MB * MB
    report = {"statuses": statuses, "idle_mb": round(idle / MB, 1), "peak_mb": round(sampler.peak / MB, 1),
              "limit_mb": round(limit / MB, 1), "growth_while_refusing_mb": round(refused_growth / MB, 1),
              "buffered_mb": round(buffered / MB, 1)}
    assert alive and statuses.count(200) >= 3, report
    assert refused_growth <= 16 * MB, report  # 30 refusals of 4.8-5.6 MB each: 150 MB if their bytes stayed
    assert sampler.peak <= limit, report
    assert buffered <= budget, report


@pytest.mark.timeout(900)
def test_long_ids_in_every_key_stay_within_the_envelope(tmp_path):
    """The ``long_ids`` hostile profile (32 MB budget) beside a well-behaved exporter: whole runs
    and runs that never end, every key a 200,000-character id."""
    report = hostile(tmp_path, "long_ids", requests=240)
    assert report["alive"], report
    assert report["peak_rss_mb"] <= report["rss_limit_mb"], report
    assert report["attacker_statuses"].get(200) and report["attacker_statuses"].get(429), report
    assert report["normal_sender"]["statuses"].get(200) and not report["normal_sender"]["errors"], report
    assert report["buffered_mb_at_end"] <= 32 * 1.25, report
