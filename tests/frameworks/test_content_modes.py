"""The verdict does not depend on where an instrumentation put the content.

The content-mode recordings (tests/frameworks/corpus/<id>/events and /both, beside the
framework's content-on-spans recording and its no-content one) are the same scripted runs
with the content sent as OTLP log records (``<scenario>.logs.json``) instead of, or as well
as, on the spans. Read through the offline path that joins a logs file to its spans
(``load_runs([spans, logs])``, what ``mast-otel analyze traces.json traces.logs.json`` does):

- content in log records only gets the verdict of content on spans, and both gets it too;
- with content off, the run read with its log records (instrumentations send some without
  content) gets the verdict of the spans alone, and no false alarm;
- and, so the above cannot pass vacuously, the log records really carry the content the
  spans lack: every tool call the run made is in its log records, name and arguments, under
  its own call id, while the spans of the events run hold no message, argument or result.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pytest

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.files import load_runs
from tests.frameworks.corpus_files import Recording, manifests, recordings
from tests.frameworks.harness.stub_model import Call

ALL = recordings(variants=("content", "no-content", "events", "both"))
BY_KEY = {(r.framework, r.variant, r.scenario.name): r for r in ALL}
EVENTS = [r for r in ALL if r.variant == "events"]
BOTH = [r for r in ALL if r.variant == "both"]
OFF_WITH_LOGS = [r for r in ALL if r.variant == "no-content" and r.logs]
# Span attributes that hold content (messages, tool arguments and results), in the conventions the corpus uses.
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.prompt", "gen_ai.completion")


def verdict(recording: Recording, with_logs: bool = True) -> set[str]:
    """The rule modes found on the recording's one run, its log records joined when ``with_logs``."""
    paths = [recording.path] + ([recording.logs] if with_logs and recording.logs else [])
    runs = [r for r in load_runs(paths) if r.steps]
    assert len(runs) == 1, f"{recording.id}: expected one run with steps, got {len(runs)}"
    return {f.mode for f in rule_findings(runs[0])}


def spans_recording(recording: Recording) -> Recording | None:
    return BY_KEY.get((recording.framework, "content", recording.scenario.name))


def test_every_instrumentation_that_sends_content_to_logs_is_recorded_in_its_modes():
    """util-genai openai, the openai-v2 per-message path and Google ADK: each mode it has, or the manifest says why not."""
    found = manifests()
    for framework in ("openai-v2-genai", "openai-v2-legacy", "google-adk"):
        assert framework in found, framework
        variants = {r.variant for r in ALL if r.framework == framework}
        lacking = set(found[framework].get("content_modes_lacking", {}))
        for variant, mode in (("content", "spans"), ("no-content", "off"), ("events", "events"), ("both", "both")):
            assert (variant in variants) != (mode in lacking), f"{framework}: mode {mode} neither recorded nor said lacking"
        events = [r for r in EVENTS if r.framework == framework]
        assert {"clean", "loop"} <= {r.scenario.name for r in events} and all(r.logs for r in events)


