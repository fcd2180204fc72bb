"""Runs every session scenario through one framework's conversation primitive and writes what its
instrumentation exported, like the framework corpus (``tests/frameworks/harness/recording``).

A recorder gives :func:`record_sessions` a ``start`` function: given the scenario, the stub model,
the cluster and the session id, it sets up the framework's conversation (a thread, a session, a
message history, or, for scenarios whose app drops the history, nothing) and returns a function
that sends one user turn and returns the agent's answer. Each turn is its own call into the
framework, so its own trace. ``<out>/<scenario>.json`` holds every turn's spans (OTLP/JSON, in the
order they ended), after any the setup itself exported; ``<out>/manifest.json`` says, per scenario,
the setup's trace ids, each turn's trace ids, model and tool calls and answer, the session id the
app used, and the attribute the instrumentation carries it in.
"""

from __future__ import annotations

import json
import platform
import sys
import traceback
from typing import Callable

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.frameworks.harness.cluster import Cluster
from tests.frameworks.harness.recording import _version, arguments, otlp_json, tracer_provider

from .scenarios import SCENARIOS, SessionScenario
from .session_model import SessionStubModel

__all__ = ["arguments", "record_sessions", "tracer_provider"]

Turn = Callable[[str], object]
Start = Callable[[SessionScenario, SessionStubModel, Cluster, str], Turn]


def record_sessions(
    *,
    framework: str,
    instrumentation: str,
    packages: list[str],
    start: Start,
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
    args,
    session_attribute: str | None,
    cannot: dict[str, str] | None = None,
    notes: str = "",
) -> None:
    """Record every session scenario (except those in ``cannot``: name -> why the framework cannot express it).

    ``session_attribute`` names the span attribute the instrumentation writes the session id to
    (``None``: it writes none)."""
    cannot = dict(cannot or {})
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    variant = "no-content" if args.no_content else "content"
    with SessionStubModel() as stub:
        for scenario in SCENARIOS:
            if (args.only and scenario.name not in args.only) or scenario.name in cannot:
                continue
            session_id = f"{framework}/{scenario.name}/{variant}"
            cluster = scenario.new_cluster()
            stub.requests.clear()
            stub.model = scenario.model
            exporter.clear()
            send = start(scenario, stub, cluster, session_id)
            provider.force_flush()
            spans = list(exporter.get_finished_spans())  # setting the agent up (e.g. OpenLLMetry's create_agent span)
            setup = sorted({f"{s.context.trace_id:032x}" for s in spans})
            turns, seen = [], {id(s) for s in spans}
            for index, text in enumerate(scenario.user_turns):
                scenario.before_turn(index, cluster)
                requests, tools = len(stub.requests), len(cluster.calls)
                ended_with, answer = None, None
                try:
                    answer = send(text)
                except Exception as exc:
                    ended_with = f"{type(exc).__name__}: {exc}"[:300]
                    traceback.print_exc()
                provider.force_flush()
                new = [s for s in exporter.get_finished_spans() if id(s) not in seen]
                seen.update(id(s) for s in new)
                spans.extend(new)
                asked = stub.requests[requests:]
                turns.append({
                    "trace_ids": sorted({f"{s.context.trace_id:032x}" for s in new}),
                    "spans": len(new), "model_calls": len(asked), "tool_calls": cluster.calls[tools:],
                    "messages_sent": [len(body.get("messages") or []) for body in asked],
                    "prompt_tokens": [stub.usage(body)["prompt_tokens"] for body in asked],
                    "answer": None if answer is None else str(answer), "raised": ended_with,
                })
            (args.out / f"{scenario.name}.json").write_text(otlp_json(spans) + "\n")
            runs[scenario.name] = {"session_id": session_id, "setup_trace_ids": setup, "turns": turns}
            print(f"{framework}: {scenario.name}: " + "; ".join(
                f"turn {i + 1}: {len(t['trace_ids'])} trace(s), messages {t['messages_sent']}, tools {t['tool_calls']}, "
                f"answer {t['answer']!r}" for i, t in enumerate(turns)), file=sys.stderr)
    if args.only and (args.out / "manifest.json").is_file():  # re-recording some scenarios keeps the others' entries
        runs = {**json.loads((args.out / "manifest.json").read_text())["runs"], **runs}
    manifest = {
        "framework": framework,
        "instrumentation": instrumentation,
        "content_capture": not args.no_content,
        "session_attribute": session_attribute,
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in packages},
        "runs": runs,
        "cannot_express": cannot,
        "notes": notes,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
