"""The shape of one framework family's table: what its spans, tools and words mean.

Each family package under ``processors/frameworks/`` declares one :class:`Framework` as its
``FRAMEWORK``; the registry (``processors/frameworks/__init__.py``) merges them into one
:class:`Registry` that the normalizers, hint derivation, the team model and the detectors read.
Every field is optional: a family states only what it has. Functions here are small and pure,
except the run rewrites, which change a run in place as part of hint derivation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

if TYPE_CHECKING:
    from mast_otel.processors.model import Role, Run

# Sets a span's fields from a span's name and attributes (capped at ``limit`` characters); its role, or None.
Fill = Callable[[Any, str, Mapping[str, Any], int], "Role | None"]
# Reads one attribute's value: the text it holds, or None.
ValueReader = Callable[[Any], "str | None"]
# Unwraps a tool value's envelope (a dict): the value inside (parsed by the caller when it is
# JSON text), or NOT_AN_ENVELOPE. Declared with a key the envelope always has, so a value
# without any envelope's key is told apart in one set operation.
Envelope = Callable[[dict], Any]
# A tool's output as its instrumentation recorded it: (the tool's own output, why it failed or None),
# or None when it is no record of this framework's.
OutputRecord = Callable[[Any], "tuple[Any, str | None] | None"]
# Marks a span no convention claims as a framework's own state marker (sets its fields): True when it did.
Marker = Callable[[Any, Any], bool]
# Changes a run in place before anything reads its agents; ``state`` is shared by one run's rewrites.
RunRewrite = Callable[["Run", dict], object]

NOT_AN_ENVELOPE = object()

# How a framework's spans show one unit of its step budget (``StepBudget.count``):
# "own_span": a span of the framework's own around each unit's model and tool calls (one per unit;
#   calls directly under the agent span, such as a planning call or the answer forced at the limit,
#   are outside every unit);
# "model_call": each model call of the agent (not a tool's own model call) is one unit;
# "tool_call": each tool call of the agent is one unit.
UnitCount = Literal["own_span", "model_call", "tool_call"]


@dataclass(frozen=True)
class StepBudget:
    """A framework's step budget: the setting, the unit it counts, how the spans show that unit,
    and where the budget is stated. Detection compares the units an agent used, counted this way,
    with the budget its agent span states (``keys``) or its limit error names (``stated``)."""

    setting: str  # the framework's name for it: "max_steps", "max_turns", "recursion_limit"
    unit: str  # what one unit is, plural, as a finding says it: "action steps", "model turns"
    count: UnitCount
    keys: tuple[str, ...] = ()  # agent span attributes stating the budget (an int)
    stated: str | None = None  # a regular expression whose first group is the budget in its limit error
    default: int | None = None  # the documented default when none is set (None: no limit unless set)
    # True: the framework stops an agent once its units reach the budget, so an agent whose units
    # reached it used its whole budget (no unit past it ever shows); False: only units past it overran
    stops_at_budget: bool = False


@dataclass(frozen=True)
class Dialect:
    """A framework's own span attributes, which no generic convention reads: its spans carry
    ``key``, and ``fill`` reads them. Dialects are tried after OpenInference and OpenLLMetry
    and before GenAI (their model calls may carry a few ``gen_ai.*`` keys too)."""

    key: str
    fill: Fill


@dataclass(frozen=True)
class Framework:
    """What one framework family means, as declared tables (see the field comments)."""

    name: str  # the family's folder name
    spellings: tuple[str, ...] = ()  # how people and instrumentations write its name (the name test reads them)

    # Its own span attributes, read by its own normalizer.
    dialect: Dialect | None = None

    # Limits (hint derivation): regular expressions in the shapes of HintsConfig's pattern lists.
    limit_errors: tuple[str, ...] = ()  # an agent span's error or finish reason: its step/turn limit stopped the run
    time_limit_errors: tuple[str, ...] = ()  # its own time limit ran out
    guardrail_errors: tuple[str, ...] = ()  # its own check of the answer rejected every attempt it allowed
    limit_answers: tuple[str, ...] = ()  # a graceful answer or forced-answer prompt at its limit

    # Tools.
    final_answer_tools: frozenset[str] = frozenset()  # tools whose call only hands over the answer (folded names)
    answer_tool_prefixes: tuple[str, ...] = ()  # prefixes of answer tools' generated names
    envelopes: tuple[tuple[str, Envelope], ...] = ()  # (a key it has, unwrap): per-call records around a tool value
    closing_envelopes: tuple[tuple[str, Envelope], ...] = ()  # the same, tried after the generic content blocks
    message_dumps: tuple[Envelope, ...] = ()  # a dump around a tool message, opened before the message's status is read
    generated_id_prefixes: tuple[str, ...] = ()  # prefixes of its generated call ids (``<prefix>_...``)
    tool_output_records: tuple[OutputRecord, ...] = ()  # a tool span's output as a record of the call
    tool_status_keys: tuple[str, ...] = ()  # a tool span attribute whose "error" / "failed" says the call failed
    tool_call_finishes: frozenset[str] = frozenset()  # finish reasons of a model turn that asked for tools
    task_tool_outputs: tuple[OutputRecord, ...] = ()  # the same, for a tool call written as a task span

    # Teams.
    handoff_tools: frozenset[str] = frozenset()  # its tools that hand the run to another agent (snake_case names)
    wrapper_agents: frozenset[str] = frozenset()  # agent span names that wrap a team or graph: no agent themselves
    handoff_target_keys: tuple[str, ...] = ()  # handoff tool arguments that name the receiving agent
    agent_keys: tuple[str, ...] = ()  # tool arguments that name an agent and nothing else (a delegation tool)
    fresh_start_handoffs: frozenset[str] = frozenset()  # handoff tools whose receiver starts afresh by design
    agent_methods: tuple[str, ...] = ()  # methods an instrumentation names agent spans after (``<agent>.<method>``)
    leader_keys: tuple[str, ...] = ()  # a workflow span carrying one is a team's leader agent, named by its value
    workflow_suffixes: tuple[str, ...] = ()  # suffixes a workflow span's name adds to the agent's name
    member_of: Callable[[Mapping[str, Any]], "str | None"] | None = None  # the team member a span runs in
    member_marker: str | None = None  # a substring of the attribute ``member_of`` reads, told before parsing
    run_rewrites: tuple[RunRewrite, ...] = ()  # before anything reads the run's agents
    team_rewrites: tuple[RunRewrite, ...] = ()  # after model-call wrappers and answer tools leave the steps

    # What its agent, model and tool spans say in attributes of their own.
    agent_task_keys: tuple[str, ...] = ()  # an agent span's task, as text
    agent_answers: tuple[tuple[str, ValueReader], ...] = ()  # (key, reader): an agent span's answer
    agent_output_answers: tuple[ValueReader, ...] = ()  # an agent span's generic output value read as its answer
    answer_tool_keys: tuple[tuple[str, Callable[[Any], tuple[str, ...]]], ...] = ()  # a model call's answer tools
    step_budgets: tuple[StepBudget, ...] = ()  # its step budgets: setting, unit, where stated (see StepBudget)
    state_markers: tuple[Marker, ...] = ()  # a task span that only names the current agent
    session_id_keys: tuple[str, ...] = ()  # its own attributes holding the session (conversation) id


@dataclass(frozen=True)
class Registry:
    """Every family's table merged: what the shared code reads. Built once, at first use."""

    families: tuple[Framework, ...]
    dialects: tuple[tuple[str, Fill], ...]
    limit_errors: tuple[str, ...]
    time_limit_errors: tuple[str, ...]
    guardrail_errors: tuple[str, ...]
    limit_answers: tuple[str, ...]
    final_answer_tools: frozenset[str]
    answer_tool_prefixes: tuple[str, ...]
    envelopes: tuple[tuple[str, Envelope], ...]
    closing_envelopes: tuple[tuple[str, Envelope], ...]
    envelope_keys: frozenset[str]  # every envelope's key, opening and closing
    message_dumps: tuple[Envelope, ...]
    generated_id_prefixes: tuple[str, ...]
    tool_output_records: tuple[OutputRecord, ...]
    tool_status_keys: tuple[str, ...]
    tool_call_finishes: frozenset[str]
    task_tool_outputs: tuple[OutputRecord, ...]
    handoff_tools: frozenset[str]
    wrapper_agents: frozenset[str]
    handoff_target_keys: tuple[str, ...]
    agent_keys: tuple[str, ...]
    fresh_start_handoffs: frozenset[str]
    agent_methods: tuple[str, ...]
    leader_keys: tuple[str, ...]
    workflow_suffixes: tuple[str, ...]
    members: tuple[tuple[str, Callable[[Mapping[str, Any]], "str | None"]], ...]
    run_rewrites: tuple[RunRewrite, ...]
    team_rewrites: tuple[RunRewrite, ...]
    agent_task_keys: tuple[str, ...]
    agent_answers: tuple[tuple[str, ValueReader], ...]
    agent_output_answers: tuple[ValueReader, ...]
    answer_tool_keys: tuple[tuple[str, Callable[[Any], tuple[str, ...]]], ...]
    step_budgets: tuple[tuple[str, StepBudget], ...]  # (family name, one of its step budgets), in the families' order
    step_budget_keys: tuple[tuple[str, str], ...]  # (agent span attribute stating a budget, its family's name)
    state_markers: tuple[Marker, ...]
    session_id_keys: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every family's name and known spellings."""
        return tuple(dict.fromkeys(n for f in self.families for n in (f.name, *f.spellings)))

    def family(self, name: str) -> Framework:
        return next(f for f in self.families if f.name == name)

    def stated_budget(self, name: str) -> StepBudget | None:
        """The step budget family ``name`` states on its agent spans (the one ``RunHints.budget_framework`` means)."""
        return next((b for f, b in self.step_budgets if f == name and b.keys), None)

    def shown_name(self, name: str) -> str:
        """How a finding names family ``name``: its first spelling."""
        family = next((f for f in self.families if f.name == name), None)
        return family.spellings[0] if family is not None and family.spellings else name


