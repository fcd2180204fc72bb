"""With the store off, the API and the web view read recent diagnoses from memory.

The in-memory reader must answer every query the way the SQLite store does: both are fed the
same diagnoses and asked the same filtered, paged questions.
"""

from __future__ import annotations

import random

import httpx

from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.outputs.base import Batch, Counts, DiagnosedRun
from mast_otel.processors.service.outputs.recent import RecentDiagnoses
from mast_otel.processors.service.store.run_steps import RunStep
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from tests.service.support import emit_run, make_config, provider_for, running, wait_for

MODES = ("FM-1.3", "FM-1.5", "FM-2.2", "FM-3.2")


def _diagnoses(count: int, seed: int = 7) -> list[Diagnosis]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        modes = rng.sample(MODES, rng.randint(0, 2))
        out.append(Diagnosis(
            trace_id=f"{i:032x}", findings=[Finding(m, 0.8, "seen", (f"{i:016x}",)) for m in modes],
            fatal=bool(modes) and rng.random() < 0.5, service_name=rng.choice(("svc-a", "svc-b")),
            agent=rng.choice(("triage", "fixer", None)), model=rng.choice(("gpt-4o", "claude")),
            outcome=rng.choice(("success", "failure", None)),
            started_ns=None if i % 7 == 0 else 1_700_000_000_000_000_000 + rng.randrange(10**12),
            diagnosed_at=1_700_000_000.0 + rng.choice((0.0, 1.0, 2.0, 3.0)),  # ties: ordered by trace id
        ))
    return out


def _batch(diagnoses: list[Diagnosis]) -> Batch:
    return Batch([DiagnosedRun("outcome", d, None, Counts(), Accounting()) for d in diagnoses])


def test_memory_reader_answers_queries_as_the_store_does(tmp_path) -> None:
    diagnoses = _diagnoses(60)
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many([(d, Accounting()) for d in diagnoses])
    memory = RecentDiagnoses(1000)
    memory.export(_batch(diagnoses))
    middle = 1_700_000_000 + 500
    questions = [
        {}, {"model": "claude"}, {"agent": "triage", "outcome": "failure"}, {"service": "svc-b", "fatal": True},
        {"mode": "FM-1.3"}, {"mode": "FM-2.2", "fatal": False}, {"since": middle}, {"until": middle},
        {"since": 1_700_000_001.5}, {"model": "gpt-4o", "limit": 5, "offset": 3}, {"limit": 7, "offset": 50},
    ]
    for question in questions:
        filters = {k: v for k, v in question.items() if k not in ("limit", "offset")}
        expected = [d.trace_id for d in store.query(**question)]
        assert [d.trace_id for d in memory.query(**question)] == expected, question
        assert memory.count(**filters) == store.count(**filters), question
    for window in ({}, {"since": middle}, {"latest": 17}):
        assert [sorted(rows, key=repr) for rows in memory.counts(**window)] == [
            sorted(rows, key=repr) for rows in store.counts(**window)], window
    for page in ({}, {"since": middle}, {"limit": 1}, {"limit": 1, "offset": 1}, {"model": "claude"}, {"unnamed": True}):
        mine, theirs = memory.model_counts_page(**page), store.model_counts_page(**page)
        assert (mine.total, mine.models, mine.model_count) == (theirs.total, theirs.models, theirs.model_count), page
        assert sorted(mine.modes, key=repr) == sorted(theirs.modes, key=repr), page
        assert sorted(mine.total_modes, key=repr) == sorted(theirs.total_modes, key=repr), page
    assert memory.get(diagnoses[3].trace_id) is diagnoses[3] and memory.get("f" * 32) is None
    store.close()


def test_memory_reader_is_bounded_and_keeps_step_lists_across_updates() -> None:
    memory = RecentDiagnoses(3)
    diagnoses = _diagnoses(5)
    steps = [RunStep("a" * 16, None, "agent", "invoke_agent triage", 1, 2, agent="triage")]
    first = DiagnosedRun("diagnosis", diagnoses[0], None, Counts(), Accounting(), steps=steps)
    memory.export(Batch([first]))
    memory.export(_batch(diagnoses[:1]))  # an outcome change: the step list stays
    assert memory.steps(diagnoses[0].trace_id) == steps
    memory.export(_batch(diagnoses[1:]))
    assert [d.trace_id for d in memory.query(limit=10)] == sorted(
        (d.trace_id for d in diagnoses[2:]), key=lambda t: (-next(d.diagnosed_at for d in diagnoses if d.trace_id == t), t))
    assert memory.get(diagnoses[0].trace_id) is None and memory.count() == 3


def test_store_off_the_web_view_and_api_still_show_recent_runs(tmp_path) -> None:
    config = make_config(tmp_path, store={"enabled": False}, web={"enabled": True})
    with running(config) as server:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider, tools=(("kubectl_logs", "same"),) * 3)
        provider.force_flush()
        diagnosis = wait_for(lambda: httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}").json().get("modes"))
        assert [m["mode"] for m in diagnosis] == ["FM-1.3"]
        page = httpx.get(f"{server.http_url}/runs/{trace_id}")
        assert page.status_code == 200 and ids["agent"] in page.text and "FM-1.3" in page.text
        overview = httpx.get(f"{server.http_url}/")
        assert overview.status_code == 200 and "FM-1.3" in overview.text  # counted from the recent runs
        provider.shutdown()
