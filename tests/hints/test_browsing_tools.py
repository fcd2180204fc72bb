"""A browsing tool is not a write: its kind is never guessed "write" from a word inside its name."""

from __future__ import annotations

import pytest

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.tools.kinds import infer
from mast_otel.processors.model import Role, Run, RunHints, Span

TRACE = "cd" * 16


@pytest.mark.parametrize("name, description", [
    ("visit_page", "Visit a webpage at a given URL and return its text."),
    ("page_down", "Scroll the viewport DOWN one page-length in the current webpage and return the new viewport content."),
    ("page_up", "Scroll the viewport UP one page-length in the current webpage and return the new viewport content."),
    ("find_on_page_ctrl_f", "Scroll the viewport to the first occurrence of the search string."),
    ("web_page_post_count", None),
])
def test_a_browsing_tool_is_never_inferred_to_write(name, description):
    inferred = infer(name, description)
    assert inferred is None or inferred[0] != "write", inferred


@pytest.mark.parametrize("name, kind", [
    ("restart_deployment", "write"), ("rollback", "write"), ("apply_patch", "write"),
    ("rollback_deployment", "write"), ("page_oncall", "write"), ("find_on_page", "read"),
])
def test_a_write_verb_that_leads_the_name_still_says_write(name, kind):
    assert infer(name)[0] == kind


def test_a_browsing_run_that_claims_its_answer_is_not_an_unchecked_write():
    """smolagents' GAIA browser tools: the agent read pages and answered; nothing was changed."""
    root = Span(TRACE, "a" * 16, None, "agent.run", 0, 100, role=Role.AGENT, agent_name="web",
                hints=RunHints(final_answer="The answer is 42: I found it and the task is complete."))
    steps = [
        Span(TRACE, f"{i:016x}", root.span_id, name, 10 * i, 10 * i + 5, role=Role.TOOL, tool_name=name,
             args_hash=f"a{i}", result_hash=f"r{i}", tool_result=f"page text {i}")
        for i, name in enumerate(["visit_page", "page_down", "find_on_page_ctrl_f", "page_down"], start=1)
    ]
    run = Run.from_spans(TRACE, [root, *steps], completion="root_ended")
    found = {f.mode for f in rule_findings(run)}
    assert run.hints.claimed_success is True  # the claim is read: only the writes were wrong
    assert "FM-3.2" not in found, found
    assert [s.tool_kind for s in steps] == ["read"] * 4
