"""``mast-otel analyze FILES``: diagnose exported traces or step-list logs, offline; OTLP/JSON logs
files among them lend their GenAI records' content to the spans they name."""

from __future__ import annotations

import argparse
import json
import sys

from mast_otel.processors.model import Diagnosis, Run
from mast_otel.processors.offline.inputs import load, processor_config, text_table
from mast_otel.processors.team_view import team_lines
from mast_otel.processors.usage import UsageError, write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="OTLP JSON exports (traces, and logs carrying GenAI content), JSON lines of spans, or step-list JSON")
    parser.add_argument("--format", choices=("table", "json", "html"), default="table",
                        help="table for reading, json for scripts, html for a self-contained report (default table)")
    parser.add_argument("--output", "-o", metavar="PATH", help="write here instead of standard output")
    parser.add_argument("--config", metavar="PATH", help="processor YAML; its detection and hints sections are used")


def analyze(files: list[str], config_path: str | None = None) -> dict:
    """Diagnose every run in ``files`` and summarize (the JSON output)."""
    from mast_otel.processors.detectors import rule_findings
    from mast_otel.processors.ingest.files import LoadReport
    from mast_otel.processors.attribution import build_diagnosis
    from mast_otel.processors.offline.summary import summarize
    from mast_otel.processors.service.store.run_steps import run_steps
    from mast_otel.processors.step_names import StepNames
    from mast_otel.processors.team_view import team_view

    config = processor_config(config_path)
    overrides = config.detection.severity_overrides
    report = LoadReport()
    teams: list[dict] = []

    def diagnosed(run: Run) -> tuple[Diagnosis, StepNames]:
        d = build_diagnosis(run, rule_findings(run, config.detection, config.hints), severity_overrides=overrides)
        steps = run_steps(run)  # after the rules: each step with the agent that took it
        teams.append(team_view(steps).as_dict())
        return d, StepNames(steps)

    summary = summarize(map(diagnosed, load(files, report)), overrides)
    for row, team in zip(summary["runs"], teams):
        row["team"] = team
    if not report.runs:  # empty tables and exit 0 would read as "nothing wrong"
        raise UsageError(f"no agent run in {', '.join(files)} ({report.read()} read): expected OTLP JSON or "
                         "protobuf exports, JSON lines of spans, or step-list JSON")
    summary["input"] = {**report.as_dict(), "summary": report.summary()}
    return summary


def as_table(summary: dict) -> str:
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    runs = text_table(["trace", "model", "agents", "outcome", "modes"],
                      [[r["trace_id"], r["model"], ", ".join(r["team"]["agents"]) or r["agent"] or "-", r["outcome"],
                        ", ".join(r["modes"]) or "-"] for r in summary["runs"]])
    teams = [f"{r['trace_id']}: {', '.join(r['team']['agents'])}\n" + "".join(f"  {line}\n" for line in team_lines(r["team"]))
             for r in summary["runs"] if team_lines(r["team"])]
    models = text_table(
        ["model", "runs", "modes/run", "failed", "modes/failed run", "fatal-rated", "top modes"],
        [[m, s["runs"], f(s["modes_per_run"]), s["failed_runs"], f(s["modes_per_failed_run"]),
          "-" if s["fatal_share"] is None else f"{s['fatal_share']:.0%}",
          ", ".join(s["top_modes"]) or "-"] for m, s in summary["models"].items()])
    notes = [f"  duplicate: {d}" for d in summary["input"]["duplicates"]]
    team_part = "\nteams (handoffs and who made each tool call)\n" + "".join(teams) if teams else ""
    return (f"{summary['input']['summary']}\n" + "".join(n + "\n" for n in notes) + f"{runs}\n{team_part}\n{models}\n"
            + findings_text(summary))


def findings_text(summary: dict) -> str:
    """Each run's findings in words: where it went wrong and the evidence, steps named by number, kind and name;
    then, once per mode found, what to do about it."""
    lines: list[str] = []
    for r in summary["runs"]:
        if not r["findings"]:
            continue
        who = r["attribution"]
        where = ""
        if who is not None:
            step = who.get("step_label") or who.get("step_span_id")
            where = f": went wrong at {who.get('agent') or 'unknown agent'}" + (f", {step}" if step else "") + f" ({who['mode']})"
        lines.append(f"{r['trace_id']}{where}")
        for f in r["findings"]:
            lines.append(f"  {f['mode']}: {f['explanation']}")
            if f["evidence_steps"]:
                lines.append(f"    evidence: {'; '.join(f['evidence_steps'])}")
    if not lines:
        return ""
    from mast_otel.processors.offline.summary import advice_by_mode

    todo_lines = []
    for mode, todo in advice_by_mode(summary["runs"]).items():
        guards = f" Guard: {', '.join(todo['guards'])}." if todo["guards"] else ""
        settings = f" Tuned by: {', '.join(todo['settings'])}." if todo["settings"] else ""
        todo_lines.append(f"{mode} {summary['modes'][mode]['name']}: {todo['prevention']}{guards}{settings} "
                          f"See {todo['docs']}.")
    return "\nFindings\n" + "\n".join(lines) + "\n\nWhat to do\n" + "\n".join(todo_lines) + "\n"


def run(args: argparse.Namespace) -> int:
    summary = analyze(args.files, args.config)  # unreadable files and bad configs raise UsageError
    if args.format == "json":
        text = json.dumps(summary, indent=2) + "\n"
    elif args.format == "html":
        from mast_otel.processors.offline.report import render

        text = render(summary)
    else:
        text = as_table(summary)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
