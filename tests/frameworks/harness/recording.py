"""Runs every scenario through one framework and writes what its instrumentation exported.

A recorder script builds the framework's agent and calls :func:`record_all` with a function
that runs one scenario. Spans go through the OpenTelemetry SDK to an in-memory exporter and
are written, in the order they ended (the order an exporter sends them), as OTLP/JSON, one
``ExportTraceServiceRequest`` per file: ``<out>/<scenario>.json``. Log records (where an
instrumentation sends GenAI events as logs) go through the SDK's logger provider to an
in-memory exporter and, when a run emitted any, are written the same way as one
``ExportLogsServiceRequest``: ``<out>/<scenario>.logs.json``. ``<out>/manifest.json`` names
the framework, its instrumentation, the installed versions, the content mode and the
switches that set it, what each run did (model calls, tool calls, the exception it ended
with, spans and log records) and which scenarios the framework cannot express, and why.

Content modes (``--content``): ``off`` no content anywhere, ``spans`` content on spans only,
``events`` content in events (log records) only, ``both``. Each recorder maps a mode to its
instrumentation's own switches and says in the manifest which modes it lacks.
"""

from __future__ import annotations

import argparse
import base64
import json
import platform
import sys
import traceback
from importlib import metadata
from pathlib import Path
from typing import Callable

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry._logs import set_logger_provider
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .cluster import Cluster
from .scenarios import SCENARIOS, Scenario
from .stub_model import StubModel

try:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
except ImportError:  # SDK before 1.39 names it InMemoryLogExporter
    from opentelemetry.sdk._logs.export import InMemoryLogExporter as InMemoryLogRecordExporter

SERVICE = "sre-agent"
CONTENT_MODES = ("off", "spans", "events", "both")
_ID_KEYS = ("traceId", "spanId", "parentSpanId")

Runner = Callable[[Scenario, StubModel, Cluster], object]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Record the framework corpus for one framework.")
    parser.add_argument("--out", type=Path, required=True, help="folder for <scenario>.json and manifest.json")
    parser.add_argument("--no-content", action="store_true", help="record with the instrumentation's content capture off "
                                                                    "(the same as --content off)")
    parser.add_argument("--content", choices=CONTENT_MODES, default=None,
                        help="where the instrumentation puts content: off, spans (the default), events (log records), both")
    parser.add_argument("--only", nargs="*", help="record only these scenarios")
    args = parser.parse_args()
    if args.content is None:
        args.content = "off" if args.no_content else "spans"
    args.no_content = args.content == "off"
    return args


def tracer_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    """The global tracer provider every framework in this process reports to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider, exporter


def logger_provider() -> tuple[LoggerProvider, InMemoryLogRecordExporter]:
    """The global logger provider: instrumentations that send GenAI events as log records emit here."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    set_logger_provider(provider)
    try:  # instrumentations on the (older) Events API reach the same provider through it
        from opentelemetry._events import set_event_logger_provider
        from opentelemetry.sdk._events import EventLoggerProvider
    except ImportError:
        pass
    else:
        set_event_logger_provider(EventLoggerProvider(provider))
    return provider, exporter


def otlp_json(spans) -> str:
    doc = json_format.MessageToDict(encode_spans(spans))
    return json.dumps(_hex_ids(doc), sort_keys=True)


def otlp_logs_json(records) -> str:
    """Log records as the OTLP/JSON exporter sends them (the SDK's encoder, ids in hex)."""
    doc = json_format.MessageToDict(encode_logs(records))
    return json.dumps(_hex_ids(doc), sort_keys=True)


def _hex_ids(value):
    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def record_all(
    *,
    framework: str,
    instrumentation: str,
    packages: list[str],
    run: Runner,
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
    args: argparse.Namespace,
    cannot: dict[str, str] | None = None,
    dialect: str = "tools",
    notes: str = "",
    logs: tuple[LoggerProvider, InMemoryLogRecordExporter] | None = None,
    switches: dict[str, str] | None = None,
    modes_lacking: dict[str, str] | None = None,
    scenarios: tuple[str, ...] | None = None,
) -> None:
    """Record every scenario (except those in ``cannot``: name -> why the framework cannot express it).

    ``logs``: the logger provider and its exporter, when the instrumentation may emit log records;
    ``switches``: the settings that put content where ``args.content`` says (for the manifest);
    ``modes_lacking``: content mode -> why the instrumentation has no such mode;
    ``scenarios``: record only these (a small corpus), else every scenario.
    """
    cannot = dict(cannot or {})
    if args.content not in ("off", "spans") and logs is None:
        raise SystemExit(f"{framework}: this recorder records no log records, so it has no content mode {args.content!r}")
    if args.content in (modes_lacking or {}):
        raise SystemExit(f"{framework}: no content mode {args.content!r}: {(modes_lacking or {})[args.content]}")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    with StubModel(dialect=dialect) as stub:
        for scenario in SCENARIOS:
            if args.only and scenario.name not in args.only:
                continue
            if scenarios is not None and scenario.name not in scenarios:
                continue
            if scenario.name in cannot:
                continue
            cluster = scenario.new_cluster()
            stub.load(scenario.script())
            exporter.clear()
            if logs:
                logs[1].clear()
            ended_with = None
            try:
                run(scenario, stub, cluster)
            except Exception as exc:  # a framework's own limit error is part of the recording
                ended_with = f"{type(exc).__name__}: {exc}"[:300]
                if not scenario.needs & {"limit", "raises"}:
                    traceback.print_exc()
            provider.force_flush()
            spans = exporter.get_finished_spans()
            (args.out / f"{scenario.name}.json").write_text(otlp_json(spans) + "\n")
            records = ()
            if logs:
                logs[0].force_flush()
                records = logs[1].get_finished_logs()
                if records:
                    (args.out / f"{scenario.name}.logs.json").write_text(otlp_logs_json(records) + "\n")
            runs[scenario.name] = {"model_calls": len(stub.requests), "tool_calls": list(cluster.calls),
                                   "raised": ended_with, "spans": len(spans), "log_records": len(records)}
            print(f"{framework}: {scenario.name}: {len(spans)} spans, {len(stub.requests)} model calls, "
                  f"tools {cluster.calls}" + (f", raised {ended_with}" if ended_with else ""), file=sys.stderr)
    manifest = {
        "framework": framework,
        "instrumentation": instrumentation,
        "content_capture": not args.no_content,
        "content_mode": args.content,
        "content_switches": dict(switches or {}),
        "content_modes_lacking": dict(modes_lacking or {}),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in packages},
        "runs": runs,
        "cannot_express": cannot,
        "notes": notes,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
