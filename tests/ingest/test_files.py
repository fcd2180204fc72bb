"""Trace files -> runs: OTLP JSON, JSON lines, SDK console output, protobuf, step-lists, any of them gzipped."""

from __future__ import annotations

import gzip
import json
import logging

import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.ingest.files import LoadError, load_runs
from mast_otel.processors.model import Role

from .otlp import capture, otlp_json_of, protobuf_of, request_of
from .test_decode import agent_trace


def test_otlp_json_object_and_json_lines(tmp_path):
    first, second = agent_trace(), agent_trace()
    single = tmp_path / "one.json"
    single.write_bytes(otlp_json_of(first))
    lines = tmp_path / "collector.jsonl"
    lines.write_text(otlp_json_of(first).decode() + "\n" + otlp_json_of(second).decode() + "\n")
    runs = list(load_runs([single, lines]))  # the first trace is in both files: its spans count once
    assert [r.trace_id for r in runs] == [format(first[0].context.trace_id, "032x"), format(second[0].context.trace_id, "032x")]
    for run in runs:
        assert run.root.agent_name == "sre" and len(run.steps) == 2 and len(run.spans) == 3  # OTHER spans dropped
        assert run.service_name == "sre-agent" and run.model == "gpt-4o"


def test_sdk_console_exporter_output(tmp_path):
    path = tmp_path / "console.txt"
    with path.open("w") as out:
        provider, exporter = capture("sre-agent")
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
        tracer = provider.get_tracer("t")
        with tracer.start_as_current_span("invoke_agent sre", attributes={"gen_ai.operation.name": "invoke_agent", "mast.task.max_steps": 3}):
            with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "mast.llm.requested_tools": ["a", "b"]}):
                pass
        provider.shutdown()
    assert path.read_text().count("\n") > 20  # pretty-printed, one object after another
    (run,) = load_runs([path])
    expected = {s.span_id: s for s in decode_protobuf(protobuf_of(exporter.get_finished_spans())).spans}
    assert len(run.spans) == 2
    for span in run.spans:
        want = expected[span.span_id]
        assert (span.name, span.role, span.parent_span_id, span.service_name) == (want.name, want.role, want.parent_span_id, "sre-agent")
        assert abs(span.start_ns - want.start_ns) < 1000  # the SDK prints microseconds
    assert run.root.hints.max_steps == 3 and run.llm_calls[0].requested_tools == ("a", "b")


def test_one_trace_across_files_and_protobuf_files(tmp_path):
    spans = agent_trace()
    (tmp_path / "a.json").write_bytes(otlp_json_of(spans[:2]))
    (tmp_path / "b.pb").write_bytes(protobuf_of(spans[2:]))
    (run,) = load_runs([tmp_path / "a.json", tmp_path / "b.pb"])
    assert run.root is not None and len(run.spans) == 3


def test_gzipped_files_are_read_as_the_file_inside(tmp_path):
    spans = agent_trace()
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(otlp_json_of(spans[:1])))
    (tmp_path / "b.pb.gz").write_bytes(gzip.compress(protobuf_of(spans[1:2])))
    (tmp_path / "c.json").write_bytes(gzip.compress(otlp_json_of(spans[2:])))  # told by its magic bytes, not its name
    (run,) = load_runs([tmp_path / "a.json.gz", tmp_path / "b.pb.gz", tmp_path / "c.json"])
    assert run.root is not None and run.root.agent_name == "sre" and len(run.spans) == 3 and len(run.steps) == 2
    plain = next(iter(load_runs([_written(tmp_path / "plain.json", otlp_json_of(spans))])))
    assert [(s.span_id, s.role, s.name) for s in run.spans] == [(s.span_id, s.role, s.name) for s in plain.spans]


def _written(path, data: bytes):
    path.write_bytes(data)
    return path


def test_a_broken_gzip_file_is_a_clear_error(tmp_path):
    whole = gzip.compress(otlp_json_of(agent_trace()))
    with pytest.raises(LoadError, match=r"cut\.json\.gz: not a readable gzip file"):
        list(load_runs([_written(tmp_path / "cut.json.gz", whole[: len(whole) // 2])]))
    with pytest.raises(LoadError, match=r"fake\.json\.gz: not a readable gzip file"):
        list(load_runs([_written(tmp_path / "fake.json.gz", otlp_json_of(agent_trace()))]))  # named .gz, not gzip


def test_analyze_reads_a_gzipped_file(tmp_path, capsys):
    from mast_otel.processors.cli import main

    path = _written(tmp_path / "run.json.gz", gzip.compress(otlp_json_of(agent_trace())))
    assert main(["analyze", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["runs"]) == 1 and out["runs"][0]["agent"] == "sre"


def test_traces_without_agent_spans_are_not_runs(tmp_path):
    provider, exporter = capture()
    with provider.get_tracer("t").start_as_current_span("GET /"):
        pass
    (tmp_path / "http.json").write_bytes(otlp_json_of(exporter.get_finished_spans()))
    assert list(load_runs([tmp_path / "http.json"])) == []


def test_step_list_files_are_delegated(tmp_path):
    records = [
        {"steps": [{"agent": "coder", "kind": "message", "content": "plan"}, {"agent": "coder", "kind": "message", "content": text}]}
        for text in ("done", "gave up")
    ]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(records))
    runs = list(load_runs([path]))
    assert len(runs) == 2 and all(r.spans and all(s.convention == "steps" for s in r.spans) for r in runs)


@pytest.mark.parametrize(
    "content, where, message",
    [
        ('{"resourceSpans": []}\n{"resourceSpans": []}\n{"resourceSpans": [}\n', ":3:", "invalid JSON"),
        ('{"resourceSpans": []}\n{"hello": "world"}\n', ":2:", "not OTLP JSON"),
        ('{"resourceSpans": []}\n{"resourceSpans": 5}\n', ":2:", "must be an array"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, content, where, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(LoadError, match=message) as info:
        list(load_runs([path]))
    assert f"{path}{where}" in str(info.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(LoadError, match="cannot read"):
        list(load_runs([tmp_path / "missing.json"]))
    binary = tmp_path / "x.json"
    binary.write_bytes(b'{"a":\n"\xff"}')
    with pytest.raises(LoadError, match=r"x.json:2: not UTF-8"):
        list(load_runs([binary]))
    garbage = tmp_path / "x.pb"
    garbage.write_bytes(b"\xff\xff\xff")
    with pytest.raises(LoadError, match="x.pb: body is not a valid OTLP"):
        list(load_runs([garbage]))


def test_rejected_spans_warn_or_raise_with_file_and_line(tmp_path, caplog):
    good = otlp_json_of(request_of(agent_trace())).decode()
    doc = json.loads(otlp_json_of(request_of(agent_trace())))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "00" * 16
    path = tmp_path / "mixed.jsonl"
    path.write_text(good + "\n" + json.dumps(doc) + "\n")
    with caplog.at_level(logging.WARNING, logger="mast_otel.ingest"):
        runs = list(load_runs([path]))
    assert len(runs) == 2 and f"{path}:2: rejected 1 span(s) (invalid_trace_id=1)" in caplog.text
    with pytest.raises(LoadError, match=r"mixed.jsonl:2: rejected 1 span"):
        list(load_runs([path], strict=True))
    assert all(r.root is None or r.root.role is Role.AGENT for r in runs)
