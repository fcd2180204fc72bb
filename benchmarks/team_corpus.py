"""Team corpus: what the rules find on each framework's team runs, and whom they blame, per scenario.

    .venv/bin/python benchmarks/team_corpus.py [--no-write]

Reads tests/teams/corpus (recorded by tests/teams/record), diagnoses every run with the shipped
defaults (no tool catalog, no mast.* hints) and writes the framework x scenario tables into
docs/teams.md between the ``team_corpus`` markers. A cell names the modes found as the framework
corpus's tables do ("quiet", "missed", "false", "n/a"); where the scenario names a responsible
agent, "agent" or "agent+step" says the attribution named the agent (and its step) right, "wrong
agent" that it did not, "not attributed" that the run was not attributed (nothing said it failed). A step is counted right when it is the model call the label locates.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docblock import write_doc_block  # noqa: E402
from framework_corpus import cell, table  # noqa: E402
from mast_otel.processors.detectors import rule_findings  # noqa: E402
from mast_otel.processors.ingest import responsible  # noqa: E402
from mast_otel.processors.ingest.files import load_runs  # noqa: E402
from mast_otel.processors.attribution import build_diagnosis  # noqa: E402
from mast_otel.processors.team import same_agent  # noqa: E402
from tests.teams.corpus_files import manifests, recordings  # noqa: E402
from tests.teams.harness.scenarios import SCENARIOS  # noqa: E402

DOC = ROOT / "docs" / "teams.md"


def blame(rec, run, diagnosis) -> tuple[str, bool, bool]:
    """The attribution's mark, whether the agent is right and whether the step is."""
    label = rec.scenario.responsible
    if label is None:
        return "", True, True
    who = diagnosis.attribution
    agent_ok = who is not None and same_agent(who.agent, label.agent)
    try:
        step = responsible.locate(run, responsible.Responsible(label.agent, label.tool, label.occurrence))
    except responsible.Unresolved:
        step = None
    step_ok = agent_ok and step is not None and who.step_span_id == step
    mark = "agent+step" if step_ok else "agent" if agent_ok else "not attributed" if who is None else "wrong agent"
    return mark, agent_ok, step_ok


def tables() -> str:
    results: dict[str, dict[str, tuple[str, bool]]] = defaultdict(dict)
    blamed: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # variant -> agent right, step right, labelled
    for rec in recordings():
        (run,) = [r for r in load_runs([rec.path]) if r.steps]
        findings = rule_findings(run)
        text, ok = cell(rec.scenario.expected - (rec.scenario.content_only if rec.variant == "no-content" else frozenset()),
                        rec.scenario.allowed | rec.scenario.content_only, {f.mode for f in findings})
        mark, agent_ok, step_ok = blame(rec, run, build_diagnosis(run, findings))
        if rec.scenario.responsible is not None:
            counts = blamed[rec.variant]
            counts[0], counts[1], counts[2] = counts[0] + agent_ok, counts[1] + step_ok, counts[2] + 1
        results[rec.variant][f"{rec.framework}/{rec.scenario.name}"] = (f"{text}; {mark}" if mark else text, ok)
    frameworks = list(manifests())
    out = []
    for variant, title in (("content", "With content capture"), ("no-content", "With content capture off")):
        text, right, total = table(results[variant], frameworks, SCENARIOS)
        agent, step, labelled = blamed[variant]
        out.append(f"**{title}**: modes right on {right} of {total} runs; of the {labelled} runs whose scenario names a "
                   f"responsible agent, the agent named right on {agent} and its step on {step}.\n\n" + text)
    return "\n\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    body = tables()
    print(body)
    if not args.no_write:
        write_doc_block("team_corpus", body, DOC)


if __name__ == "__main__":
    main()
