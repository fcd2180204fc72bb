"""A shared store going away, coming back, refusing one run, and readers that must not starve
the pipeline: against a real PostgreSQL server."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import psycopg
import pytest

from mast_otel.processors.config import MetricsConfig
from mast_otel.processors.model import Diagnosis
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.outputs.base import Batch, Counts, DiagnosedRun
from mast_otel.processors.service.outputs.store import StoreExporter
from mast_otel.processors.service.store.diagnoses import DiagnosisStore, StoreUnavailable
from tests.service.support import wait_for


def _allow(postgres, url: str, on: bool) -> None:
    """Let the database take connections, or refuse them and end the ones it has."""
    database = url.rsplit("/", 1)[1]
    with psycopg.connect(postgres.url("postgres"), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(on).lower()}')
        if not on:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,))


def _run(trace_id: str, **fields) -> DiagnosedRun:
    d = Diagnosis(trace_id=trace_id, findings=[], fatal=False, diagnosed_at=time.time(), service_name="svc", **fields)
    return DiagnosedRun("outcome", d, None, Counts(new_run=True), Accounting())


def test_a_store_that_starts_late_is_waited_for_with_backoff(pg_url, postgres):
    """A database that refuses connections for the first seconds (compose, Kubernetes) is waited
    for, within store.connect_timeout_seconds; past it, the clear error as before."""
    _allow(postgres, pg_url, False)
    threading.Timer(2.0, _allow, (postgres, pg_url, True)).start()
    started = time.monotonic()
    store = DiagnosisStore(url=pg_url, pool_size=1, connect_timeout=30)
    try:
        assert time.monotonic() - started >= 1.5
        store.save(Diagnosis(trace_id="a" * 32, findings=[], fatal=False, diagnosed_at=time.time()))
        assert store.get("a" * 32) is not None
    finally:
        store.close()
    _allow(postgres, pg_url, False)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            DiagnosisStore(url=pg_url, pool_size=1, connect_timeout=1.5)
        assert 1.4 <= time.monotonic() - started < 10
    finally:
        _allow(postgres, pg_url, True)


def test_refused_diagnoses_are_stored_on_a_timer_once_the_store_is_back(pg_url, postgres):
    """No new batch after the outage: the retry timer stores what the store refused meanwhile."""
    store = DiagnosisStore(url=pg_url, pool_size=2)
    exporter = StoreExporter(store, Metrics(MetricsConfig()), retry_interval_seconds=0.2)
    exporter.start()
    try:
        _allow(postgres, pg_url, False)
        try:
            exporter.export(Batch([_run("b" * 32)]))
            assert exporter.unsaved == {"b" * 32}
        finally:
            _allow(postgres, pg_url, True)
        wait_for(lambda: not exporter.unsaved, timeout=40)
        assert store.get("b" * 32) is not None
        assert exporter.take_recovered() == ["b" * 32]  # settled in the log by the ingest stage
    finally:
        exporter.shutdown()


def test_a_run_the_store_refuses_is_set_aside_and_the_runs_behind_it_are_stored(pg_url, tmp_path):
    """A value PostgreSQL cannot hold (a NUL in a text column) fails only its own run: the runs
    saved with it are stored, and after max_save_attempts it is set aside on disk, counted and
    logged once."""
    store = DiagnosisStore(url=pg_url, pool_size=2)
    metrics = Metrics(MetricsConfig())
    aside = tmp_path / "aside.jsonl"
    exporter = StoreExporter(store, metrics, retry_interval_seconds=60, max_save_attempts=3, set_aside_path=aside)
    bad = _run("c" * 32, agent="tri\x00age")
    for i in range(4):  # the bad run is retried with each batch until set aside
        exporter.export(Batch([bad] if i == 0 else [_run(f"{i:032x}")]))
    assert {store.get(f"{i:032x}") is not None for i in range(1, 4)} == {True}
    assert store.get("c" * 32) is None and exporter.unsaved == set()
    assert metrics.registry.get_sample_value("mast_store_set_aside_total") == 1
    (line,) = aside.read_text().splitlines()
    record = json.loads(line)
    assert record["trace_id"] == "c" * 32 and record["agent"] == "tri\x00age" and "0x00" in record["error"]
    assert "c" * 32 in exporter.take_recovered()  # settled: a replay would only fail again
    exporter.export(Batch([_run("d" * 32)]))
    assert store.get("d" * 32) is not None
    store.close()


def _old_runs(url: str, count: int) -> None:
    """``count`` old runs written straight into the store: deep pages take time to read."""
    with psycopg.connect(url) as conn:
        conn.execute("""INSERT INTO diagnoses (trace_id, service_name, agent, model, diagnosed_at, completion, span_count,
                        step_count, revision, fatal, mode_count, findings, withdrawn, accounting)
                        SELECT 'e' || lpad(to_hex(g), 31, '0'), 'svc', 'agent', 'model-' || (g %% 5000), 1600000000 + g,
                               'root_ended', 3, 1, 0, 0, 0, '[]', '[]', '{}'
                        FROM generate_series(1, %s) g""", (count,))


def test_api_readers_never_hold_the_pipelines_connections(pg_url):
    """16 threads reading deep pages: the pipeline's writes and look-ups never wait behind them
    (their own pool), where on one shared pool each waited its turn behind every reader."""
    store = DiagnosisStore(url=pg_url, pool_size=1)
    _old_runs(pg_url, 300_000)
    stop = threading.Event()

    def read() -> None:
        offset = 150_000
        while not stop.is_set():
            try:
                store.query(limit=100, offset=offset)
                store.count(model="model-7")
            except store.errors:
                pass
            offset = 150_000 + (offset + 7919) % 100_000

    readers = [threading.Thread(target=read) for _ in range(16)]
    for t in readers:
        t.start()
    slowest = 0.0
    try:
        time.sleep(1.0)  # every reader busy
        for i in range(20):
            started = time.monotonic()
            store.save(Diagnosis(trace_id=f"{i:032x}", findings=[], fatal=False, diagnosed_at=time.time()))
            assert store.latest(f"{i:032x}") is not None and store.existing([f"{i:032x}"])
            slowest = max(slowest, time.monotonic() - started)
        # the pipeline's pool: how long its requests waited for a connection, in all
        waited_ms = store._db._pool.get_stats().get("requests_wait_ms", 0)
    finally:
        stop.set()
        for t in readers:
            t.join()
        store.close()
    assert waited_ms < 200, (waited_ms, slowest)


def test_an_api_query_past_its_statement_timeout_is_cancelled(pg_url):
    store = DiagnosisStore(url=pg_url, pool_size=1, api_statement_timeout=1.0)
    try:
        with pytest.raises(psycopg.errors.QueryCanceled):
            with store._db.session(api=True) as s:
                s.execute("SELECT pg_sleep(3)")
        with store._db.session() as s:  # the pipeline's own statements have no such limit
            s.execute("SELECT pg_sleep(1.2)")
    finally:
        store.close()


def test_a_quiet_replica_stores_its_runs_when_the_store_returns_and_a_restart_counts_each_run_once(tmp_path, pg_url,
                                                                                                  postgres):
    """While the database is down a replica stays ready (ingest goes on into its log) and the web
    view answers its own page; a run diagnosed meanwhile is counted only once the store takes it,
    so a restart before then counts it once, and a replica with no new traffic stores its runs
    when the database returns."""
    import httpx
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from tests.service.support import emit_run, make_config, metric, provider_for, running

    config = make_config(tmp_path, store={"url": pg_url})
    _allow(postgres, pg_url, True)
    with running(config) as server:
        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        _allow(postgres, pg_url, False)
        try:
            during, _ = emit_run(provider)  # acknowledged: the write-ahead log holds it
            wait_for(lambda: metric(server, "mast_store_errors_total") > 0, timeout=60)
            assert httpx.get(f"{server.http_url}/readyz").status_code == 200
            page = httpx.get(f"{server.http_url}/runs", headers={"Accept": "text/html"}, timeout=60)
            assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
            assert "unavailable" in page.text and page.headers["Retry-After"] == "1"
            before_restart = metric(server, "mast_traces_total")
        finally:
            provider.shutdown()
    assert before_restart == 0  # not stored yet: not counted yet
    _allow(postgres, pg_url, True)
    with running(config) as server:  # replays its log: diagnosed, stored and counted here, once
        wait_for(lambda: httpx.get(f"{server.http_url}/v1/diagnoses/{during}", timeout=30).status_code == 200,
                 timeout=60, interval=0.2)
        assert metric(server, "mast_traces_total") == 1
        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        _allow(postgres, pg_url, False)
        try:
            quiet, _ = emit_run(provider)
            wait_for(lambda: metric(server, "mast_store_errors_total") > 0, timeout=60)
        finally:
            _allow(postgres, pg_url, True)
            provider.shutdown()
        # no new traffic: the retry timer stores it, and it is counted then
        wait_for(lambda: httpx.get(f"{server.http_url}/v1/diagnoses/{quiet}", timeout=30).status_code == 200,
                 timeout=60, interval=0.2)
        wait_for(lambda: metric(server, "mast_traces_total") == 2, timeout=10)
