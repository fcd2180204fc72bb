"""Runs every team scenario through one framework's multi-agent primitive and writes what its
instrumentation exported, like the framework corpus (``tests/frameworks/harness/recording``):
``<out>/<scenario>.json`` (OTLP/JSON, spans in the order they ended) and ``<out>/manifest.json``
(versions, what each run did, which scenarios the framework cannot express and why).
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

from .scenarios import SCENARIOS, TeamScenario
from .team_model import Delegation, TeamStubModel

__all__ = ["arguments", "record_team", "tracer_provider"]

Runner = Callable[[TeamScenario, TeamStubModel, Cluster], object]


def record_team(
    *,
    framework: str,
    instrumentation: str,
    packages: list[str],
    run: Runner,
    delegate: Delegation,
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
    args,
    topology: str = "delegation",
    cannot: dict[str, str] | None = None,
    dialect: str = "tools",
    notes: str = "",
) -> None:
    """Record every team scenario (except those in ``cannot``: name -> why the framework cannot express it)."""
    cannot = dict(cannot or {})
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    with TeamStubModel(dialect=dialect, delegate=delegate, topology=topology) as stub:
        for scenario in SCENARIOS:
            if (args.only and scenario.name not in args.only) or scenario.name in cannot:
                continue
            cluster = scenario.new_cluster()
            stub.load_team(scenario)
            exporter.clear()
            ended_with = None
            try:
                run(scenario, stub, cluster)
            except Exception as exc:  # a framework's own limit error is part of the recording
                ended_with = f"{type(exc).__name__}: {exc}"[:300]
                if "limit" not in scenario.needs:
                    traceback.print_exc()
            provider.force_flush()
            spans = exporter.get_finished_spans()
            (args.out / f"{scenario.name}.json").write_text(otlp_json(spans) + "\n")
            runs[scenario.name] = {"model_calls": len(stub.requests), "asked_by": list(stub.asked_by),
                                   "tool_calls": list(cluster.calls), "raised": ended_with, "spans": len(spans),
                                   "traces": len({s.context.trace_id for s in spans})}
            print(f"{framework}: {scenario.name}: {len(spans)} spans, model calls by {stub.asked_by}, "
                  f"tools {cluster.calls}" + (f", raised {ended_with}" if ended_with else ""), file=sys.stderr)
    if args.only and (args.out / "manifest.json").is_file():  # re-recording some scenarios keeps the others' entries
        runs = {**json.loads((args.out / "manifest.json").read_text())["runs"], **runs}
    manifest = {
        "framework": framework,
        "instrumentation": instrumentation,
        "topology": topology,
        "content_capture": not args.no_content,
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in packages},
        "runs": runs,
        "cannot_express": cannot,
        "notes": notes,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
