"""The two parts of a re-routed run completing at the same moment on two replicas sharing a
real PostgreSQL store: counted once, stored as one diagnosis with every span.

"The same moment" is made certain rather than hoped for: each replica's look-up of stored runs
waits at a barrier until the other's has run too, so both find the run absent before either
stores it (what two replicas completing their parts within a few milliseconds see)."""

from __future__ import annotations

import threading

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from mast_otel.wire import attributes as A
from tests.service.support import make_config, metric, provider_for, running, wait_for

ROOT_SPAN_ID = 0x5A5A


def _config(tmp_path, name: str, pg_url: str):
    return make_config(tmp_path, store={"url": pg_url, "retry_interval_seconds": 0.2},
                       wal={"directory": str(tmp_path / f"{name}.wal")},
                       assembly={"grace_seconds": 0.3, "idle_timeout_seconds": 0.3, "sweep_interval_seconds": 0.05,
                                 "retention_seconds": 30})


def _both_look_first(servers) -> list[str]:
    """Each replica's first look-up of stored runs waits for the other's."""
    barrier, looked = threading.Barrier(len(servers), timeout=30), []
    for server in servers:
        real = server.store.existing

        def existing(trace_ids, real=real, name=server.http_url):
            if name not in looked:
                looked.append(name)
                barrier.wait()
            return real(trace_ids)
        server.store.existing = existing
    return looked


def _part(server, trace_id: str, *, root: bool, tools: tuple[str, ...]) -> None:
    """The part of the run one replica receives: the root span with its tools, or tools alone."""
    provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
    tracer = provider.get_tracer("t")
    if root:
        parent = set_span_in_context(NonRecordingSpan(SpanContext(int(trace_id, 16), 0x1, False, TraceFlags(1))))
        span = tracer.start_span("invoke_agent triage", context=parent, attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent"})
        span_context = span.get_span_context()
    else:
        span, span_context = None, SpanContext(int(trace_id, 16), ROOT_SPAN_ID, False, TraceFlags(1))
    inside = set_span_in_context(NonRecordingSpan(span_context))
    for tool in tools:
        with tracer.start_as_current_span(f"execute_tool {tool}", context=inside, attributes={
                A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: tool}):
            pass
    if span is not None:
        span.end()
    provider.shutdown()


def test_two_parts_completing_at_once_on_two_replicas_are_one_run_counted_once(tmp_path, pg_url):
    trace_id = "7e" * 16
    with running(_config(tmp_path, "one", pg_url)) as one, running(_config(tmp_path, "other", pg_url)) as other:
        looked = _both_look_first([one, other])
        parts = [threading.Thread(target=_part, args=(one, trace_id), kwargs={"root": True, "tools": ("kubectl_get",)}),
                 threading.Thread(target=_part, args=(other, trace_id), kwargs={"root": False, "tools": ("kubectl_logs", "kubectl_describe")})]
        for part in parts:
            part.start()
        for part in parts:
            part.join()
        wait_for(lambda: len(looked) == 2, timeout=30)
        whole = wait_for(lambda: (d := one.store.get(trace_id)) and d.span_count == 4 and d, timeout=30)
        assert whole.revision == 1  # the second part merged into the first's diagnosis
        counted = lambda: metric(one, "mast_traces_total") + metric(other, "mast_traces_total")  # noqa: E731
        wait_for(lambda: counted() >= 1)
        assert counted() == 1
