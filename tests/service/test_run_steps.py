"""Each run's compact step list is stored with its diagnosis: API ``?include=steps`` and the run
page's timeline work after the spans are released and after a restart, and never hold content."""

from __future__ import annotations

import json
import re
import sqlite3

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from mast_otel.instrumentation import agent_run, configure, tool_call
from mast_otel.processors.model import Diagnosis, GuardIntervention, Role, Run, RunHints, Span
from mast_otel.processors.service.store.run_steps import FIELD_CHARS, RunStep, as_steps, capped_steps_json, parse_steps, step_rows, steps_json
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from tests.service.support import emit_run, make_config, provider_for, running, wait_for

LOOP = (("kubectl_logs", "same"),) * 3 + (("check_rollout", "x"),)
SECRET = "postgres://app:hunter2@db"


def get(server, path: str, **params) -> httpx.Response:
    return httpx.get(f"{server.http_url}{path}", params=params)


def timeline_ids(html: str) -> list[str]:
    return re.findall(r'class="tl-row[^"]*" id="span-[0-9a-f]+" data-span-id="([0-9a-f]+)"', html)


def flagged_ids(html: str) -> set[str]:
    return set(re.findall(r'class="tl-row[^"]* flagged[^"]*" id="span-[0-9a-f]+" data-span-id="([0-9a-f]+)"', html))


def test_steps_are_served_and_drawn_after_a_restart(tmp_path) -> None:
    config = make_config(tmp_path)
    with running(config) as server:
        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider, tools=LOOP, claimed_success=True, verification=False)
        provider.shutdown()
        wait_for(lambda: server.store.get(trace_id))
        held = get(server, f"/v1/diagnoses/{trace_id}", include="steps").json()
        assert get(server, f"/v1/diagnoses/{trace_id}").json()["steps"] is None  # only when asked for
        assert get(server, f"/v1/diagnoses/{trace_id}", include="spans").status_code == 422

    steps = held["steps"]
    assert [s["span_id"] for s in steps] == [ids["agent"]] + [ids[f"{kind}-{i}"] for i in range(4) for kind in ("chat", "tool")]
    agent, chat, tool = steps[0], steps[1], steps[2]
    assert (agent["role"], agent["agent"], agent["budget"], agent["parent_span_id"]) == ("agent", "triage", 20, None)
    assert (agent["termination_reason"], agent["error"]) == ("final_answer", None)
    assert (chat["role"], chat["model"], chat["step_index"], chat["parent_span_id"]) == ("llm", "gpt-4o", 0, ids["agent"])
    assert (tool["role"], tool["tool_name"], tool["tool_kind"], tool["step_index"]) == ("tool", "kubectl_logs", "read", 0)
    assert steps[-1]["verification_passed"] is False and steps[-1]["tool_kind"] == "verify"
    assert all(s["start_ns"] <= s["end_ns"] for s in steps)

    # a new process on the same store, without the log that would give it the run's spans back
    with running(make_config(tmp_path, wal={"enabled": False})) as server:
        assert server.ingest.get_run(trace_id) is None
        assert get(server, f"/v1/diagnoses/{trace_id}", include="steps").json()["steps"] == steps
        d = get(server, f"/v1/diagnoses/{trace_id}").json()
        page = get(server, f"/runs/{trace_id}")
    assert page.status_code == 200
    html = page.text
    assert timeline_ids(html) == [s["span_id"] for s in steps]
    evidence = {sid for m in d["modes"] for sid in m["evidence_span_ids"]}
    assert evidence and flagged_ids(html) == evidence  # findings sit on their evidence rows
    assert "No step list was kept" not in html


def test_step_lists_never_hold_content_and_excerpts_need_the_held_run(tmp_path) -> None:
    config = make_config(tmp_path)
    with running(config) as server:
        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        configure(tracer_provider=provider, capture_content=True)
        try:
            with agent_run("triage", max_steps=5, task=f"why does {SECRET} refuse?") as run:
                with tool_call("kubectl_logs", kind="read", arguments={"dsn": SECRET}) as call:
                    call.set_result(f"connection to {SECRET} refused")
                trace_id = format(run.span.get_span_context().trace_id, "032x")
        finally:
            configure(tracer_provider=None, capture_content=None)
            provider.shutdown()
        wait_for(lambda: server.store.get(trace_id))
        held = get(server, f"/runs/{trace_id}").text  # an excerpt while the spans are held, redacted
        assert "postgres://app:[REDACTED:password]@db" in held and SECRET not in held
        served = get(server, f"/v1/diagnoses/{trace_id}", include="steps").json()["steps"]
        assert [s["agent"] for s in served] == ["triage", "triage"]  # the tool step names its agent
    assert SECRET not in str(served)
    with sqlite3.connect(config.store.path) as db:
        (stored,) = db.execute("SELECT steps FROM run_steps WHERE trace_id = ?", (trace_id,)).fetchone()
    assert "hunter2" not in stored and "kubectl_logs" in stored
    with running(config) as server:
        html = get(server, f"/runs/{trace_id}").text
    assert SECRET not in html and len(timeline_ids(html)) == 2


def _diagnosis(trace_id: str, diagnosed_at: float) -> Diagnosis:
    return Diagnosis(trace_id=trace_id, findings=[], fatal=False, diagnosed_at=diagnosed_at)


