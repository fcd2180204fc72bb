"""The recorded limit runs: FM-1.5 says how many of the budget's units the spans show, in the unit
the framework counts, wherever the spans state the budget (smolagents' ``max_steps`` on its run
span) or the limit error names it; and the count is the limit (each run was stopped by it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.frameworks import registry
from mast_otel.processors.ingest.files import load_runs
from tests.frameworks.corpus_files import CORPUS

ROOT = Path(__file__).resolve().parents[2]

# (recorded folder, variant, the words: its unit and its budget)
LIMITS = [
    ("smolagents", "content", r"used 8 of 8 action steps, as smolagents counts them"),
    ("smolagents", "no-content", r"used 8 of 8 action steps, as smolagents counts them"),
    ("smolagents-code", "no-content", r"used 8 of 8 action steps, as smolagents counts them"),
    ("langgraph-openinference", "content", r"used 15 of 15 super-steps, as LangGraph counts them"),
    ("langgraph-openllmetry", "no-content", r"used 15 of 15 super-steps, as LangGraph counts them"),
    ("google-adk", "content", r"used 8 of 8 model calls, as Google ADK counts them"),
    ("llamaindex", "no-content", r"used 8 of 8 iterations, as LlamaIndex counts them"),
    ("pydantic-ai", "content", r"used 8 of 8 model requests, as Pydantic AI counts them"),
    ("openai-agents", "no-content", r"the team was stopped by max steps \(used 8 of 8 model turns, as OpenAI Agents counts them"),
]


@pytest.mark.parametrize("folder, variant, words", LIMITS, ids=[f"{f}/{v}" for f, v, _ in LIMITS])
def test_a_recorded_limit_is_told_in_the_frameworks_unit(folder, variant, words):
    path = CORPUS / folder / ("limit.json" if variant == "content" else "no-content/limit.json")
    [run] = load_runs([path])
    found = [f for f in rule_findings(run) if f.mode == "FM-1.5"]
    assert len(found) == 1 and re.search(words, found[0].explanation), [f.explanation for f in found]


def test_the_detection_docs_list_every_declared_budget():
    """docs/detection.md's table of step budgets says each framework's setting, unit and default as declared."""
    page = (ROOT / "docs" / "detection.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| ") and line.count("|") == 7}
    for family, budget in registry().step_budgets:
        row = rows.get(registry().shown_name(family), "")
        default = str(budget.default) if budget.default is not None else "none"
        assert f"`{budget.setting}`" in row and budget.unit in row and default in row.split("|")[6], (family, budget.setting)
