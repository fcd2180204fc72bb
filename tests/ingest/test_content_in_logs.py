"""A loop of six identical tool calls is found wherever the instrumentation put the content: on the
model calls' attributes, in their span events, or in OTLP log records given to ``mast-otel analyze``
beside the traces; per-message events (openai-v2, vertexai legacy conventions) or one
``gen_ai.client.inference.operation.details`` event per call (util-genai, Google ADK)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mast_otel.processors.ingest.files import LoadReport, load_runs
from mast_otel.processors.ingest.log_records import decode_logs_document, event_name, record_event
from mast_otel.processors.ingest.normalize.events import OPERATION_DETAILS
from mast_otel.processors.offline.analyze import analyze

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
AGENT = "00f067aa0ba902b7"
CALLS = 6
ARGUMENTS = '{"pod": "checkout-7d9f", "namespace": "shop"}'
RESULT = "refused: quota exceeded"
GENAI = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.system": "openai"}


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": kvs(value)}}
    return {"stringValue": str(value)}


def kvs(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items()]


def chat_id(i: int) -> str:
    return f"{0xc0 + i:016x}"


def history(i: int) -> list[tuple[str, str]]:
    """The tool calls (id, result) the model has seen before its call ``i``."""
    return [(f"call_{j}", RESULT) for j in range(i)]


def tool_call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "restart_pod", "arguments": ARGUMENTS}}


def chat_messages(i: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Call ``i``'s input and output messages, OpenAI chat format: the last call answers in words."""
    inputs: list[dict[str, Any]] = [{"role": "user", "content": "restart the checkout pod"}]
    for call_id, result in history(i):
        inputs += [{"role": "assistant", "tool_calls": [tool_call(call_id)]}, {"role": "tool", "tool_call_id": call_id, "content": result}]
    asked = [{"role": "assistant", "tool_calls": [tool_call(f"call_{i}")]}] if i < CALLS else [{"role": "assistant", "content": "I could not restart it."}]
    return inputs, asked


