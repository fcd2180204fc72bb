"""The PostgreSQL store against a real server: the same answers as SQLite, migrations that
replicas may run together, retention, and what a shared store keeps for the other replicas."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psycopg
import pytest

from mast_otel.processors.model import Diagnosis, Finding, GuardIntervention, Role, Run, RunHints, Span
from mast_otel.processors.service.store import schema as store_schema
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.store.run_steps import step_rows, steps_json
from mast_otel.processors.service.store.span_codec import parse_spans, spans_json
from mast_otel.processors.service.store.diagnoses import DiagnosisStore, StoreUnavailable
from tests.service.test_recent_reader import _diagnoses


def _steps(trace_id: str) -> str:
    run = Run.from_spans(trace_id, [Span(trace_id, trace_id[:16], None, "execute_tool kubectl_get", 1, 2, Role.TOOL,
                                         tool_name="kubectl_get")])
    return steps_json(step_rows(run))


def test_postgresql_answers_every_query_as_sqlite_does(tmp_path, pg_url):
    diagnoses = _diagnoses(60)
    lite, shared = DiagnosisStore(tmp_path / "d.sqlite"), DiagnosisStore(url=pg_url)
    assert (lite.shared, shared.shared) == (False, True)
    for store in (lite, shared):
        store.save_many([(d, Accounting(modes={m: "rules" for m in d.modes})) for d in diagnoses],
                        {d.trace_id: _steps(d.trace_id) for d in diagnoses[:10]})
        store.put_pending_outcome("e" * 32, "failure", 0.25)
        store.set_outcome(diagnoses[5].trace_id, "success", 0.9)
    middle = 1_700_000_000 + 500
    questions = [
        {}, {"model": "claude"}, {"agent": "triage", "outcome": "failure"}, {"service": "svc-b", "fatal": True},
        {"mode": "FM-1.3"}, {"mode": "FM-2.2", "fatal": False}, {"since": middle}, {"until": middle},
        {"since": 1_700_000_001.5}, {"model": "gpt-4o", "limit": 5, "offset": 3}, {"limit": 7, "offset": 50},
    ]
    for question in questions:
        filters = {k: v for k, v in question.items() if k not in ("limit", "offset")}
        assert shared.query(**question) == lite.query(**question), question
        assert shared.count(**filters) == lite.count(**filters), question
    for window in ({}, {"since": middle}, {"latest": 17}):
        assert [sorted(rows, key=repr) for rows in shared.counts(**window)] == [
            sorted(rows, key=repr) for rows in lite.counts(**window)], window
    for page in ({}, {"since": middle}, {"limit": 1}, {"limit": 1, "offset": 1}, {"model": "claude"}, {"unnamed": True}):
        mine, theirs = shared.model_counts_page(**page), lite.model_counts_page(**page)
        assert (mine.total, mine.models, mine.model_count) == (theirs.total, theirs.models, theirs.model_count), page
        assert sorted(mine.modes, key=repr) == sorted(theirs.modes, key=repr), page
        assert sorted(mine.total_modes, key=repr) == sorted(theirs.total_modes, key=repr), page
    some = diagnoses[5].trace_id
    assert shared.get(some) == lite.get(some) and shared.get(some).outcome == "success"
    assert shared.accounting(some) == lite.accounting(some) and shared.accounting(some).modes
    assert shared.steps(some) == lite.steps(some) is not None
    assert shared.recent_steps(3) == lite.recent_steps(3)
    assert shared.existing([some, "0" * 31 + "x"]) == {some}
    assert shared.take_pending_outcomes(["e" * 32, some]) == lite.take_pending_outcomes(["e" * 32, some]) == {
        "e" * 32: ("failure", 0.25)}
    assert shared.take_pending_outcome("e" * 32) is None  # taken once
    lite.close()
    shared.close()


def test_replicas_starting_together_apply_each_migration_once(pg_url):
    stores, errors = [], []

    def open_one():
        try:
            stores.append(DiagnosisStore(url=pg_url))
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(stores) == 6
    with psycopg.connect(pg_url) as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == [m.version for m in store_schema.MIGRATIONS]
    for store in stores:
        store.close()
    DiagnosisStore(url=pg_url).close()  # a later start applies nothing and opens fine


def test_a_store_only_one_replica_wrote_is_read_by_another(pg_url):
    """A diagnosis, its accounting, a pending outcome and a judge verdict written through one
    replica's store are what every other replica reads."""
    one, other = DiagnosisStore(url=pg_url), DiagnosisStore(url=pg_url)
    d = _diagnoses(1)[0]
    one.save_many([(d, Accounting(modes={"FM-1.3": "rules"}))])
    other.put_pending_outcome("a" * 32, "success")  # another replica's count of pending outcomes is not this one's
    one.put_judge_verdict("k", '{"verdicts": []}')
    assert other.latest(d.trace_id) == (d, Accounting(modes={"FM-1.3": "rules"}))
    assert one.take_pending_outcomes(["a" * 32]) == {"a" * 32: ("success", None)}
    assert other.judge_verdict("k") == '{"verdicts": []}' and other.judge_verdict("missing") is None
    one.close()
    other.close()


