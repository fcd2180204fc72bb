"""An outcome posted after the diagnosis reaches the judge's "judge failed runs" policy, once."""

from __future__ import annotations

import time

import httpx
from judge_support import JudgeServer
from test_service import emit, judged, processor, wait_for  # noqa: F401  (fixtures)

from mast_otel.processors.service.server import ProcessorServer


def post_outcome(server: ProcessorServer, trace_id: str, outcome: str) -> dict:
    response = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": trace_id, "outcome": outcome})
    assert response.status_code == 200, response.text
    return response.json()


def test_failure_posted_after_the_diagnosis_gets_the_run_judged_once(processor: ProcessorServer, emit,
                                                                    judge_server: JudgeServer) -> None:
    trace_id = emit("unknown")  # the rules find FM-3.3 only (recoverable): not judged at diagnosis
    first = wait_for(lambda: processor.store.get(trace_id))
    time.sleep(0.3)
    assert judge_server.requests == [] and first.sources == ["rules"]

    assert post_outcome(processor, trace_id, "failure")["status"] == "applied"
    d = wait_for(judged(processor, trace_id))
    assert d.outcome == "failure" and len(judge_server.requests) == 1

    for outcome in ("failure", "success", "failure"):  # the same content is never judged twice
        post_outcome(processor, trace_id, outcome)
    time.sleep(0.3)
    assert len(judge_server.requests) == 1


def test_success_posted_after_the_diagnosis_is_not_judged(processor: ProcessorServer, emit,
                                                         judge_server: JudgeServer) -> None:
    trace_id = emit("unknown")
    wait_for(lambda: processor.store.get(trace_id))
    post_outcome(processor, trace_id, "success")
    time.sleep(0.3)
    assert judge_server.requests == []