def parts_messages(i: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same, in the GenAI parts format (util-genai, ADK)."""
    def call_part(call_id: str) -> dict[str, Any]:
        return {"type": "tool_call", "id": call_id, "name": "restart_pod", "arguments": json.loads(ARGUMENTS)}

    inputs: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "restart the checkout pod"}]}]
    for call_id, result in history(i):
        inputs += [{"role": "assistant", "parts": [call_part(call_id)]},
                   {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]}]
    asked = [{"role": "assistant", "parts": [call_part(f"call_{i}")] if i < CALLS else
              [{"type": "text", "content": "I could not restart it."}], "finish_reason": "tool_call" if i < CALLS else "stop"}]
    return inputs, asked


def message_events(i: int) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Call ``i`` as openai-v2's per-message events: (name, attributes, body)."""
    inputs, outputs = chat_messages(i)
    system = {"gen_ai.system": "openai"}
    found = []
    for m in inputs:
        if m["role"] == "tool":
            found.append(("gen_ai.tool.message", system, {"content": m["content"], "id": m["tool_call_id"]}))
        elif "tool_calls" in m:
            found.append(("gen_ai.assistant.message", system, {"tool_calls": m["tool_calls"]}))
        else:
            found.append((f"gen_ai.{m['role']}.message", system, {"content": m["content"]}))
    message = {k: v for k, v in outputs[0].items()}
    found.append(("gen_ai.choice", system, {"index": 0, "finish_reason": "tool_calls" if i < CALLS else "stop", "message": message}))
    return found


def details_event(i: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    inputs, outputs = parts_messages(i)
    return (OPERATION_DETAILS, {**GENAI, "gen_ai.input.messages": inputs, "gen_ai.output.messages": outputs,
                                "gen_ai.tool.definitions": [{"type": "function", "name": "restart_pod"}]}, {})


def events_of(i: int, shape: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return message_events(i) if shape == "messages" else [details_event(i)]


def span(span_id: str, parent: str | None, name: str, start: int, attrs: dict[str, Any], events: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent or "", "name": name,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000),
            "endTimeUnixNano": str(1_700_000_000_000_000_000 + (start + 5) * 1_000_000),
            "attributes": kvs(attrs), "events": list(events), "status": {}}


def traces(where: str, shape: str = "messages") -> dict[str, Any]:
    """The run, with its content on the model calls (``spans``), in their span events (``events``),
    or nowhere on the spans (``logs``, ``off``)."""
    spans = [span(AGENT, None, "invoke_agent sre", 0, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sre"})]
    for i in range(CALLS + 1):
        attrs: dict[str, Any] = {**GENAI, "gen_ai.response.finish_reasons": ["tool_calls" if i < CALLS else "stop"]}  # content or not
        events: list[dict[str, Any]] = []
        if where == "spans":
            inputs, outputs = chat_messages(i)
            attrs.update({"gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs)})
        elif where == "events":
            for name, event_attrs, body in events_of(i, shape):
                if shape == "messages":  # span events cannot hold maps: the SDK's span-event bridges write JSON text
                    event_attrs = {**event_attrs, **{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in body.items()}}
                events.append({"name": name, "timeUnixNano": "1", "attributes": kvs(event_attrs)})
        spans.append(span(chat_id(i), AGENT, "chat gpt-4o-mini", 10 + 20 * i, attrs, events))
        if i < CALLS:
            spans.append(span(f"{0xa0 + i:016x}", AGENT, "execute_tool restart_pod", 20 + 20 * i, {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "restart_pod", "gen_ai.tool.call.id": f"call_{i}"}))
    spans[0]["endTimeUnixNano"] = str(1_700_000_000_000_000_000 + 1000 * 1_000_000)
    return {"resourceSpans": [{"resource": {"attributes": kvs({"service.name": "sre-agent"})}, "scopeSpans": [{"spans": spans}]}]}


def logs(shape: str) -> dict[str, Any]:
    """The run's content as OTLP/JSON log records, each naming its model call's span; plus a record
    that is not a GenAI event and one naming a span the traces do not hold."""
    records = []
    for i in range(CALLS + 1):
        for name, attrs, body in events_of(i, shape):
            records.append({"timeUnixNano": "1", "traceId": TRACE, "spanId": chat_id(i), "eventName": name,
                            "attributes": kvs(attrs), **({"body": any_value(body)} if body else {})})
    records.append({"traceId": TRACE, "spanId": chat_id(0), "body": {"stringValue": "GET /healthz 200"}, "attributes": []})
    records.append({"traceId": TRACE, "spanId": "ffffffffffffffff", "eventName": "gen_ai.user.message", "body": any_value({"content": "hi"})})
    return {"resourceLogs": [{"resource": {"attributes": kvs({"service.name": "sre-agent"})}, "scopeLogs": [{"logRecords": records}]}]}


def write(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def modes(summary: dict[str, Any]) -> list[str]:
    (run,) = summary["runs"]
    return run["modes"]


def findings(summary: dict[str, Any]) -> list[tuple[str, str]]:
    (run,) = summary["runs"]
    return [(f["mode"], f["explanation"]) for f in run["findings"]]


def with_content_on_spans(tmp_path: Path) -> list[tuple[str, str]]:
    return findings(analyze([write(tmp_path, "spans.json", traces("spans"))]))


def test_the_loop_is_found_with_content_on_the_spans_and_missed_without_it(tmp_path):
    assert "FM-1.3" in modes(analyze([write(tmp_path, "spans.json", traces("spans"))]))
    assert "FM-1.3" not in modes(analyze([write(tmp_path, "off.json", traces("off"))]))  # the test can fail


@pytest.mark.parametrize("shape", ["messages", "details"])
def test_the_loop_is_found_with_content_in_span_events(tmp_path, shape):
    summary = analyze([write(tmp_path, "events.json", traces("events", shape))])
    assert "FM-1.3" in modes(summary) and findings(summary) == with_content_on_spans(tmp_path)


@pytest.mark.parametrize("shape", ["messages", "details"])
def test_the_loop_is_found_with_content_in_a_logs_file_beside_the_traces(tmp_path, shape):
    logs_file, traces_file = write(tmp_path, "run.logs.json", logs(shape)), write(tmp_path, "run.json", traces("logs"))
    summary = analyze([logs_file, traces_file])  # the logs first: joined once every file is read
    assert "FM-1.3" in modes(summary) and findings(summary) == with_content_on_spans(tmp_path)
    counts = summary["input"]
    read = sum(len(events_of(i, shape)) for i in range(CALLS + 1))
    assert (counts["log_records"], counts["log_records_joined"], counts["log_records_without_span"],
            counts["log_records_ignored"], counts["spans_given_content"]) == (read + 1, read, 1, 1, CALLS + 1)
    assert f"{read} of {read + 1} GenAI log records joined" in counts["summary"]


def test_spans_from_logs_equal_spans_with_the_content_on_them(tmp_path):
    """Content joined from log records gives the model calls the fields content on the spans gives them."""
    def calls(paths: list[str]) -> dict[str, dict[str, Any]]:
        (run,) = load_runs(paths)
        return {s.span_id: {k: v for k, v in vars_of(s).items() if k != "content_source"} for s in run.spans if s.role.value == "llm"}

    on_spans = calls([write(tmp_path, "spans.json", traces("spans"))])
    from_logs = calls([write(tmp_path, "run.json", traces("logs")), write(tmp_path, "run.logs.json", logs("messages"))])
    assert from_logs == on_spans


def vars_of(span: Any) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(span, f.name) for f in dataclasses.fields(span)}


def test_a_log_record_reads_as_an_event():
    """Name from ``event_name``, else the ``event.name`` attribute; a map body's fields beside the
    attributes (which win); any other body as ``content``."""
    assert record_event("gen_ai.choice", {"gen_ai.system": "openai", "index": 9}, {"index": 0, "finish_reason": "stop"}) == (
        "gen_ai.choice", {"gen_ai.system": "openai", "index": 9, "finish_reason": "stop"})
    attrs = {"event.name": "gen_ai.user.message"}
    assert record_event(event_name("", attrs), attrs, "hello") == (
        "gen_ai.user.message", {"event.name": "gen_ai.user.message", "content": "hello"})
    batch = decode_logs_document(logs("messages"))
    assert batch.not_genai == 1 and batch.no_span_id == 0 and batch.events
    assert batch.events[0].trace_id == TRACE and batch.events[0].span_id == chat_id(0)


def test_records_alone_are_no_run(tmp_path):
    report = LoadReport()
    assert list(load_runs([write(tmp_path, "run.logs.json", logs("details"))], report=report)) == []
    assert report.log_records_without_span == report.log_records > 0


def test_a_corpus_recording_reads_its_logs_file_beside_it(tmp_path):
    from mast_otel.processors.ingest.corpus import load_corpus

    (tmp_path / "labels.json").write_text(json.dumps({"scenarios": {"loop": {"expected": ["FM-1.3"]}}}))
    (tmp_path / "stub").mkdir()
    write(tmp_path / "stub", "loop.json", traces("logs"))
    write(tmp_path / "stub", "loop.logs.json", logs("details"))
    report = LoadReport()
    (run,) = load_corpus(tmp_path, report)
    assert run.labels["scenario"] == "loop" and report.spans_given_content == CALLS + 1
    assert any(s.content_source == "logs" for s in run.spans)
