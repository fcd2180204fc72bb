"""LlamaIndex's AgentWorkflow, as OpenLLMetry records it: every workflow step is a task span named
``AgentWorkflow.task`` with no agent attribute, all below the one workflow span, so its spans do not
say which agent took a step. Which agent runs changes only through the workflow's ``handoff`` tool
(arguments ``{"to_agent": ..., "reason": ...}``, written even without content), whose result says the
named agent "is now handling" the request: the steps after a handoff to X are X's, until the next.

The root agent, which runs before any handoff, is named only in the steps' content
(``current_agent_name`` in ``traceloop.entity.output``); without content its steps stay the
workflow's, under the workflow's own name, since nothing in the spans names that agent.
"""

from __future__ import annotations

import hashlib
import json
import re

from typing import Any

from mast_otel.processors.frameworks.table import NOT_AN_ENVELOPE, Framework, StepBudget
from mast_otel.processors.model import AGENT, Run, RunHints, Span

HANDOFF_TOOL = "handoff"
_TO_AGENT = re.compile(r'"to_agent"\s*:\s*"([^"]{1,200})"')
_NOW_HANDLING = "is now handling"
# The workflow state's agent in a step's event content ('"current_agent_name": "coordinator"').
CURRENT_AGENT = re.compile(r'"current_agent_name"\s*:\s*"([^"]{1,200})"')
STAND_IN = "LlamaIndex AgentWorkflow: the agent a handoff named runs the steps until the next handoff"
STATE_MARKER = "LlamaIndex AgentWorkflow state: names the current agent, holds no step"
ROOT_STAND_IN = "LlamaIndex AgentWorkflow: the root agent, named in the workflow state (current_agent_name)"


def root_agent_name(text: str | None) -> str | None:
    """The workflow state's current agent in a step's event content, when content was captured."""
    found = CURRENT_AGENT.search(text or "")
    return found.group(1) if found else None


def _target(span: Span) -> str | None:
    """The agent a successful AgentWorkflow handoff hands to; ``None`` for another tool or a refused handoff."""
    if span.tool_name != HANDOFF_TOOL or span.error:
        return None
    found = _TO_AGENT.search(span.tool_args or "")
    if found is None:
        return None
    if span.tool_result is not None and _NOW_HANDLING not in span.tool_result:
        return None  # the workflow refused it (an unknown agent): the handing agent keeps the run
    return found.group(1)


def read_state_markers(run: Run) -> str | None:
    """Drop the workflow-state marker spans (in place): the root agent they name first, if any."""
    markers = [s for s in run.spans if s.derived and s.derived.get("agent") == STATE_MARKER]
    if not markers:
        return None
    dropped = {id(s) for s in markers}
    run.spans = [s for s in run.spans if id(s) not in dropped]
    run.forget_views()
    return min(markers, key=lambda s: s.start_ns).agent_name


def agents_by_handoff(run: Run, root: str | None) -> bool:
    """Give each step of an AgentWorkflow run to the agent that took it (in place): a stand-in agent
    span per stretch between successful handoffs, named after the handoff's ``to_agent``; the stretch
    before the first handoff to ``root`` when the content named it, else left to the workflow span.
    Returns whether anything changed."""
    agent_spans = run.agent_spans
    if len(agent_spans) != 1 or not agent_spans[0].workflow:
        return False
    workflow = agent_spans[0]
    steps = sorted((s for s in run.steps if run.agent_of(s) is workflow), key=lambda s: s.start_ns)
    cuts = [(s.end_ns, name) for s in steps if (name := _target(s)) is not None]
    if not cuts:
        return False
    if root:
        cuts.insert(0, (workflow.start_ns, root))
    added = []
    for i, (start, name) in enumerate(cuts):
        end = cuts[i + 1][0] if i + 1 < len(cuts) else workflow.end_ns
        key = f"{workflow.span_id}:{i}".encode()
        agent = Span(workflow.trace_id, hashlib.blake2b(key, digest_size=8).hexdigest(), workflow.span_id,
                     f"invoke_agent {name}", start, max(start, end), role=AGENT, service_name=workflow.service_name,
                     convention=workflow.convention, agent_name=name, hints=RunHints(),
                     derived={"agent": ROOT_STAND_IN if root and i == 0 else STAND_IN})
        for step in steps:
            if start <= step.start_ns and (i + 1 == len(cuts) or step.start_ns < cuts[i + 1][0]):
                step.parent_span_id = agent.span_id
        added.append(agent)
    run.spans = sorted(run.spans + added, key=lambda s: s.start_ns)
    run.forget_views()
    return True


def mark_state(span: Any, output: Any) -> bool:
    """A workflow step whose content names the workflow's current agent: kept as a marker agent span
    (fields set on ``span``) that hint derivation reads for the root agent's name, then drops."""
    name = root_agent_name(output) if isinstance(output, str) else None
    if name is None:
        return False
    span.role, span.convention, span.agent_name = AGENT, "openllmetry", name
    span.workflow = True  # not a real agent span: the workflow span keeps standing for the run
    span.derived = {"agent": STATE_MARKER}
    return True


def call_record_output(value: Any) -> tuple[Any, str | None] | None:
    """What the tool returned, from LlamaIndex's call record (``tool_name``, ``tool_kwargs``, a fresh
    ``tool_id``, ``tool_output``), which holds it under ``tool_output``."""
    if isinstance(value, str) and '"tool_output"' in value:
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return None
        if isinstance(parsed, dict) and "tool_output" in parsed:
            return parsed["tool_output"], None
    return None


def _tool_output_envelope(value: dict) -> Any:
    """A ``ToolOutput`` (``raw_output`` beside ``tool_name``): the raw output."""
    return value["raw_output"] if "tool_name" in value else NOT_AN_ENVELOPE


def _drop_markers(run: Run, state: dict) -> None:
    state["root"] = read_state_markers(run)  # before anything reads the run's agents


def _hand_off(run: Run, state: dict) -> None:
    if len(run.agent_spans) == 1:  # an AgentWorkflow: its handoffs say which agent runs
        agents_by_handoff(run, state.get("root"))


# An agent workflow's ``max_iterations`` counts agent iterations (one model turn each, with the tool
# calls it asked for) over one run; at it the run raises "Max iterations of 20 reached". Default 20;
# no span states it.
STEP_BUDGET = StepBudget("max_iterations", "iterations", "model_call", stated=r"\bmax iterations of (\d+) reached\b",
                         default=20, stops_at_budget=True)

FRAMEWORK = Framework(
    name="llamaindex",
    step_budgets=(STEP_BUDGET,),
    spellings=("LlamaIndex", "llama_index", "llama-index"),
    envelopes=(("raw_output", _tool_output_envelope),),
    handoff_target_keys=("to_agent",),
    workflow_suffixes=(".workflow",),  # "ReActAgent.workflow"
    state_markers=(mark_state,),
    task_tool_outputs=(call_record_output,),
    run_rewrites=(_drop_markers,),
    team_rewrites=(_hand_off,),
)
