"""The judge over sessions inside the real processor: turns of one conversation sent by the OTel
SDK's OTLP exporter, grouped into a session, judged once when it completes, the judge's
cross-turn verdict kept beside the rules' findings and counted once per (session, mode).

The judge model is the local OpenAI-compatible test server; a session's prompt (step ids
``Tk.Sn``) gets a verdict citing the first turn and the last, and one citing the last turn alone
(which belongs to that run, not the session). Session rules are a test-local cross-turn rule.
"""

from __future__ import annotations

import functools
import time
from typing import Callable

import httpx
import pytest
from judge_support import SECRETS, JudgeServer, NoLiveDetection
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from mast_otel.instrumentation import agent_run, configure, tool_call
from mast_otel.processors.config import DetectionConfig, JudgeConfig, ProcessorConfig
from mast_otel.processors.model import Finding, Run
from mast_otel.processors.service.store.conversations import SessionRow
from mast_otel.processors.service.outputs.conversations import SessionTracker
from mast_otel.processors.service.server import ProcessorServer
from tests.service import support
from tests.service.support import metric
from tests.service.conversation_support import repeated_lookup

SESSION_PROMPT = "SESSION of"  # how the judge's prompt for a session begins

wait_for = functools.partial(support.wait_for, timeout=30.0)  # a judge answers slower on a loaded machine


def no_rules(run: Run, config: DetectionConfig | None = None) -> list[Finding]:
    return []


def session_requests(judge_server: JudgeServer) -> list[dict]:
    return [r for r in judge_server.requests if SESSION_PROMPT in r["body"]]


def processor(tmp_path, judge: JudgeConfig | None, **judge_updates) -> ProcessorServer:
    """A processor whose sessions complete after 2 s quiet (turns a test sends together stay in one
    completion on a loaded machine); the judge (when given) judges no run on its own policy, so
    every request it makes is a session's."""
    sections = {}
    if judge is not None:
        sections["judge"] = judge.model_dump() | {"api_key": "test-key-not-a-secret", "judge_failed_runs": False,
                                                  "judge_fatal_runs": False, **judge_updates}
    config = ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False},
        assembly={"grace_seconds": 0.1, "sweep_interval_seconds": 0.05, "retention_seconds": 60},
        store={"path": str(tmp_path / "diagnoses.sqlite")},
        sessions={"quiet_seconds": 2.0},
        **sections,
    )
    server = ProcessorServer(config, diagnose=no_rules, live_detection=NoLiveDetection)
    tracker = next(e for e in server.exporters if isinstance(e, SessionTracker))
    tracker.diagnose = repeated_lookup  # FM-1.3 when a later turn repeats an earlier turn's lookup
    return server


@pytest.fixture
def sender():
    providers: list[TracerProvider] = []

    def make(server: ProcessorServer) -> Callable[..., str]:
        provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces")))
        configure(tracer_provider=provider, capture_content=True)
        providers.append(provider)

        def turn(session_id: str, question: str) -> str:
            """One user turn (its own trace) with content carrying secrets the judge must never see."""
            with agent_run("support", conversation_id=session_id, task=f"{question} My key is {SECRETS['openai']}") as agent:
                agent.next_step()
                with tool_call("lookup", kind="read", arguments={"q": question}) as call:
                    call.set_result(f"account of {SECRETS['email']}")
                agent.set_final_answer("I do not know your name.")
                return format(agent.span.get_span_context().trace_id, "032x")

        return turn

    yield make
    configure(tracer_provider=None, capture_content=None)
    for provider in providers:
        provider.shutdown()


def tracker_of(server: ProcessorServer) -> SessionTracker:
    assert server.sessions is not None
    return server.sessions


def judged(server: ProcessorServer, session_id: str, turn: str) -> Callable[[], SessionRow | None]:
    """The session's row once it holds a judge finding on ``turn``."""
    def check() -> SessionRow | None:
        row = tracker_of(server).store.get(session_id)
        return row if row is not None and any(f.source == "judge" and f.turn_trace_id == turn for f in row.findings) else None
    return check


