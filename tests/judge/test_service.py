"""The judge inside the real processor: OTLP in, rule diagnosis first, judge findings merged after.

A ``ProcessorServer`` on ephemeral ports (the judge is wired in because ``judge.model`` is
set), agent runs emitted by mast-otel's own instrumentation through the SDK's real OTLP/HTTP
exporter with content capture on, and the judge model served by the local test server. The
rule detectors are a one-rule set passed in by the pipeline's injection point, so these tests
check the judge's merge, not the state of the rule detectors.
"""

from __future__ import annotations

import functools
import time
from typing import Callable

import httpx
import pytest
from judge_support import SECRETS, JudgeServer, NoLiveDetection, make_run
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from mast_otel.instrumentation import agent_run, configure, tool_call
from mast_otel.processors.config import DetectionConfig, ProcessorConfig
from mast_otel.processors.judge import client as status
from mast_otel.processors.model import Diagnosis, Finding, Run
from mast_otel.processors.service.server import ProcessorServer
from tests.service import support
from tests.service.support import metric

wait_for = functools.partial(support.wait_for, timeout=15.0)  # a judge answers slower on a loaded machine


def rules(run: Run, config: DetectionConfig | None = None) -> list[Finding]:
    """FM-3.3 when a run claims success after a failed verification."""
    failed = [s for s in run.tool_calls if s.verification_passed is False]
    if run.hints.claimed_success and failed:
        return [Finding("FM-3.3", 0.95, "claimed success after a failed check", (failed[0].span_id,), detector="test.verify")]
    return []


@pytest.fixture
def processor(tmp_path, judge_server: JudgeServer, server_config):
    config = ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False},
        assembly={"grace_seconds": 0.1, "sweep_interval_seconds": 0.05, "retention_seconds": 60},
        store={"path": str(tmp_path / "diagnoses.sqlite")},
        judge=server_config.model_dump() | {"api_key": "test-key-not-a-secret"},
    )
    server = ProcessorServer(config, diagnose=rules, live_detection=NoLiveDetection)
    assert server.judge is not None  # wired in because judge.model is set
    with server:
        yield server


@pytest.fixture
def emit(processor: ProcessorServer):
    provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{processor.http_url}/v1/traces")))
    configure(tracer_provider=provider, capture_content=True)

    def run(outcome: str = "failure") -> str:
        with agent_run("triage", max_steps=10, task=f"Why do payments pods crash? creds {SECRETS['openai']}") as agent:
            agent.next_step()
            with tool_call("kubectl_logs", kind="read", arguments={"pod": "payments-1"}) as call:
                call.set_result(f"connecting to postgres://app:{SECRETS['url_password']}@db:5432 failed")
            agent.next_step()
            with tool_call("check_rollout", kind="verify", arguments={"deploy": "payments"}) as check:
                check.set_result("rollout still failing")
                check.set_verification(False)
            agent.set_final_answer(f"Fixed it; notify {SECRETS['email']}")
            agent.set_claimed_success(True)
            agent.set_outcome(outcome)
            return format(agent.span.get_span_context().trace_id, "032x")

    yield run
    configure(tracer_provider=None, capture_content=None)
    provider.shutdown()


def judged(server: ProcessorServer, trace_id: str) -> Callable[[], Diagnosis | None]:
    def check() -> Diagnosis | None:
        d = server.store.get(trace_id)
        return d if d is not None and "judge" in d.sources else None

    return check


