"""Sessions in the pipeline: diagnosed runs that carry a conversation id grouped into sessions,
revised as turns arrive, completed after a quiet period, bounded per session and in total.

Turns are sent by the OTel SDK's OTLP exporter to a real processor; the session-level detection
itself belongs to ``processors/conversations`` (these tests check the grouping around it)."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from mast_otel.processors.service.outputs.conversations import SessionTracker
from tests.service.conversation_support import emit_turn, repeated_lookup
from tests.service.support import make_config, metric, provider_for, running, wait_for


def _tracker(server) -> SessionTracker:
    return next(e for e in server.exporters if isinstance(e, SessionTracker))


def _sender(server):
    return provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"), service_name="support-bot")


def _grouped(server, tracker: SessionTracker, session_id: str, turns: int):
    def done():
        tracker.flush(5)
        row = tracker.store.get(session_id)
        return row if row is not None and row.turn_count + row.dropped_turns >= turns else None
    return wait_for(done, timeout=30)


def test_turns_of_one_conversation_make_one_session_revised_per_turn(tmp_path):
    config = make_config(tmp_path, sessions={"quiet_seconds": 600})
    with running(config) as server:
        provider = _sender(server)
        tracker = _tracker(server)
        sent = []
        for i in range(3):
            sent.append(emit_turn(provider, "conv-1", tool_args=f"q{i}"))
            row = _grouped(server, tracker, "conv-1", i + 1)
            assert row.revision == i + 1  # diagnosed again as each turn arrived
        alone = emit_turn(provider, None)
        wait_for(lambda: server.reader.get(alone) is not None, timeout=30)
        tracker.flush(5)
        assert [t for t, _ in tracker.store.turn_ids("conv-1")] == sent  # in start order
        assert alone not in tracker.store.trace_ids("conv-1")
        assert tracker.store.count() == 1
        row = tracker.store.get("conv-1")
        assert row.service_name == "support-bot" and row.completed_at is None and row.dropped_turns == 0
        assert tracker.open_sessions == ["conv-1"]
        assert metric(server, "mast_sessions_total", service_name="support-bot") == 1  # once per session
        assert metric(server, "mast_sessions_open") == 1
        assert "sessions_open" in server.memory.by_holder()


def test_a_session_completes_after_the_quiet_period_and_opens_again_with_a_later_turn(tmp_path):
    config = make_config(tmp_path, sessions={"quiet_seconds": 0.5})
    with running(config) as server:
        provider = _sender(server)
        tracker = _tracker(server)
        emit_turn(provider, "conv-q")
        _grouped(server, tracker, "conv-q", 1)
        row = wait_for(lambda: (r := tracker.store.get("conv-q")) is not None and r.completed_at is not None and r, timeout=30)
        assert tracker.open_sessions == []
        emit_turn(provider, "conv-q", tool_args="later")
        row = _grouped(server, tracker, "conv-q", 2)
        assert row.completed_at is None and row.revision == 2
        assert metric(server, "mast_sessions_total") == 1  # the same session, counted once


def test_a_session_that_never_ends_keeps_its_latest_turns_and_says_how_many_went(tmp_path):
    config = make_config(tmp_path, sessions={"quiet_seconds": 600, "max_turns": 2})
    with running(config) as server:
        provider = _sender(server)
        tracker = _tracker(server)
        sent = [emit_turn(provider, "conv-long", tool_args=f"q{i}") for i in range(4)]
        row = _grouped(server, tracker, "conv-long", 4)
        assert row.turn_count == 2 and row.dropped_turns == 2
        assert tracker.store.trace_ids("conv-long") == sent[2:]
        assert metric(server, "mast_session_turns_dropped_total", reason="max_turns") == 2


def test_open_sessions_are_bounded_the_quietest_completed_early(tmp_path):
    config = make_config(tmp_path, sessions={"quiet_seconds": 600, "max_open_sessions": 2})
    with running(config) as server:
        provider = _sender(server)
        tracker = _tracker(server)
        for name in ("a", "b", "c"):
            emit_turn(provider, f"conv-{name}")
            _grouped(server, tracker, f"conv-{name}", 1)
        assert tracker.open_sessions == ["conv-b", "conv-c"]
        assert tracker.store.get("conv-a").completed_at is not None
        assert tracker.store.get("conv-c").completed_at is None


def test_sessions_off_groups_nothing(tmp_path):
    config = make_config(tmp_path, sessions={"enabled": False})
    with running(config) as server:
        assert not any(isinstance(e, SessionTracker) for e in server.exporters)
        trace_id = emit_turn(_sender(server), "conv-off")
        wait_for(lambda: server.reader.get(trace_id) is not None, timeout=30)
        assert metric(server, "mast_sessions_total") == 0


def test_with_the_store_off_sessions_are_kept_in_memory_and_charged(tmp_path):
    config = make_config(tmp_path, store={"enabled": False}, wal={"enabled": False})
    with running(config) as server:
        tracker = _tracker(server)
        emit_turn(_sender(server), "conv-mem")
        row = _grouped(server, tracker, "conv-mem", 1)
        assert row.turn_count == 1
        assert server.memory.by_holder()["sessions_store"] > 0


def test_the_sessions_api_lists_sessions_and_shows_turns_in_order_with_their_runs(tmp_path):
    import httpx

    config = make_config(tmp_path, sessions={"quiet_seconds": 600})
    with running(config) as server:
        provider = _sender(server)
        tracker = _tracker(server)
        # the second turn repeats a lookup three times: the run's own FM-1.3 (the test rules)
        first = emit_turn(provider, "conv-api")
        second = emit_turn(provider, "conv-api", repeats=3)
        other = emit_turn(provider, "conv-other")
        alone = emit_turn(provider, None)
        _grouped(server, tracker, "conv-api", 2)
        _grouped(server, tracker, "conv-other", 1)
        wait_for(lambda: server.reader.get(alone) is not None, timeout=30)
        api = f"{server.http_url}/v1"

        page = httpx.get(f"{api}/sessions").json()
        assert page["total"] == 2 and {s["session_id"] for s in page["items"]} == {"conv-api", "conv-other"}
        assert httpx.get(f"{api}/sessions", params={"limit": 1}).json()["items"].__len__() == 1
        assert httpx.get(f"{api}/sessions", params={"service": "nobody"}).json()["total"] == 0
        assert httpx.get(f"{api}/sessions", params={"with_modes": "false"}).json()["total"] == 2  # no cross-turn mode yet

        detail = httpx.get(f"{api}/sessions/conv-api").json()
        assert [t["trace_id"] for t in detail["turns"]] == [first, second]
        assert detail["status"] == "open" and detail["turn_count"] == 2
        assert 1 <= detail["revision"] <= 2  # turns that arrive together are diagnosed together
        assert detail["turns"][0]["modes"] == [] and detail["turns"][1]["modes"] == ["FM-1.3"]
        assert detail["turns"][1]["diagnosis_url"] == f"/v1/diagnoses/{second}"
        assert detail["findings"] == [] and detail["note"] is None

        runs = httpx.get(f"{api}/diagnoses", params={"session": "conv-api"}).json()
        assert {d["trace_id"] for d in runs["items"]} == {first, second} and runs["total"] == 2
        assert httpx.get(f"{api}/diagnoses", params={"session": "conv-api", "mode": "FM-1.3"}).json()["total"] == 1
        assert httpx.get(f"{api}/diagnoses", params={"session": "none-such"}).json()["total"] == 0
        assert other not in {d["trace_id"] for d in runs["items"]}

        assert httpx.get(f"{api}/sessions/none-such").status_code == 404
        refused = httpx.get(f"{api}/sessions", params={"session_id": "conv-api"})
        assert refused.status_code == 400 and "session_id" in refused.json()["detail"]
        assert httpx.get(f"{api}/sessions", params={"limit": 100_000}).status_code == 422
        assert httpx.get(f"{api}/sessions", params={"mode": "FM-9.9"}).status_code == 422


def test_a_cross_turn_mode_is_kept_with_its_evidence_and_counted_once_per_session(tmp_path):
    import httpx

    config = make_config(tmp_path, sessions={"quiet_seconds": 600})
    with running(config) as server:
        tracker = _tracker(server)
        tracker.diagnose = repeated_lookup  # a test-local cross-turn rule
        provider = _sender(server)
        sent = []
        for args in ("q0", "q1", "q0", "q0"):
            sent.append(emit_turn(provider, "conv-rep", tool_args=args))
            _grouped(server, tracker, "conv-rep", len(sent))
        emit_turn(provider, "conv-clean")
        _grouped(server, tracker, "conv-clean", 1)
        detail = httpx.get(f"{server.http_url}/v1/sessions/conv-rep").json()
        assert detail["revision"] == 4 and detail["modes"] == ["FM-1.3"]
        (finding,) = detail["findings"]
        assert finding["turn_trace_id"] == sent[2] and finding["name"] and finding["severity"]
        assert [e["trace_id"] for e in finding["evidence"]] == [sent[0], sent[2]]
        assert metric(server, "mast_session_failure_mode_total", mode="FM-1.3", service_name="support-bot") == 1
        assert metric(server, "mast_sessions_total") == 2
        with_mode = httpx.get(f"{server.http_url}/v1/sessions", params={"with_modes": "true"}).json()
        assert [s["session_id"] for s in with_mode["items"]] == ["conv-rep"]
        assert httpx.get(f"{server.http_url}/v1/sessions", params={"mode": "FM-1.3"}).json()["total"] == 1
        assert httpx.get(f"{server.http_url}/v1/sessions", params={"mode": "FM-1.4"}).json()["total"] == 0


def test_the_web_view_shows_sessions_their_turns_and_findings(tmp_path):
    import re

    import httpx

    config = make_config(tmp_path, sessions={"quiet_seconds": 600})
    with running(config) as server:
        tracker = _tracker(server)
        tracker.diagnose = repeated_lookup
        provider = _sender(server)
        sent = []
        for args in ("q0", "q1", "q0"):
            sent.append(emit_turn(provider, "conv-web", tool_args=args))
            _grouped(server, tracker, "conv-web", len(sent))
        emit_turn(provider, "conv-calm")
        _grouped(server, tracker, "conv-calm", 1)
        other = emit_turn(provider, None)
        wait_for(lambda: server.reader.get(other) is not None, timeout=30)
        html = {"Accept": "text/html"}
        web = server.http_url

        listing = httpx.get(f"{web}/sessions", headers=html)
        assert listing.status_code == 200
        assert re.findall(r'data-session-id="([^"]+)"', listing.text) == ["conv-calm", "conv-web"]
        only = httpx.get(f"{web}/sessions", params={"with_modes": "true"}, headers=html).text
        assert re.findall(r'data-session-id="([^"]+)"', only) == ["conv-web"]
        assert httpx.get(f"{web}/sessions", params={"mode": "FM-9"}, headers=html).status_code == 400

        page = httpx.get(f"{web}/sessions/conv-web", headers=html)
        assert page.status_code == 200
        assert re.findall(r'<tr data-trace-id="([0-9a-f]{32})"', page.text) == sent  # turns in order
        for trace_id in sent:
            assert f'href="/runs/{trace_id}"' in page.text
        assert 'data-mode="FM-1.3"' in page.text and f"/runs/{sent[0]}#span-" in page.text
        # the evidence reads as turns and steps (number, kind and name), not as trace and span ids
        evidence = re.findall(r'<a data-span-id="[0-9a-f]{16}" href="/runs/[0-9a-f]{32}#span-[0-9a-f]{16}"[^>]*>([^<]+)</a>',
                              page.text)
        assert evidence and all(re.fullmatch(r"turn \d+, (#\d+ )?(chat|tool|agent) .+", e) for e in evidence), evidence
        assert 'href="/modes#FM-1.3"' in page.text
        assert httpx.get(f"{web}/sessions/none-such", headers=html).status_code == 404

        runs = httpx.get(f"{web}/runs", params={"session": "conv-web"}, headers=html).text
        assert sorted(re.findall(r'<tr data-trace-id="([0-9a-f]{32})"', runs)) == sorted(sent)
        overview = httpx.get(f"{web}/", headers=html).text
        assert re.search(r'id="sessions-summary">1 of 2 sessions carry', overview)


def test_turns_let_go_of_in_memory_are_read_back_from_the_store(tmp_path):
    for held in (0, 64 * 1024 * 1024):
        config = make_config(tmp_path / str(held), sessions={"quiet_seconds": 600, "max_held_bytes": held})
        with running(config) as server:
            tracker = _tracker(server)
            tracker.diagnose = repeated_lookup
            provider = _sender(server)
            sent = [emit_turn(provider, "conv-held", tool_args=a) for a in ("q0", "q1", "q0")]
            row = _grouped(server, tracker, "conv-held", 3)
            assert [f.mode for f in row.findings] == ["FM-1.3"] and row.findings[0].turn_trace_id == sent[2]
            charged = server.memory.by_holder()["sessions_open"]
            assert (charged > 1000) == (held > 0)  # the parsed turns are charged while held


def test_a_session_whose_diagnosis_fails_costs_the_others_nothing(tmp_path):
    config = make_config(tmp_path, sessions={"quiet_seconds": 600})
    with running(config) as server:
        tracker = _tracker(server)

        def failing_for_one(turns, detection):
            if turns[0].session_id == "conv-bad":
                raise RuntimeError("a detector bug")
            return repeated_lookup(turns, detection)

        tracker.diagnose = failing_for_one
        provider = _sender(server)
        bad = emit_turn(provider, "conv-bad")  # sent together: usually one batch for the worker
        good = [emit_turn(provider, "conv-good", tool_args="q0") for _ in range(2)]
        wait_for(lambda: server.reader.get(good[-1]) is not None and server.reader.get(bad) is not None, timeout=30)
        row = _grouped(server, tracker, "conv-good", 2)
        assert [f.mode for f in row.findings] == ["FM-1.3"]
        assert metric(server, "mast_finish_errors_total", stage="sessions") >= 1
        assert tracker.store.get("conv-bad").revision == 0  # kept as a turn, never diagnosed


def test_a_session_id_no_store_can_key_leaves_the_run_alone(tmp_path):
    config = make_config(tmp_path, sessions={"quiet_seconds": 600})
    with running(config) as server:
        tracker = _tracker(server)
        provider = _sender(server)
        long_id = emit_turn(provider, "x" * 5000)
        wait_for(lambda: server.reader.get(long_id) is not None, timeout=30)
        emit_turn(provider, "conv-fine")
        _grouped(server, tracker, "conv-fine", 1)
        assert tracker.store.count() == 1  # only the usable one
        assert metric(server, "mast_session_turns_dropped_total", reason="unusable_id") == 1
