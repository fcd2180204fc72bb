"""mast-otel's own instrumentation, end to end through the decoder: the two sides of the
wire vocabulary must agree (hints, step indexes, hashes, content when opted in)."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.model import Role, Run

from .otlp import capture, protobuf_of


def test_agent_run_with_litellm_and_tools_round_trips():
    import litellm

    from mast_otel.instrumentation import agent_run, configure, instrument_litellm, tool_call, uninstrument_litellm

    provider, exporter = capture("sre-agent")
    configure(tracer_provider=provider, capture_content=True)  # setup_tracing minus the OTLP exporter
    instrument_litellm()
    try:
        with agent_run("triage", max_steps=6, constraints=("read_only",), task="why is prod down?") as run:
            litellm.completion(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "why is prod down?"}],
                mock_tool_calls=[{"id": "c1", "type": "function", "function": {"name": "kubectl_get", "arguments": '{"ns": "prod"}'}}],
            )
            with tool_call("kubectl_get", kind="read", arguments={"ns": "prod"}) as call:
                call.set_result("api-1 CrashLoopBackOff")
            run.set_final_answer("api-1 is crash looping")
            run.set_claimed_success(True)
    finally:
        uninstrument_litellm()
        configure(tracer_provider=None, capture_content=None)  # back to the defaults for other tests

    spans = [s for s in decode_protobuf(protobuf_of(exporter.get_finished_spans())).spans if s.is_agent_related]
    run_ = Run.from_spans(spans[0].trace_id, spans)
    root = run_.root
    assert root.agent_name == "triage" and root.convention == "gen_ai"
    assert (root.hints.max_steps, root.hints.constraints, root.hints.claimed_success) == (6, ("read_only",), True)
    assert root.hints.task == "why is prod down?" and root.hints.final_answer == "api-1 is crash looping"
    (llm,) = run_.llm_calls
    assert llm.model and llm.model.startswith("gpt-4o-mini") and llm.requested_tools == ("kubectl_get",)
    assert llm.input_message_count == 1
    (tool,) = run_.tool_calls
    assert (tool.tool_name, tool.tool_kind, tool.role) == ("kubectl_get", "read", Role.TOOL)
    assert tool.args_hash == stable_hash({"ns": "prod"}) and tool.result_hash == stable_hash("api-1 CrashLoopBackOff")
    assert tool.step_index == llm.step_index == 0  # one iteration: a model call and the tool it asked for