def test_a_completed_session_is_judged_once_and_its_cross_turn_verdict_kept_with_the_rules(
        tmp_path, judge_server: JudgeServer, server_config: JudgeConfig, sender) -> None:
    with processor(tmp_path, server_config) as server:
        turn = sender(server)
        sent = [turn("conv-judge", q) for q in ("My name is Ada.", "What is my plan?", "My name is Ada.")]
        single = turn("conv-single", "Hello?")
        wait_for(judged(server, "conv-judge", sent[2]))

        detail = httpx.get(f"{server.http_url}/v1/sessions/conv-judge").json()
        assert detail["status"] == "complete" and detail["modes"] == ["FM-1.3", "FM-1.4"]
        by_source = {f["source"]: f for f in detail["findings"]}
        assert set(by_source) == {"rules", "judge"} and len(detail["findings"]) == 2  # FM-3.3 cited one turn: not the session's
        rules, judge = by_source["rules"], by_source["judge"]
        assert rules["mode"] == "FM-1.3" and rules["turn_trace_id"] == sent[2]
        assert judge["mode"] == "FM-1.4" and judge["turn_trace_id"] == sent[2]
        assert judge["detector"] == "session_judge:openai/local-judge" and judge["explanation"].startswith("LLM judge")
        assert [e["trace_id"] for e in judge["evidence"]] == [sent[0], sent[2]]
        for ref in judge["evidence"]:  # spans of the turns the judge cited
            run = server.reader.get(ref["trace_id"])
            assert run is not None
            steps = httpx.get(f"{server.http_url}/v1/diagnoses/{ref['trace_id']}", params={"include": "steps"}).json()["steps"]
            assert ref["span_id"] in {s["span_id"] for s in steps}

        # one request, for the session of three turns; the single turn's session is not judged
        wait_for(lambda: (row := tracker_of(server).store.get("conv-single")) is not None and row.completed_at is not None)
        time.sleep(0.5)
        (request,) = judge_server.requests
        assert SESSION_PROMPT in request["body"] and single not in request["body"]
        assert [k for k, v in SECRETS.items() if v in judge_server.bodies] == [] and "[REDACTED:" in judge_server.bodies
        assert metric(server, "mast_judge_requests_total", judge_model="openai/local-judge", status="ok") == 1
        assert metric(server, "mast_session_failure_mode_total", mode="FM-1.4", service_name="support-bot") == 1
        assert metric(server, "mast_session_failure_mode_total", mode="FM-1.3") == 1
        assert metric(server, "mast_session_failure_mode_total", mode="FM-3.3") == 0

        # a later turn reopens it: the rules' re-diagnosis keeps the judge's finding, and the
        # session, complete again, is judged again over four turns; each mode still counted once
        later = turn("conv-judge", "Do you remember me?")
        row = wait_for(judged(server, "conv-judge", later))
        assert len(session_requests(judge_server)) == 2
        assert [f.mode for f in row.findings if f.source == "judge"] == ["FM-1.4"]  # the latest judgement replaced the first
        assert [f.evidence[-1].trace_id for f in row.findings if f.source == "judge"] == [later]
        assert metric(server, "mast_session_failure_mode_total", mode="FM-1.4") == 1
        assert metric(server, "mast_sessions_total") == 2


def test_the_rules_re_diagnosis_of_a_reopened_session_keeps_the_judge_finding(
        tmp_path, judge_server: JudgeServer, server_config: JudgeConfig, sender) -> None:
    judge_server.script = ["ok", "slow"]
    judge_server.slow_seconds = 10  # the second judgement is still on its way when the test looks
    with processor(tmp_path, server_config, max_retries=0, timeout_seconds=30) as server:
        turn = sender(server)
        sent = [turn("conv-reopen", q) for q in ("a", "b")]
        wait_for(judged(server, "conv-reopen", sent[1]))
        tracker = tracker_of(server)
        revision = tracker.store.get("conv-reopen").revision
        turn("conv-reopen", "c")
        row = wait_for(lambda: (r := tracker.store.get("conv-reopen")) is not None and r.revision > revision and r)
        assert [f.mode for f in row.findings if f.source == "judge"] == ["FM-1.4"]
        assert httpx.get(f"{server.http_url}/v1/sessions", params={"mode": "FM-1.4"}).json()["total"] == 1
        # and the session worker goes on while the judge is slow: another session is grouped meanwhile
        wait_for(lambda: len(session_requests(judge_server)) == 2)
        other = [turn("conv-meanwhile", q) for q in ("x", "y")]
        wait_for(lambda: (r := tracker.store.get("conv-meanwhile")) is not None and r.turn_count == 2 and r.revision > 0)
        assert other and tracker.store.get("conv-reopen").revision == row.revision  # the judge has not answered yet


@pytest.mark.parametrize("judge_on, judge_sessions", [(False, True), (True, False)], ids=["no-judge", "judge-sessions-off"])
def test_without_a_session_judge_nothing_is_called(tmp_path, judge_server: JudgeServer, server_config: JudgeConfig,
                                                   sender, judge_on: bool, judge_sessions: bool) -> None:
    with processor(tmp_path, server_config if judge_on else None, judge_sessions=judge_sessions) as server:
        assert (server.judge is not None) == judge_on
        turn = sender(server)
        [turn("conv-plain", q) for q in ("a", "b", "a")]
        tracker = tracker_of(server)
        row = wait_for(lambda: (r := tracker.store.get("conv-plain")) is not None and r.completed_at is not None and r)
        time.sleep(0.5)
        assert judge_server.requests == []
        assert [f.source for f in row.findings] == ["rules"]
        assert metric(server, "mast_judge_requests_total") == 0