def test_retention_deletes_old_runs_in_bounded_passes(pg_url):
    store = DiagnosisStore(url=pg_url, retention_days=1, prune_batch=4, prune_every=10**9)
    now = time.time()
    old = [Diagnosis(trace_id=f"{i:032x}", findings=[Finding("FM-1.3", 0.8, "x", ())], fatal=False,
                     diagnosed_at=now - 3 * 86_400 + i)
           for i in range(10)]
    new = [Diagnosis(trace_id=f"{100 + i:032x}", findings=[], fatal=False, diagnosed_at=now) for i in range(3)]
    store.save_many([(d, None) for d in old + new], {d.trace_id: _steps(d.trace_id) for d in old + new},
                    span_texts={d.trace_id: "[]" for d in old})
    store.put_judge_verdict("stale", "{}")
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE judge_verdicts SET stored_at = stored_at - 3 * 86400")
    assert store.prune(now) == 4 and store.count() == 9  # one pass: at most prune_batch runs
    assert store.prune(now) == 4 and store.prune(now) == 2 and store.prune(now) == 0
    assert {d.trace_id for d in store.query()} == {d.trace_id for d in new}
    assert store.steps(old[0].trace_id) is None and store.spans(old[-1].trace_id) is None
    assert store.count(mode="FM-1.3") == 0 and store.judge_verdict("stale") is None
    store.close()


def test_an_unreachable_postgresql_is_a_clear_error_without_the_password(postgres):
    url = f"postgresql://mast:hunter2@127.0.0.1:{postgres.port}/no_such_database"
    with pytest.raises(StoreUnavailable) as caught:
        DiagnosisStore(url=url, pool_size=1)
    message = str(caught.value)
    assert "no_such_database" in message and "hunter2" not in message and "***" in message
    with pytest.raises(StoreUnavailable, match="only postgresql://"):
        DiagnosisStore(url="mysql://x@localhost/db")


def test_spans_round_trip_through_the_shared_store_text():
    spans = [
        Span("a" * 32, "1" * 16, None, "invoke_agent triage", 1, 9, Role.AGENT, agent_name="triage",
             hints=RunHints(max_steps=5, constraints=("no writes",), allowed_tools=("kubectl_get",), derived={"a": "b"})),
        Span("a" * 32, "2" * 16, "1" * 16, "chat gpt-4o", 2, 3, Role.LLM, model="gpt-4o", finish_reasons=("stop",),
             requested_tools=("kubectl_get",), tool_exchanges={"c1": ("h", None, "out")}, input_text="é\u2028"),
        Span("a" * 32, "3" * 16, "1" * 16, "execute_tool kubectl_get", 4, 5, Role.TOOL, tool_name="kubectl_get",
             guard_interventions=(GuardIntervention("3" * 16, "loop", "enforce", "blocked", "FM-1.3", ("2" * 16,)),)),
    ]
    assert parse_spans(spans_json(spans)) == spans


