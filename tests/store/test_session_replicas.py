"""Sessions across three replicas sharing one real PostgreSQL store: the gateway routes by trace
id, so one conversation's turns reach different replicas, and still the session gets one
diagnosis over all its turns, seen alike from every replica, counted once per (session, mode).

Turns are sent by the OTel SDK's OTLP exporter through a router that picks a replica by trace
id (as the Collector's ``loadbalancing`` exporter does). The cross-turn rule is test-local
(injected, as the run tests inject theirs): these tests check the service around it."""

from __future__ import annotations

from contextlib import ExitStack
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.service.conversation_support import emit_turn, repeated_lookup
from tests.service.support import make_config, provider_for, running, wait_for
from tests.store.test_replicas import Router

REPLICAS = 3


def _metric(url: str, name: str, **labels) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for f in text_string_to_metric_families(httpx.get(f"{url}/metrics").text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def _replicas(stack: ExitStack, tmp_path, pg_url: str) -> list:
    servers = []
    for i in range(REPLICAS):
        config = make_config(tmp_path / f"r{i}", store={"url": pg_url}, wal={"enabled": False},
                             sessions={"quiet_seconds": 600})
        server = stack.enter_context(running(config))
        server.sessions.diagnose = repeated_lookup
        servers.append(server)
    return servers


def test_turns_routed_to_three_replicas_make_one_session_diagnosis(tmp_path, pg_url):
    with ExitStack() as stack:
        servers = _replicas(stack, tmp_path, pg_url)
        router = Router([s.http_url for s in servers])
        stack.callback(router.close)
        provider = provider_for(OTLPSpanExporter(endpoint=router.url), service_name="support-bot")
        sent: list[str] = []
        # turns until every replica has received at least one (routing is by trace id hash)
        while len(sent) < 4 or len({router.replica_of(t) for t in sent}) < REPLICAS:
            assert len(sent) < 40
            # the third turn repeats the first turn's lookup: a cross-turn FM-1.3 on the third turn
            sent.append(emit_turn(provider, "conv-shared", tool_args="q0" if len(sent) == 2 else f"q{len(sent)}"))

        def everywhere():
            for s in servers:
                s.sessions.flush(5)
            answers = [httpx.get(f"{s.http_url}/v1/sessions/conv-shared").json() for s in servers]
            return answers if all(a.get("turn_count") == len(sent) for a in answers) else None

        answers = wait_for(everywhere, timeout=60, interval=0.2)
        for answer in answers:  # one diagnosis, whatever replica is asked
            assert [t["trace_id"] for t in answer["turns"]] == sent
            assert answer["modes"] == ["FM-1.3"]
            (finding,) = answer["findings"]
            assert finding["turn_trace_id"] == sent[2]
            assert [e["trace_id"] for e in finding["evidence"]] == [sent[0], sent[2]]
            assert answer == answers[0]
        assert answers[0]["revision"] >= 1
        assert all(httpx.get(f"{s.http_url}/v1/sessions").json()["total"] == 1 for s in servers)
        # counted once across the replicas, whichever received which turn
        assert sum(_metric(s.http_url, "mast_sessions_total") for s in servers) == 1
        assert sum(_metric(s.http_url, "mast_session_failure_mode_total", mode="FM-1.3") for s in servers) == 1
        # every replica's runs list finds the session's runs
        for s in servers:
            runs = httpx.get(f"{s.http_url}/v1/diagnoses", params={"session": "conv-shared", "limit": 100}).json()
            assert {d["trace_id"] for d in runs["items"]} == set(sent)


def test_the_real_session_detection_finds_a_lookup_redone_each_turn_across_replicas(tmp_path, pg_url):
    with ExitStack() as stack:
        servers = [stack.enter_context(running(make_config(tmp_path / f"r{i}", store={"url": pg_url}, wal={"enabled": False})))
                   for i in range(REPLICAS)]  # the real diagnose_session
        router = Router([s.http_url for s in servers])
        stack.callback(router.close)
        provider = provider_for(OTLPSpanExporter(endpoint=router.url), service_name="support-bot")
        # the same lookup with the same result, turn after turn: FM-1.3 from the third turn on
        sent = [emit_turn(provider, "conv-redo", tool_args="same-order-id", result="same-status") for _ in range(4)]

        def diagnosed():
            for s in servers:
                s.sessions.flush(5)
            answer = httpx.get(f"{servers[0].http_url}/v1/sessions/conv-redo").json()
            return answer if answer.get("turn_count") == len(sent) and answer["modes"] else None

        answer = wait_for(diagnosed, timeout=60, interval=0.2)
        assert "FM-1.3" in answer["modes"]
        finding = next(f for f in answer["findings"] if f["mode"] == "FM-1.3")
        assert finding["turn_trace_id"] in sent[1:] and {e["trace_id"] for e in finding["evidence"]} <= set(sent)
        assert all(a == answer for a in (httpx.get(f"{s.http_url}/v1/sessions/conv-redo").json() for s in servers))
        assert sum(_metric(s.http_url, "mast_session_failure_mode_total", mode="FM-1.3") for s in servers) == 1