def test_every_logs_file_is_an_otlp_export_logs_request():
    """As an exporter sends it: the OTLP/JSON mapping of ``ExportLogsServiceRequest`` (ids in hex), no unknown field."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    files = [r.logs for r in ALL if r.logs]
    assert len(files) >= 20
    for path in files:
        doc = json.loads(path.read_text())
        for resource in doc["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                for record in scope["logRecords"]:
                    for key in ("traceId", "spanId"):
                        record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
        request = json_format.ParseDict(doc, ExportLogsServiceRequest())
        assert sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs) > 0, path


def test_every_log_record_names_a_span_of_its_run():
    """The join is possible: each record carries the trace and span id of a span recorded with it."""
    checked = 0
    for recording in [r for r in ALL if r.logs]:
        ids = {(s["traceId"], s["spanId"]) for s in spans(recording.path)}
        for resource in json.loads(recording.logs.read_text())["resourceLogs"]:  # type: ignore[union-attr]
            for scope in resource["scopeLogs"]:
                for record in scope["logRecords"]:
                    assert (record.get("traceId"), record.get("spanId")) in ids, recording.id
                    assert record.get("eventName", "").startswith("gen_ai."), recording.id
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("recording", EVENTS, ids=lambda r: r.id)
def test_content_in_log_records_gets_the_verdict_of_content_on_spans(recording):
    found = verdict(recording)
    scenario = recording.scenario
    assert scenario.expected <= found, f"missed {sorted(scenario.expected - found)}"
    assert found <= scenario.expected | scenario.allowed, f"false alarm {sorted(found - scenario.expected - scenario.allowed)}"
    reference = spans_recording(recording)
    if reference is not None:  # the v1.30 per-message path has no content-on-spans mode: the scenario is the reference
        assert found == verdict(reference)


def test_without_its_log_records_an_events_run_loses_what_content_finds():
    """The equality above is not vacuous: read without its log records, every events run of a scenario
    whose slip only content shows (the loop's repeated arguments) misses it."""
    loops = [r for r in EVENTS if r.scenario.name == "loop"]
    assert {r.framework for r in loops} == {"openai-v2-genai", "openai-v2-legacy", "google-adk"}
    assert {r.id: sorted(verdict(r, with_logs=False)) for r in loops} == {r.id: [] for r in loops}


@pytest.mark.parametrize("recording", BOTH, ids=lambda r: r.id)
def test_content_on_spans_and_in_log_records_gets_the_same_verdict(recording):
    reference = spans_recording(recording)
    assert reference is not None
    assert verdict(recording) == verdict(reference)


@pytest.mark.parametrize("recording", OFF_WITH_LOGS, ids=lambda r: r.id)
def test_content_off_read_with_its_log_records_gets_the_content_off_verdict(recording):
    found = verdict(recording)
    scenario = recording.scenario
    assert found == verdict(recording, with_logs=False)
    assert found <= scenario.expected | scenario.allowed, f"false alarm {sorted(found - scenario.expected - scenario.allowed)}"


@pytest.mark.parametrize("recording", EVENTS, ids=lambda r: r.id)
def test_the_log_records_carry_the_tool_calls_the_spans_lack(recording):
    """Every tool call the run made (the scenario's calls, as many as the manifest says were run) is in the
    log records as name and arguments under a call id of its own; the spans hold no content attribute."""
    made = json.loads((recording.path.parent / "manifest.json").read_text())
    ran = made["runs"][recording.scenario.name]["tool_calls"]
    script = [a for a in recording.scenario.actions if isinstance(a, Call)][:len(ran)]
    assert [c.tool for c in script] == ran
    expected = Counter((c.tool, json.dumps(c.arguments, sort_keys=True)) for c in script)
    assert recording.logs is not None
    in_logs = Counter(key for key in dict(tool_calls(records(recording.logs))).values())
    assert in_logs & expected == expected, f"missing from the log records: {expected - in_logs}"
    on_spans = {a["key"] for s in spans(recording.path) for a in s.get("attributes", []) if a["key"] in CONTENT_KEYS}
    assert on_spans == set()


@pytest.mark.parametrize("recording", OFF_WITH_LOGS, ids=lambda r: r.id)
def test_with_content_off_the_log_records_carry_no_tool_arguments(recording):
    assert dict(tool_calls(records(recording.logs))) == {}


# -- reading the recorded OTLP/JSON (test helpers: the product's reading is what the tests above check) ------

def any_value(value: dict[str, Any]) -> Any:
    """An OTLP/JSON AnyValue as Python."""
    if "kvlistValue" in value:
        return {kv["key"]: any_value(kv.get("value", {})) for kv in value["kvlistValue"].get("values", [])}
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    if "intValue" in value:
        return int(value["intValue"])
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return next(iter(value.values()), None)


def records(path: Path | None) -> Iterator[dict[str, Any]]:
    """Each log record's attributes and body, decoded."""
    assert path is not None
    for resource in json.loads(path.read_text())["resourceLogs"]:
        for scope in resource.get("scopeLogs", []):
            for record in scope.get("logRecords", []):
                yield {"attributes": {a["key"]: any_value(a["value"]) for a in record.get("attributes", [])},
                       "body": any_value(record.get("body", {}))}


def spans(path: Path) -> Iterator[dict[str, Any]]:
    for resource in json.loads(path.read_text())["resourceSpans"]:
        for scope in resource.get("scopeSpans", []):
            yield from scope.get("spans", [])


def tool_calls(values: Any) -> Iterator[tuple[str, tuple[str, str]]]:
    """(call id, (tool name, arguments as sorted JSON)) for every tool call with arguments anywhere in ``values``:
    a part ``{id, name, arguments}`` (the newer conventions) or ``{id, function: {name, arguments}}`` (v1.30)."""
    if isinstance(values, dict):
        for key, value in values.items():
            if isinstance(value, str) and value[:1] in "[{" and key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                value = json.loads(value)
            yield from tool_calls(value)
        call = values.get("function") if isinstance(values.get("function"), dict) else values
        arguments = call.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = None
        if isinstance(values.get("id"), str) and isinstance(call.get("name"), str) and isinstance(arguments, dict):
            yield values["id"], (call["name"], json.dumps(arguments, sort_keys=True))
    elif isinstance(values, list):
        for value in values:
            yield from tool_calls(value)
    elif isinstance(values, Iterator):
        for value in values:
            yield from tool_calls(value)