def test_the_sqlite_store_never_imports_psycopg(tmp_path):
    code = ("import sys; from mast_otel.processors.service.server import ProcessorServer; "
            "from mast_otel.processors.config import ProcessorConfig; "
            f"s = ProcessorServer(ProcessorConfig(store={{'path': {str(tmp_path / 's.sqlite')!r}}}, wal={{'enabled': False}})); "
            "s.shutdown(); print(sorted(m for m in sys.modules if m.startswith('psycopg')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_judge_verdict_one_replica_paid_for_is_read_by_another(pg_url):
    from mast_otel.processors.judge.cache import VerdictCache, cache_key
    from mast_otel.processors.judge.schema import Assessment

    one, other = DiagnosisStore(url=pg_url), DiagnosisStore(url=pg_url)
    from mast_otel.processors import taxonomy

    verdict = Assessment.model_validate({"modes": [
        {"mode": m, "detected": m == "FM-1.3", "confidence": 0.8, "steps": ["S2"] if m == "FM-1.3" else [],
         "rationale": "S2 repeats S1" if m == "FM-1.3" else "not seen"} for m in taxonomy.MODES]})
    key = cache_key("model", "prompt", "run text")
    VerdictCache(10, one).put(key, verdict)
    assert VerdictCache(10, other).get(key) == verdict and VerdictCache(10, other).get(cache_key("x")) is None
    one.close()
    other.close()
    broken = VerdictCache(10, other)  # a store that refuses: a miss, never an error
    assert broken.get(key) is None
    broken.put(key, verdict)
    assert broken.get(key) == verdict


def test_a_postgresql_gone_away_is_a_503_and_its_runs_are_stored_when_it_returns(tmp_path, pg_url, postgres):
    """The database refusing connections: the API answers 503 with Retry-After (not a 500), spans
    are still acknowledged, the refused writes are counted, and once the database is back the
    runs diagnosed meanwhile are stored."""
    import httpx
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from tests.service.support import emit_run, make_config, metric, provider_for, running, wait_for

    database = pg_url.rsplit("/", 1)[1]

    def allow(on: bool) -> None:
        with psycopg.connect(postgres.url("postgres"), autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(on).lower()}')
            if not on:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,))

    config = make_config(tmp_path, store={"url": pg_url})
    with running(config) as server:
        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        first, _ = emit_run(provider)
        wait_for(lambda: httpx.get(f"{server.http_url}/v1/diagnoses/{first}").status_code == 200, timeout=30)
        allow(False)
        try:
            answer = httpx.get(f"{server.http_url}/v1/diagnoses", timeout=60)
            assert answer.status_code == 503 and answer.headers["Retry-After"] == "1", answer.text
            posted = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": first, "outcome": "success"}, timeout=60)
            assert posted.status_code == 503 and "unavailable" in posted.json()["detail"]
            during, _ = emit_run(provider)  # acknowledged: the write-ahead log holds it
            wait_for(lambda: metric(server, "mast_store_errors_total") > 0, timeout=60)
        finally:
            allow(True)
        after, _ = emit_run(provider)  # the next batch retries the refused one
        for trace_id in (during, after):
            wait_for(lambda: httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", timeout=30).status_code == 200,
                     timeout=60, interval=0.2)
        provider.shutdown()


def test_a_quiet_store_is_still_pruned_on_its_interval(tmp_path):
    """No saves arrive, yet runs past retention_days go: the store exporter prunes on a timer."""
    from mast_otel.processors.service.telemetry.metrics import Metrics
    from mast_otel.processors.service.outputs.store import StoreExporter
    from mast_otel.processors.config import MetricsConfig
    from tests.service.support import wait_for

    store = DiagnosisStore(tmp_path / "d.sqlite", retention_days=1, prune_every=10**9)
    store.save_many([(Diagnosis(trace_id="a" * 32, findings=[], fatal=False, diagnosed_at=time.time() - 2 * 86_400), None),
                     (Diagnosis(trace_id="b" * 32, findings=[], fatal=False, diagnosed_at=time.time()), None)])
    exporter = StoreExporter(store, Metrics(MetricsConfig()), prune_interval_seconds=0.05)
    exporter.start()
    try:
        wait_for(lambda: store.count() == 1)
        assert store.get("b" * 32) is not None
    finally:
        exporter.shutdown()
        exporter.shutdown()  # twice is harmless
