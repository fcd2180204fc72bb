"""Server CPU per GenAI log record (``POST /v1/logs``) against server CPU per span (``POST /v1/traces``).

    .venv/bin/python benchmarks/bench_logs.py [--traces N] [--rounds R]

A real ``mast-otel serve`` process (bench_end_to_end's ``Server``: default configuration, its
own SQLite store, the write-ahead log at its default, grace one hour so no run completes during
a round) and this process as the client, two keep-alive connections, 512 items per request.
The workload is bench_decode's agent runs (26 spans each) and, for each model or tool call, one
GenAI log record as the legacy per-message instrumentations send it (``gen_ai.tool.message``
with the call's arguments on a tool call, ``gen_ai.choice`` with the requested tool on a model
call; 25 per run), encoded by the OpenTelemetry SDK's own log encoder.

Per round, in one server, on fresh trace ids: (1) the spans of N runs, (2) their records after
them (each joined to its buffered span), (3) the records of N other runs before their spans
(held), (4) those runs' spans (each reading its held records in its decode), (5) the spans of N
more runs with the records' content on the spans instead (the cost of the same content when
capture puts it on spans). The server's CPU
seconds (``/proc``, every thread) are read around each step. Reported: the best round's CPU
microseconds per item of each step, and per-record cost over per-span cost (step 1), for each
round too (the spread). The machine is shared: compare the ratios, not the absolute figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import BATCH, agent_traces  # noqa: E402  (the same workload)
from bench_end_to_end import Server  # noqa: E402
from bench_ingest import bodies_with_fresh_ids, with_fresh_trace_ids  # noqa: E402
from opentelemetry._logs import LogRecord  # noqa: E402
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.trace import TraceFlags  # noqa: E402

from mast_otel.wire import attributes as A  # noqa: E402


def records_for(spans: list) -> list:
    """One GenAI log record per model or tool call of ``spans``, as the SDK would export them."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "sre-agent"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("opentelemetry.instrumentation.openai_v2", "2.1b0")
    for span in spans:
        operation = span.attributes.get(A.GEN_AI_OPERATION_NAME)
        ids = {"trace_id": span.context.trace_id, "span_id": span.context.span_id, "trace_flags": TraceFlags(1)}
        if operation == A.OP_EXECUTE_TOOL:
            tool = span.attributes[A.GEN_AI_TOOL_NAME]
            logger.emit(LogRecord(**ids, event_name="gen_ai.tool.message", attributes={"gen_ai.system": "openai"},
                                  body={"content": json.dumps({"namespace": "checkout", "name": f"{tool}-target"}),
                                        "id": span.attributes[A.GEN_AI_TOOL_CALL_ID]}))
        elif operation == A.OP_CHAT:
            tool = span.attributes[A.MAST_LLM_REQUESTED_TOOLS][0]
            logger.emit(LogRecord(**ids, event_name="gen_ai.choice", attributes={"gen_ai.system": "openai"},
                                  body={"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [
                                      {"id": "call_1", "type": "function",
                                       "function": {"name": tool, "arguments": '{"namespace": "checkout"}'}}]}}))
    provider.shutdown()
    return list(exporter.get_finished_logs())


