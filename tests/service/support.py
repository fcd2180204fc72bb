"""Helpers for the service tests: a real processor on ephemeral ports, real OTel SDK emitters.

Agent runs are emitted with plain OpenTelemetry SDK tracers carrying the GenAI and mast.*
attributes, exported by the SDK's real OTLP exporters. Detection is a small test-local rule
set passed in by dependency injection (the pipeline takes detectors as arguments), so these
tests check the service, not the detectors' current state.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

import httpx
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from mast_otel.wire import attributes as A
from mast_otel.processors.config import DetectionConfig, ProcessorConfig
from mast_otel.processors.model import Finding, Role, Run, Span
from mast_otel.processors.service.server import ProcessorServer

REPEAT = 3  # identical tool calls that make "FM-1.3" in the test detector


def repeated_tool_spans(spans: list[Span]) -> list[Span]:
    by_key: dict[tuple, list[Span]] = {}
    for s in spans:
        if s.role is Role.TOOL:
            by_key.setdefault((s.tool_name, s.args_hash), []).append(s)
    return next((group for group in by_key.values() if len(group) >= REPEAT), [])


def test_diagnose(run: Run, config: DetectionConfig | None = None) -> list[Finding]:
    """FM-1.3 for a tool called REPEAT times with the same arguments."""
    findings = []
    group = repeated_tool_spans(run.spans)
    if group:
        ids = tuple(s.span_id for s in group)
        findings.append(Finding("FM-1.3", 0.9, f"{group[0].tool_name} called {len(group)} times", ids, detector="test.repeat"))
    if run.hints.claimed_success and any(s.verification_passed is False for s in run.tool_calls):
        failed = next(s for s in run.tool_calls if s.verification_passed is False)
        findings.append(Finding("FM-3.3", 0.95, "claimed success after a failed check", (failed.span_id,), detector="test.verify"))
    return findings


class TestLiveDetection:
    """Raises FM-1.3 live on the REPEAT-th identical tool call, and FM-1.1 on any "forbidden" tool."""

    def __init__(self, config: DetectionConfig | None = None) -> None:
        self.spans: list[Span] = []
        self.raised: set[str] = set()

    def observe(self, span: Span) -> list[Finding]:
        self.spans.append(span)
        out = []
        group = repeated_tool_spans(self.spans)
        if group and "FM-1.3" not in self.raised:
            out.append(Finding("FM-1.3", 0.7, "repetition so far", tuple(s.span_id for s in group), detector="test.live", live=True))
        if span.tool_name == "forbidden" and "FM-1.1" not in self.raised:
            out.append(Finding("FM-1.1", 0.5, "forbidden tool", (span.span_id,), detector="test.live", live=True))
        self.raised.update(f.mode for f in out)
        return out


TestLiveDetection.__test__ = False  # type: ignore[attr-defined]  # not a pytest class
test_diagnose.__test__ = False  # type: ignore[attr-defined]


def make_config(tmp_path, **sections) -> ProcessorConfig:
    base = {
        "receiver": {"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "retry_after_seconds": 1},
        "assembly": {"grace_seconds": 0.2, "idle_timeout_seconds": 30, "sweep_interval_seconds": 0.05, "retention_seconds": 30},
        "store": {"path": str(tmp_path / "diagnoses.sqlite")},
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return ProcessorConfig(**base)


@contextmanager
def running(config: ProcessorConfig, **kwargs) -> Iterator[ProcessorServer]:
    kwargs.setdefault("diagnose", test_diagnose)
    kwargs.setdefault("live_detection", TestLiveDetection)
    server = ProcessorServer(config, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def metric(server: ProcessorServer, name: str, **labels) -> float:
    """A sample's value from the live /metrics endpoint (0 when absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{server.http_url}/metrics").text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def provider_for(exporter, service_name: str = "sre-agent") -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def emit_run(
    provider: TracerProvider,
    *,
    agent: str = "triage",
    model: str = "gpt-4o",
    tools: tuple[tuple[str, str], ...] = (("kubectl_get", "a"), ("kubectl_get", "b")),
    end_root: bool = True,
    outcome: str | None = None,
    claimed_success: bool | None = None,
    verification: bool | None = None,
) -> tuple[str, dict[str, str]]:
    """One agent run: root invoke_agent, a chat call per tool call, the tool calls.

    Returns the trace id (hex) and the span ids by name (``agent``, ``chat-N``, ``tool-N``).
    ``end_root=False`` leaves the agent span open (a run that never ends).
    """
    tracer = provider.get_tracer("tests.service")
    root = tracer.start_span(f"invoke_agent {agent}", attributes={
        A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: agent, A.MAST_TASK_MAX_STEPS: 20,
    })
    ids = {"agent": format(root.get_span_context().span_id, "016x")}
    from opentelemetry import trace

    ctx = trace.set_span_in_context(root)
    for i, (tool, args) in enumerate(tools):
        with tracer.start_as_current_span(f"chat {model}", context=ctx, attributes={
            A.GEN_AI_OPERATION_NAME: A.OP_CHAT, A.GEN_AI_REQUEST_MODEL: model, A.GEN_AI_RESPONSE_MODEL: model,
            A.GEN_AI_PROVIDER_NAME: "openai", A.GEN_AI_USAGE_INPUT_TOKENS: 100 + i, A.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
            A.MAST_STEP_INDEX: i,
        }) as chat:
            ids[f"chat-{i}"] = format(chat.get_span_context().span_id, "016x")
        attrs = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: tool, A.MAST_STEP_INDEX: i,
            A.MAST_TOOL_KIND: "verify" if verification is not None and i == len(tools) - 1 else "read",
            A.MAST_TOOL_ARGS_HASH: args, A.MAST_TOOL_RESULT_HASH: f"r-{args}",
        }
        if verification is not None and i == len(tools) - 1:
            attrs[A.MAST_TOOL_VERIFICATION_PASSED] = verification
        with tracer.start_as_current_span(f"execute_tool {tool}", context=ctx, attributes=attrs) as span:
            ids[f"tool-{i}"] = format(span.get_span_context().span_id, "016x")
    if outcome is not None:
        root.set_attribute(A.MAST_RUN_OUTCOME, outcome)
    if claimed_success is not None:
        root.set_attribute(A.MAST_RUN_CLAIMED_SUCCESS, claimed_success)
    if end_root:
        root.set_attribute(A.MAST_RUN_TERMINATION_REASON, "final_answer")
        root.end()
    return format(root.get_span_context().trace_id, "032x"), ids
