"""The content-mode recordings streamed to the running processor: content in log records, sent before
or after the spans, is diagnosed as the same run with its content on spans.

Each events or both recording is posted over OTLP/HTTP as it was recorded: its spans to
``/v1/traces`` and its log records to ``/v1/logs``, the records first or the spans first (within
the run's grace, as a batching exporter sends them). The stored diagnosis must equal the offline
diagnosis of the content-on-spans recording of the same scenario (for the openai-v2 per-message
path, which has no content-on-spans mode, the util-genai recording of the same hand-written loop
and script).
"""

from __future__ import annotations

import httpx
import pytest

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.service.server import ProcessorServer
from tests.frameworks.corpus_files import Recording, recordings
from tests.service.support import make_config, wait_for

ALL = recordings(variants=("content", "events", "both"))
BY_KEY = {(r.framework, r.variant, r.scenario.name): r for r in ALL}
STREAMED = [r for r in ALL if r.variant in ("events", "both")]


def reference(recording: Recording) -> set[str]:
    """What the offline diagnosis finds on the same run with its content on spans."""
    spans = BY_KEY.get((recording.framework, "content", recording.scenario.name)) \
        or BY_KEY[("openai-v2-genai", "content", recording.scenario.name)]  # the same loop and script
    (run,) = [r for r in load_runs([spans.path]) if r.steps]
    return {f.mode for f in rule_findings(run)}


def trace_of(recording: Recording) -> str:
    (run,) = [r for r in load_runs([recording.path]) if r.steps]
    return run.trace_id


@pytest.mark.parametrize("order", [("logs", "spans"), ("spans", "logs")], ids=["logs-first", "spans-first"])
def test_streamed_content_in_log_records_gets_the_verdict_of_content_on_spans(tmp_path, order):
    assert STREAMED and all(r.logs for r in STREAMED)
    expected = {trace_of(r): reference(r) for r in STREAMED}
    assert any(expected.values())  # slips to find, not only quiet runs
    config = make_config(tmp_path, assembly={"grace_seconds": 1.5})
    server = ProcessorServer(config)
    server.start()
    try:
        with httpx.Client() as client:
            for recording in STREAMED:
                assert recording.logs is not None
                bodies = {"spans": ("/v1/traces", recording.path.read_bytes()), "logs": ("/v1/logs", recording.logs.read_bytes())}
                for send in order:
                    route, body = bodies[send]
                    response = client.post(f"{server.http_url}{route}", content=body, headers={"Content-Type": "application/json"})
                    assert response.status_code == 200 and "rejected" not in response.text, (recording.id, route, response.text)
        stored = wait_for(lambda: (got := {t: server.store.get(t) for t in expected}) and all(got.values()) and got,
                          timeout=60)
    finally:
        server.stop()
    where = {trace_of(r): r.id for r in STREAMED}
    assert {where[t]: set(d.modes) for t, d in stored.items()} == {where[t]: modes for t, modes in expected.items()}
