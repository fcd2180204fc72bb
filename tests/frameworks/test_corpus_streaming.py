"""The framework and team corpora streamed through the running processor: same diagnoses as offline.

Each recording is posted over OTLP/HTTP in several requests, spans in the order they ended
(as an exporter batches them), and again with the requests reversed, so the run is assembled
from pieces, live detection sees every span first, and the root comes last or first. The stored
diagnosis must complete by its root (never by idling out) and match the offline diagnosis, and
no live detection may be one the final diagnosis withdraws (a live false alarm is counted in
``mast_live_detections_total`` all the same).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.service.server import ProcessorServer
from tests.frameworks.corpus_files import recordings
from tests.teams.corpus_files import recordings as team_recordings
from tests.service.support import make_config, metric, wait_for

PIECES = 3


def requests_of(line: str, pieces: int) -> list[bytes]:
    """One OTLP/JSON request split into ``pieces`` requests, span order kept."""
    doc = json.loads(line)
    flat = [(rs, ss, sp) for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]
    size = max(1, -(-len(flat) // pieces))
    out = []
    for start in range(0, len(flat), size):
        chunk = flat[start:start + size]
        body = {"resourceSpans": [{"resource": rs.get("resource", {}), "scopeSpans": [
            {"scope": ss.get("scope", {}), "spans": [sp]}]} for rs, ss, sp in chunk]}
        out.append(json.dumps(body).encode())
    return out


def offline_modes(corpus) -> dict[str, set[str]]:
    """Each run's failure modes as the whole recording is diagnosed offline (runs with steps)."""
    return {run.trace_id: {f.mode for f in rule_findings(run)}
            for recording in corpus for run in load_runs([recording.path]) if run.steps}


@pytest.mark.parametrize("corpus_of", [recordings, team_recordings], ids=["frameworks", "teams"])
@pytest.mark.parametrize("order", ["as_ended", "reversed"])
def test_streamed_corpus_matches_the_offline_diagnosis(tmp_path, order, corpus_of):
    corpus = [r for r in corpus_of() if r.variant == "content"]
    expected = offline_modes(corpus)
    # a grace no load stretches the gap between a run's requests past: a piece that comes after
    # its run was diagnosed is a late span, which this test is not about
    config = make_config(tmp_path, assembly={"grace_seconds": 3.0})
    server = ProcessorServer(config)  # the real detectors, live detection included
    server.start()
    try:
        with httpx.Client() as client:
            for recording in corpus:
                for line in recording.path.read_text().splitlines():
                    bodies = requests_of(line, PIECES)
                    for body in bodies if order == "as_ended" else bodies[::-1]:
                        response = client.post(f"{server.http_url}/v1/traces", content=body,
                                               headers={"Content-Type": "application/json"})
                        assert response.status_code == 200 and "rejected" not in response.text
        stored = wait_for(lambda: (got := {t: server.store.get(t) for t in expected}) and all(got.values()) and got,
                          timeout=30)
    finally:
        server.stop()
    assert {t: d.completion for t, d in stored.items()} == dict.fromkeys(expected, "root_ended")
    assert {t: set(d.modes) for t, d in stored.items()} == expected
    where = {run.trace_id: r.id for r in corpus for run in load_runs([r.path])}
    assert {where[t]: [(f.mode, f.explanation) for f in d.withdrawn] for t, d in stored.items() if d.withdrawn} == {}


@pytest.mark.parametrize("corpus_of", [recordings, team_recordings], ids=["frameworks", "teams"])
def test_pieces_after_the_grace_rediagnose_to_the_offline_diagnosis(tmp_path, corpus_of):
    """Each recording's root first and its other spans in later requests, each after the run was
    diagnosed (the grace passed): every late piece revives the run, and its last diagnosis must be
    the whole run's offline diagnosis, as soon as the grace passes again (a team's longer wait is
    for a root that has not come; here it came first)."""
    corpus = [r for r in corpus_of() if r.variant == "content"]
    expected = offline_modes(corpus)
    grace = 0.3
    config = make_config(tmp_path, assembly={"grace_seconds": grace, "team_grace_seconds": 600.0})
    server = ProcessorServer(config)
    server.start()
    try:
        pieces = [requests_of(line, PIECES)[::-1] for r in corpus for line in r.path.read_text().splitlines()]
        with httpx.Client() as client:
            for k in range(PIECES):
                if k:
                    time.sleep(grace * 3)  # every run diagnosed on what came so far
                for bodies in pieces:
                    if k < len(bodies):
                        response = client.post(f"{server.http_url}/v1/traces", content=bodies[k],
                                               headers={"Content-Type": "application/json"})
                        assert response.status_code == 200 and "rejected" not in response.text

        def modes() -> dict[str, list[str] | None]:
            return {t: sorted(d.modes) if (d := server.store.get(t)) else None for t in expected}
        deadline = time.monotonic() + 30  # a settled run matches at once; a wrong one is waited out
        while (stored := modes()) != {t: sorted(m) for t, m in expected.items()} and time.monotonic() < deadline:
            time.sleep(0.1)
        rediagnosed = metric(server, "mast_late_spans_total", reason="rediagnosed")
    finally:
        server.stop()
    assert rediagnosed > 0  # the pieces did come late
    where = {run.trace_id: r.id for r in corpus for run in load_runs([r.path])}
    assert {where[t]: (got, sorted(expected[t])) for t, got in stored.items() if got != sorted(expected[t])} == {}