def merge(families: tuple[Framework, ...]) -> Registry:
    """One registry from the families' tables, in the families' order."""
    return Registry(
        families=families,
        dialects=tuple((f.dialect.key, f.dialect.fill) for f in families if f.dialect is not None),
        members=tuple((f.member_marker or "", f.member_of) for f in families if f.member_of is not None),
        envelope_keys=frozenset(k for f in families for k, _ in (*f.envelopes, *f.closing_envelopes)),
        limit_errors=tuple(x for f in families for x in f.limit_errors),
        time_limit_errors=tuple(x for f in families for x in f.time_limit_errors),
        guardrail_errors=tuple(x for f in families for x in f.guardrail_errors),
        limit_answers=tuple(x for f in families for x in f.limit_answers),
        answer_tool_prefixes=tuple(x for f in families for x in f.answer_tool_prefixes),
        envelopes=tuple(x for f in families for x in f.envelopes),
        message_dumps=tuple(x for f in families for x in f.message_dumps),
        closing_envelopes=tuple(x for f in families for x in f.closing_envelopes),
        generated_id_prefixes=tuple(x for f in families for x in f.generated_id_prefixes),
        tool_output_records=tuple(x for f in families for x in f.tool_output_records),
        task_tool_outputs=tuple(x for f in families for x in f.task_tool_outputs),
        tool_status_keys=tuple(x for f in families for x in f.tool_status_keys),
        handoff_target_keys=tuple(x for f in families for x in f.handoff_target_keys),
        agent_keys=tuple(x for f in families for x in f.agent_keys),
        agent_methods=tuple(x for f in families for x in f.agent_methods),
        leader_keys=tuple(x for f in families for x in f.leader_keys),
        workflow_suffixes=tuple(x for f in families for x in f.workflow_suffixes),
        run_rewrites=tuple(x for f in families for x in f.run_rewrites),
        team_rewrites=tuple(x for f in families for x in f.team_rewrites),
        agent_task_keys=tuple(x for f in families for x in f.agent_task_keys),
        agent_answers=tuple(x for f in families for x in f.agent_answers),
        agent_output_answers=tuple(x for f in families for x in f.agent_output_answers),
        answer_tool_keys=tuple(x for f in families for x in f.answer_tool_keys),
        step_budgets=tuple((f.name, b) for f in families for b in f.step_budgets),
        step_budget_keys=tuple((k, f.name) for f in families for b in f.step_budgets for k in b.keys),
        state_markers=tuple(x for f in families for x in f.state_markers),
        session_id_keys=tuple(x for f in families for x in f.session_id_keys),
        final_answer_tools=frozenset(x for f in families for x in f.final_answer_tools),
        fresh_start_handoffs=frozenset(x for f in families for x in f.fresh_start_handoffs),
        handoff_tools=frozenset(x for f in families for x in f.handoff_tools),
        tool_call_finishes=frozenset(x for f in families for x in f.tool_call_finishes),
        wrapper_agents=frozenset(x for f in families for x in f.wrapper_agents),
    )