def with_content_on_spans(template: list[bytes]) -> list[bytes]:
    """The span requests with the records' content on the spans instead (what content capture on
    spans sends): each tool call's arguments, each model call's output message."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    out = []
    for body in template:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs = {kv.key: kv.value for kv in span.attributes}
                    operation = attrs[A.GEN_AI_OPERATION_NAME].string_value if A.GEN_AI_OPERATION_NAME in attrs else ""
                    if operation == A.OP_EXECUTE_TOOL:
                        tool = attrs[A.GEN_AI_TOOL_NAME].string_value
                        value = json.dumps({"namespace": "checkout", "name": f"{tool}-target"})
                        span.attributes.append(KeyValue(key=A.GEN_AI_TOOL_CALL_ARGUMENTS, value=AnyValue(string_value=value)))
                    elif operation == A.OP_CHAT:
                        tool = attrs[A.MAST_LLM_REQUESTED_TOOLS].array_value.values[0].string_value
                        value = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": tool,
                                                                              "arguments": {"namespace": "checkout"}}],
                                             "finish_reason": "tool_calls"}])
                        span.attributes.append(KeyValue(key=A.GEN_AI_OUTPUT_MESSAGES, value=AnyValue(string_value=value)))
        out.append(request.SerializeToString())
    return out


def log_bodies_with_fresh_ids(template: list[bytes], salt: int) -> list[bytes]:
    """The same log requests with every trace id changed as ``bodies_with_fresh_ids`` changes the spans'."""
    return with_fresh_trace_ids(template, salt, ExportLogsServiceRequest.FromString,
                                lambda request: (r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records))


def post(port: int, path: str, bodies: list[bytes], connections: int = 2) -> None:
    failures: list[int] = []

    def send(share: list[bytes]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        for body in share:
            conn.request("POST", path, body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            answer = response.read()
            if response.status != 200 or (path == "/v1/logs" and answer):  # a partial success names records not kept
                failures.append(response.status)
        conn.close()

    threads = [threading.Thread(target=send, args=(bodies[i::connections],)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"{len(failures)} requests to {path} not wholly accepted: {failures[:5]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spans = agent_traces(args.traces)
    span_template = [encode_spans(spans[i:i + BATCH]).SerializeToString() for i in range(0, len(spans), BATCH)]
    records = records_for(spans)
    log_template = [encode_logs(records[i:i + BATCH]).SerializeToString() for i in range(0, len(records), BATCH)]
    command = [str(Path(sys.executable).with_name("mast-otel")), "serve"]
    content_template = with_content_on_spans(span_template)
    steps = ("spans", "logs_after_spans", "logs_before_spans", "spans_reading_held_logs", "spans_with_content")
    counts = {"spans": len(spans), "logs_after_spans": len(records), "logs_before_spans": len(records),
              "spans_reading_held_logs": len(spans), "spans_with_content": len(spans)}
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            server = Server(command, Path(folder), grace=3600, wal=None)
            try:
                cpu: dict[str, float] = {}
                work = (("spans", "/v1/traces", bodies_with_fresh_ids(span_template, 7000 + 2 * r)),
                        ("logs_after_spans", "/v1/logs", log_bodies_with_fresh_ids(log_template, 7000 + 2 * r)),
                        ("logs_before_spans", "/v1/logs", log_bodies_with_fresh_ids(log_template, 7001 + 2 * r)),
                        ("spans_reading_held_logs", "/v1/traces", bodies_with_fresh_ids(span_template, 7001 + 2 * r)),
                        ("spans_with_content", "/v1/traces", bodies_with_fresh_ids(content_template, 9000 + r)))
                for step, path, bodies in work:
                    before = server.cpu()
                    post(server.port, path, bodies)
                    cpu[step] = server.cpu() - before
                rounds.append({step: 1e6 * cpu[step] / counts[step] for step in steps})
            finally:
                server.stop()
    best = {step: min(r[step] for r in rounds) for step in steps}
    report = {
        "runs": args.traces, "spans": len(spans), "records": len(records), "rounds": args.rounds,
        "span_request_bytes": sum(map(len, span_template)) // len(span_template),
        "log_request_bytes": sum(map(len, log_template)) // len(log_template),
        "best_cpu_us_per_item": {step: round(v, 1) for step, v in best.items()},
        "ratio_to_spans": {step: round(best[step] / best["spans"], 3) for step in steps[1:]},
        "ratio_to_spans_with_content": {step: round(best[step] / best["spans_with_content"], 3) for step in steps[1:4]},
        "ratio_to_spans_per_round": {step: [round(r[step] / r["spans"], 3) for r in rounds] for step in steps[1:]},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