def test_store_keeps_steps_across_saves_without_them_and_prunes_them(tmp_path) -> None:
    store = DiagnosisStore(tmp_path / "d.sqlite", max_rows=1)
    steps = [RunStep("a" * 16, None, "agent", "invoke_agent x", 1, 9, agent="x", budget=3, constraints=("read_only",)),
             RunStep("b" * 16, "a" * 16, "llm", "chat m", 2, 3, agent="x", step_index=0, requested_tools=("get",))]
    store.save_many([(_diagnosis("1" * 32, 1.0), None)], step_texts={"1" * 32: steps_json(steps)})
    assert store.steps("1" * 32) == steps
    store.save(_diagnosis("1" * 32, 2.0))  # e.g. judge findings merged: the step list stays
    assert store.steps("1" * 32) == steps
    assert store.steps("2" * 32) is None
    for i in range(1000):  # past max_rows: the oldest diagnoses go, with their step lists
        store.save_many([(_diagnosis(f"{i + 2:032x}", 10.0 + i), None)], step_texts={f"{i + 2:032x}": steps_json(steps[:1])})
    assert store.get("1" * 32) is None and store.steps("1" * 32) is None
    store.close()


def test_step_json_is_compact_and_tolerates_other_versions() -> None:
    step = RunStep("a" * 16, None, "tool", "execute_tool get", 1, 2, tool_name="get", tool_kind="read")
    text = steps_json([step, step])
    assert text.count('"tool_kind"') == 1  # field names once, then one array per step
    assert parse_steps(text) == [step, step]
    newer = ('{"fields":["span_id","role","name","start_ns","end_ns","future_field","requested_tools"],'
             '"rows":[["b","llm","chat m",1,2,7,["get"]]]}')
    assert parse_steps(newer) == [RunStep("b", None, "llm", "chat m", 1, 2, requested_tools=("get",))]
    assert parse_steps('{"fields":["span_id"],"rows":[["b"]]}') == []  # not drawable: nothing


def test_step_rows_are_plain_tuples_of_the_step_fields() -> None:
    """The rows exporters get are exact tuples (orjson writes them) holding each field in order."""
    guard = GuardIntervention("t" * 16, "loop", "enforce", "blocked", "FM-1.3")
    spans = [
        Span("c" * 32, "a" * 16, None, "invoke_agent ops", 1, 90, role=Role.AGENT, agent_name="ops",
             hints=RunHints(max_steps=4, constraints=("read_only",), termination_reason="final_answer")),
        Span("c" * 32, "o" * 16, "a" * 16, "http get", 2, 3),  # no step: not in the list
        Span("c" * 32, "l" * 16, "a" * 16, "chat m", 4, 5, role=Role.LLM, model="m", input_message_count=2,
             requested_tools=("get",), step_index=0, agent_name="ops"),
        Span("c" * 32, "t" * 16, "a" * 16, "execute_tool get", 6, 7, role=Role.TOOL, tool_name="get", tool_kind="read",
             tool_kind_source="catalog", error=True, verification_passed=False, guard_interventions=(guard,)),
    ]
    rows = step_rows(Run.from_spans("c" * 32, spans))
    assert [type(row) for row in rows] == [tuple] * 3
    assert as_steps(rows) == [
        RunStep("a" * 16, None, "agent", "invoke_agent ops", 1, 90, agent="ops", budget=4, constraints=("read_only",),
                termination_reason="final_answer"),
        RunStep("l" * 16, "a" * 16, "llm", "chat m", 4, 5, agent="ops", step_index=0, model="m", input_message_count=2,
                requested_tools=("get",)),
        RunStep("t" * 16, "a" * 16, "tool", "execute_tool get", 6, 7, tool_name="get", tool_kind="read", error="error",
                verification_passed=False, tool_kind_source="catalog",
                interventions=(("loop", "enforce", "blocked", "FM-1.3"),)),
    ]
    text = steps_json(rows)
    assert text == steps_json(as_steps(rows)) == json.dumps({"fields": RunStep._fields, "rows": rows}, separators=(",", ":"))
    assert parse_steps(text) == as_steps(rows)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=600), st.integers(min_value=0, max_value=400), st.integers(min_value=16, max_value=64),
       st.data())
def test_a_step_list_past_its_byte_cap_is_shortened_then_folded_and_says_so(steps, name_chars, kib, data):
    rows = [(f"{i:016x}", None if i == 0 else f"{0:016x}", "tool" if i else "agent", "execute_tool " + "n" * name_chars,
             i, i + 1, "a", i, None, None, ("t" * 80,) * 12, "n" * name_chars, "read", None, None, None, (), None, None, ())
            for i in range(steps)]
    keep = data.draw(st.lists(st.sampled_from([r[0] for r in rows]), max_size=5)) if rows else []
    text = capped_steps_json(rows, kib * 1024, keep)
    assert len(text.encode()) <= kib * 1024
    parsed = parse_steps(text)
    assert len(parsed) + parsed.folded == steps  # each step kept or counted
    if text != steps_json(rows):
        assert parsed.shortened and all(len(s.name) <= FIELD_CHARS + 1 for s in parsed)
        assert set(keep) <= {s.span_id for s in parsed}  # a handful of pointed-at steps always fit
    if parsed.folds:
        assert parsed[0].span_id == rows[0][0] and parsed[-1].span_id == rows[-1][0]
        positions = []
        for fold in parsed.folds:
            assert fold.left_out > 0 and 0 <= fold.after <= len(parsed)
            positions.append(fold.after)
        assert positions == sorted(set(positions))
