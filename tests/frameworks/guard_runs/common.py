"""Shared by the guard-adapter drivers: the scripted incident, its tools, and the spans as JSON.

A driver runs inside a framework's own virtual environment (``.corpus-envs/<id>``): it serves
the scripted stub model, runs the framework's agent inside ``agent_run(..., guards=...)`` with
the adapter, and prints the spans it recorded plus what the model was sent, as JSON on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.instrumentation import agent_run, configure
from mast_otel.instrumentation.guards import GuardConfig
from tests.frameworks.harness.stub_model import Answer, Call, Script, StubModel

KINDS = {"get_pods": "read", "restart_deployment": "write", "check_health": "verify"}
CLAIM = "RESOLVED: restarted checkout"
MAX_STEPS = {"budget": 3}


def script(scenario: str) -> Script:
    """``loop``: the same read four times; ``unchecked``: a change, a claim, then (after the refusal) a check."""
    if scenario == "loop":
        return Script([Call("get_pods", {"namespace": "shop"})] * 4 + [Answer("NOT RESOLVED: pods keep crashing")])
    if scenario == "budget":  # different reads, one per model call, past a budget of MAX_STEPS["budget"]
        return Script([Call("get_pods", {"namespace": f"ns-{i}"}) for i in range(6)] + [Answer("NOT RESOLVED: no time")])
    return Script([Call("restart_deployment", {"deployment": "checkout"}), Answer(CLAIM),
                   Call("check_health", {"deployment": "checkout"}), Answer(CLAIM)])


def get_pods(namespace: str) -> dict:
    """List the pods of a namespace."""
    return {"checkout-1": "CrashLoopBackOff"}


def restart_deployment(deployment: str) -> str:
    """Restart a deployment."""
    return f"restarted {deployment}"


def check_health(deployment: str) -> dict:
    """Check whether a deployment is healthy."""
    return {"passed": True, "deployment": deployment}


TOOLS = [get_pods, restart_deployment, check_health]


def main(run: Callable[[Any, StubModel, Any], Any]) -> None:
    """``run(guard, stub, run)`` drives the framework; argv: scenario, mode."""
    scenario, mode = sys.argv[1], sys.argv[2]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=provider)
    outcome: Any = None
    with StubModel() as stub:
        stub.load(script(scenario))
        with agent_run("sre-agent", max_steps=MAX_STEPS.get(scenario, 20), guards=GuardConfig.all(mode)) as agent:
            outcome = run(agent.guard, stub, agent)
    spans = [{"name": s.name, "span_id": format(s.context.span_id, "016x"),
              "attributes": {k: _plain(v) for k, v in (s.attributes or {}).items()},
              "events": [{"name": e.name, "attributes": {k: _plain(v) for k, v in (e.attributes or {}).items()}}
                         for e in s.events]} for s in exporter.get_finished_spans()]
    sent = [[m.get("content") for m in r.get("messages", []) if m.get("role") in ("tool", "user")]
            for r in stub.requests]
    print(json.dumps({"spans": spans, "model_saw": sent, "outcome": _plain(outcome)}))


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)
