"""With a shared store, a late span's run reads the spans stored for it before it is diagnosed
again; when that look-up fails the run waits (not dropped, not settled) and is diagnosed with
every span once the store answers."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from mast_otel.processors.service.store.span_codec import parse_spans
from mast_otel.wire import attributes as A
from tests.service.support import make_config, metric, provider_for, running, wait_for

TRACE = "d4" * 16
ROOT = 0x1234


def _spans(server, names: tuple[str, ...], *, root: bool) -> None:
    provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
    parent = set_span_in_context(NonRecordingSpan(SpanContext(int(TRACE, 16), ROOT, False, TraceFlags(1))))
    tracer = provider.get_tracer("t")
    if root:
        with tracer.start_as_current_span("invoke_agent triage", context=parent,
                                          attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent"}):
            for name in names:
                with tracer.start_as_current_span(name, attributes={A.GEN_AI_OPERATION_NAME: "execute_tool"}):
                    pass
    else:
        for name in names:
            with tracer.start_as_current_span(name, context=parent, attributes={A.GEN_AI_OPERATION_NAME: "execute_tool"}):
                pass
    provider.shutdown()


def test_a_failed_stored_span_look_up_keeps_the_late_spans(tmp_path, pg_url):
    config = make_config(tmp_path, store={"url": pg_url, "retry_interval_seconds": 0.2})
    with running(config) as server:
        _spans(server, ("execute_tool kubectl_get",), root=True)
        wait_for(lambda: metric(server, "mast_traces_total") == 1)
        settled: list[str] = []
        wal_settle = server.ingest.wal.settle
        server.ingest.wal.settle = lambda ids, through: (settled.extend(ids), wal_settle(ids, through))[1]
        calls: list[int] = []
        real = server.store.spans
        error = server.store.errors[0] if isinstance(server.store.errors, tuple) else server.store.errors

        def spans(trace_id):
            calls.append(1)
            if len(calls) <= 2:
                raise error("injected: pool timeout")
            return real(trace_id)
        server.store.spans = spans
        _spans(server, ("execute_tool kubectl_logs",), root=False)  # a late span of the diagnosed run
        wait_for(lambda: len(calls) >= 2)
        assert TRACE not in settled
        wait_for(lambda: TRACE in settled, timeout=15)
        assert {s.name for s in parse_spans(real(TRACE))} == {
            "invoke_agent triage", "execute_tool kubectl_get", "execute_tool kubectl_logs"}  # every span kept
        assert metric(server, "mast_traces_total") == 1
        assert metric(server, "mast_finish_errors_total", stage="diagnose") == 0
        assert server.store.get(TRACE).revision == 1
