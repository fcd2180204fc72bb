"""``mast-otel tools``: the tools your agents called, the kind each was given, and why.

The rules need to know which tools change things, check them, ask a person or hand off.
Where spans do not say (``mast.tool.kind``), the tool catalog in the configuration does, and
failing that the processor infers the kind from the tool's name or description. This lists
every tool seen, in trace files or in a processor's store, so you can review the inferences
and pin the ones that are wrong: ``--format yaml`` prints a catalog to paste into
``hints.tools``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from mast_otel.processors.offline.inputs import load, processor_config, text_table
from mast_otel.processors.usage import UsageError, number_at_least

WHY = {None: "emitted (mast.tool.kind)", "catalog": "catalog", "inferred": "inferred"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", help="OTLP JSON exports, JSON lines of spans, or step-list JSON")
    parser.add_argument("--store", metavar="PATH", help="read the tools of the runs a processor stored (its SQLite file)")
    parser.add_argument("--runs", type=number_at_least(1), default=1000, metavar="N", help="with --store: the N most recent runs (default 1000)")
    parser.add_argument("--config", metavar="PATH", help="processor YAML; its hints section (tool catalog) is used")
    parser.add_argument("--format", choices=("table", "json", "yaml"), default="table",
                        help="table for reading, json for scripts, yaml for a tool catalog to paste into hints.tools")


@dataclass
class ToolSeen:
    name: str
    kinds: Counter = field(default_factory=Counter)  # (kind, source) -> calls
    reasons: set[str] = field(default_factory=set)
    services: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)

    @property
    def calls(self) -> int:
        return sum(self.kinds.values())

    @property
    def kind(self) -> tuple[str | None, str | None]:
        """The (kind, source) most of its calls got."""
        return self.kinds.most_common(1)[0][0]

    def as_dict(self) -> dict:
        kind, source = self.kind
        return {"tool": self.name, "kind": kind, "why": _why(kind, source), "calls": self.calls,
                "reasons": sorted(self.reasons), "services": sorted(self.services), "agents": sorted(self.agents)}


def _why(kind: str | None, source: str | None) -> str:
    return "unknown: no hint, catalog entry or telling name" if kind is None else WHY.get(source, source or "")


def from_files(files: list[str], config_path: str | None) -> list[ToolSeen]:
    from mast_otel.processors.hints import derive_hints
    from mast_otel.processors.model import Role

    hints = processor_config(config_path).hints
    seen: dict[str, ToolSeen] = {}
    for run in load(files):
        derive_hints(run, hints)
        for span in run.steps:
            if span.role is Role.TOOL:
                tool = _add(seen, span.tool_name or span.name, span.tool_kind, span.tool_kind_source,
                            span.service_name or run.service_name, span.agent_name or run.agent)
                how = (span.derived or {}).get("tool_kind")
                if how:
                    tool.reasons.add(how)
    return _sorted(seen)


def from_store(path: str, runs: int) -> list[ToolSeen]:
    from pathlib import Path

    from mast_otel.processors.service.store.diagnoses import DiagnosisStore

    if not Path(path).is_file():
        raise UsageError(f"{path}: no such store (the processor's store.path)")
    store = DiagnosisStore(path)
    try:
        seen: dict[str, ToolSeen] = {}
        for steps in store.recent_steps(runs):
            agents = [s.agent for s in steps if s.role == "agent" and s.agent]
            for step in steps:
                if step.role == "tool":
                    _add(seen, step.tool_name or step.name, step.tool_kind, step.tool_kind_source, None,
                         step.agent or (agents[0] if agents else None))
        return _sorted(seen)
    finally:
        store.close()


def _add(seen: dict[str, ToolSeen], name: str, kind: str | None, source: str | None, service: str | None,
         agent: str | None) -> ToolSeen:
    tool = seen.setdefault(name, ToolSeen(name))
    tool.kinds[(kind, source if kind else None)] += 1
    if service:
        tool.services.add(service)
    if agent:
        tool.agents.add(agent)
    return tool


def _sorted(seen: dict[str, ToolSeen]) -> list[ToolSeen]:
    return sorted(seen.values(), key=lambda t: (t.kind[0] is not None, t.name))  # unknown kinds first


def as_yaml(tools: Iterable[ToolSeen]) -> str:
    """A ``hints.tools`` catalog pinning every tool's current kind (unknown ones to fill in)."""
    lines = ["hints:", "  tools:"]
    for tool in tools:
        kind, source = tool.kind
        note = f"  # {_why(kind, source)}" if source != "catalog" else ""
        lines.append(f"    - {{name: {json.dumps(tool.name)}, kind: {kind or 'other'}}}{note}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    if not args.files and not args.store:
        raise UsageError("name trace files or --store PATH")
    # Unreadable files, a bad configuration and a missing store raise UsageError.
    tools = from_store(args.store, args.runs) if args.store else from_files(args.files, args.config)
    if args.format == "json":
        print(json.dumps([t.as_dict() for t in tools], indent=2))
    elif args.format == "yaml":
        print(as_yaml(tools), end="")
    else:
        rows = [[d["tool"], d["kind"] or "?", d["why"], d["calls"], ", ".join(d["agents"]) or "-",
                 "; ".join(d["reasons"]) or "-"] for d in map(ToolSeen.as_dict, tools)]
        print(text_table(["tool", "kind", "why", "calls", "agents", "reason"], rows) if rows else "no tool calls found")
    return 0