def test_judge_findings_merge_into_the_diagnosis_store_and_metrics(processor: ProcessorServer, emit, judge_server: JudgeServer) -> None:
    trace_id = emit("failure")
    d = wait_for(judged(processor, trace_id))
    run = processor.ingest.get_run(trace_id)
    verdicts = d.verdicts
    assert verdicts["FM-3.3"].sources == ("judge", "rules")  # both tiers found it
    assert verdicts["FM-2.3"].sources == ("judge",)
    assert set(verdicts["FM-2.3"].evidence_span_ids) <= {s.span_id for s in run.spans}
    assert metric(processor, "mast_judge_requests_total", judge_model="openai/local-judge", status="ok") == 1
    assert metric(processor, "mast_judge_tokens_total", status="ok") == 1200
    # each (run, mode) counted once, under the source that found it first
    assert metric(processor, "mast_failure_mode_traces_total", mode="FM-3.3", source="rules") == 1
    assert metric(processor, "mast_failure_mode_traces_total", mode="FM-3.3", source="judge") == 0
    assert metric(processor, "mast_failure_mode_traces_total", mode="FM-2.3", source="judge") == 1
    # nothing secret left the process; the structure did
    assert [k for k, v in SECRETS.items() if v in judge_server.bodies] == []
    assert "check_rollout kind=verify" in judge_server.bodies and "verification=FAILED" in judge_server.bodies
    time.sleep(0.3)  # merging our own findings must not trigger another judgement
    assert len(judge_server.requests) == 1


def test_a_slow_judge_does_not_hold_up_rule_diagnoses(processor: ProcessorServer, emit, judge_server: JudgeServer) -> None:
    judge_server.script = ["slow"]
    judge_server.slow_seconds = 2.0
    trace_id = emit("failure")
    first = wait_for(lambda: processor.store.get(trace_id))
    assert first.sources == ["rules"]  # stored while the judge is still thinking
    assert len(judge_server.requests) <= 1
    assert wait_for(judged(processor, trace_id)).revision > first.revision


def test_successful_runs_are_not_judged_unless_sampled_or_asked(processor: ProcessorServer, emit, judge_server: JudgeServer) -> None:
    processor.judge.config = processor.judge.config.model_copy(update={"judge_fatal_runs": False})
    trace_id = emit("success")
    wait_for(lambda: processor.store.get(trace_id))
    time.sleep(0.3)
    assert judge_server.requests == []

    url = f"{processor.http_url}/v1/diagnoses/{trace_id}/judge"
    answer = httpx.post(url, params={"wait": "true"}, timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == status.OK
    assert {f["mode"] for f in answer.json()["findings"]} == {"FM-2.3", "FM-3.3"}
    assert "judge" in processor.store.get(trace_id).sources
    again = httpx.post(url, params={"wait": "true"}, timeout=30)
    assert again.json()["status"] == status.CACHED and len(judge_server.requests) == 1
    queued = httpx.post(url, timeout=30)
    assert queued.status_code == 202 and queued.json()["status"] == "queued"


def test_on_demand_requests_validate_the_trace(processor: ProcessorServer) -> None:
    assert httpx.post(f"{processor.http_url}/v1/diagnoses/{'ab' * 16}/judge").status_code == 404
    assert httpx.post(f"{processor.http_url}/v1/diagnoses/not-a-trace/judge").status_code == 422
    wrong = httpx.post(f"{processor.http_url}/v1/diagnoses/{'ab' * 16}/judge", params={"force": "true"})
    assert wrong.status_code == 400 and "force" in wrong.json()["detail"]  # it takes no parameter: not ignored


def test_a_full_queue_skips_and_counts_instead_of_blocking(processor: ProcessorServer, judge_server: JudgeServer) -> None:
    from mast_otel.processors.judge.service import JudgeService

    judge_server.script = ["slow"] * 5
    judge_server.slow_seconds = 1.0
    config = processor.judge.config.model_copy(update={"max_queue": 1, "max_concurrency": 1, "cache_size": 0})
    service = JudgeService(config, processor.ingest, processor.metrics)
    service.start()
    try:
        for i in range(4):
            run = make_run(4, secret=False, trace_id=f"{i + 1:032x}")
            service.on_diagnosis(run, Diagnosis(trace_id=run.trace_id, findings=[], fatal=False, outcome="failure"))
        assert metric(processor, "mast_judge_requests_total", status=status.QUEUE_FULL) >= 2
    finally:
        service.stop(timeout=5)
