"""GenAI log records in the write-ahead log: acknowledged records survive a crash, joined again at replay."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.ingest.log_records import decode_logs_protobuf
from mast_otel.processors.model import Role
from tests.reliability.test_wal import _config, _crash, _stage
from tests.service.test_logs_receiver import CALLS, _agent_run


def _tools_with_content(stage, trace_id: str) -> int:
    buf = stage._assembler.in_flight.get(trace_id)
    return sum(1 for s in buf.spans if s.role is Role.TOOL and s.args_hash and s.tool_args) if buf is not None else 0


@pytest.mark.parametrize("logs_first", [True, False], ids=["logs-first", "spans-first"])
def test_acknowledged_records_are_joined_again_after_a_crash(tmp_path, logs_first):
    spans, logs, trace_id = _agent_run(content_on_spans=False, content_in_logs=True)
    steps = [s for s in spans if s.parent is not None]  # the root stays open: the run is in flight at the crash
    span_body = encode_spans(steps).SerializeToString()
    log_body = encode_logs(logs).SerializeToString()
    config = _config(tmp_path)
    stage, wal = _stage(config)
    for kind in (("logs", "spans") if logs_first else ("spans", "logs")):
        if kind == "logs":
            receipt = stage.ingest_logs(decode_logs_protobuf(log_body, stage.decode_options), "http", log_body)
        else:
            receipt = stage.ingest(decode_protobuf(span_body, stage.decode_options), "http", span_body)
        assert receipt.refusal is None and stage.durable(receipt) is None  # what an acknowledgement waits for
    assert _tools_with_content(stage, trace_id) == CALLS
    _crash(stage, wal)

    stage2, wal2 = _stage(config)
    try:
        assert stage2.in_flight == 1
        assert _tools_with_content(stage2, trace_id) == CALLS
        assert stage2.log_join.held_bytes == 0
    finally:
        stage2.shutdown()
        wal2.shutdown()


def test_records_of_a_trace_not_seen_yet_are_held_again_after_a_crash(tmp_path):
    spans, logs, trace_id = _agent_run(content_on_spans=False, content_in_logs=True)
    log_body = encode_logs(logs).SerializeToString()
    config = _config(tmp_path)
    stage, wal = _stage(config)
    receipt = stage.ingest_logs(decode_logs_protobuf(log_body, stage.decode_options), "http", log_body)
    assert stage.durable(receipt) is None and stage.log_join.holds(trace_id)
    _crash(stage, wal)

    stage2, wal2 = _stage(config)
    try:
        assert stage2.log_join.holds(trace_id)
        steps = [s for s in spans if s.parent is not None]
        body = encode_spans(steps).SerializeToString()
        stage2.ingest(decode_protobuf(body, stage2.decode_options), "http", body)
        assert _tools_with_content(stage2, trace_id) == CALLS and not stage2.log_join.holds(trace_id)
    finally:
        stage2.shutdown()
        wal2.shutdown()
