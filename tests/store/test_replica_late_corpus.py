"""A run whose pieces reach two replicas sharing a PostgreSQL store is diagnosed as offline.

The first replica gets each run of the team corpus but its last piece (the spans that ended
last, the root among them) and diagnoses it once it idles; the last piece goes to the second
replica (a gateway re-routed the trace), which diagnoses the whole run from the spans the store
keeps and its own. The store must keep the spans as they arrived, not as the
first diagnosis changed them (re-linked parents, stand-in agents, derived hints), or the second
diagnosis reads a run that never was."""

from __future__ import annotations

import time

import httpx

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.service.server import ProcessorServer
from tests.frameworks.test_corpus_streaming import offline_modes, requests_of
from tests.service.support import wait_for
from tests.teams.corpus_files import recordings

PIECES = 3


def _replica(tmp_path, name: str, url: str) -> ProcessorServer:
    return ProcessorServer(ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "grpc_enabled": False},
        assembly={"grace_seconds": 0.3, "idle_timeout_seconds": 1.0, "sweep_interval_seconds": 0.05},
        store={"url": url}, wal={"directory": str(tmp_path / f"{name}.wal")}))


def _post(server: ProcessorServer, body: bytes) -> None:
    answer = httpx.post(f"{server.http_url}/v1/traces", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 200 and "rejected" not in answer.text


def _settle(server: ProcessorServer, want: dict[str, list[str]], revision: int) -> dict[str, list[str] | None]:
    def modes() -> dict[str, list[str] | None]:
        return {t: sorted(d.modes) if (d := server.store.get(t)) and d.revision >= revision else None for t in want}
    deadline = time.monotonic() + 30  # a settled run matches at once; a wrong one is waited out
    while (got := modes()) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    return got


def test_the_rest_of_a_run_on_another_replica_rediagnoses_to_the_offline_diagnosis(tmp_path, pg_url):
    corpus = [r for r in recordings() if r.variant == "content"]
    expected = {t: sorted(modes) for t, modes in offline_modes(corpus).items()}
    where = {run.trace_id: r.id for r in corpus for run in load_runs([r.path])}
    pieces = [requests_of(line, PIECES) for r in corpus for line in r.path.read_text().splitlines()]
    one, other = _replica(tmp_path, "one", pg_url), _replica(tmp_path, "other", pg_url)
    one.start()
    other.start()
    try:
        for bodies in pieces:
            for body in bodies[:-1]:
                _post(one, body)
        wait_for(lambda: all(one.store.get(t) for t in expected), timeout=30, interval=0.2)
        for bodies in pieces:
            _post(other, bodies[-1])
        got = _settle(other, expected, 1)
    finally:
        other.stop()
        one.stop()
    assert {where[t]: (m, expected[t]) for t, m in got.items() if m != expected[t]} == {}
