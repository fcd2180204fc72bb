"""The demo's SRE agent: a tool-calling loop instrumented with ``mast_otel.instrumentation``.

The agent is ordinary: it sends the conversation to a model through ``litellm.completion``,
runs the tool the model asks for inside a ``tool_call`` span, appends the result, and stops at
a final answer or at its step budget. The model is either a simulated policy (answers given to
litellm as ``mock_response``/``mock_tool_calls``) or a real LLM (``--model``). Some incidents
are worked by two agents: a read-only triage agent hands off to a remediation agent. The run's
outcome is the environment's true final state, never what the agent claims.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mast_otel.demo import environment as env
from mast_otel.demo.models import (
    CLAIM_REFUSED, FINAL_NOT_OK, FINAL_OK, OUT_OF_STEPS, PROFILES, REPORT, RUN_ENDED, Action, Profile, SimulatedModel,
    parse_text_action,
)
from mast_otel.processors.usage import UsageError, one_line

if TYPE_CHECKING:
    from mast_otel.instrumentation.guards import GuardConfig

TRIAGE_TOOLS = (*env.READ_TOOLS, env.CLARIFY_TOOL, env.HANDOFF_TOOL)
REMEDIATION_TOOLS = tuple(env.TOOLS)
SINGLE_AGENT_TOOLS = (*env.TOOLS, env.CLARIFY_TOOL)
REMEDIATOR_MAX_STEPS = 8

SYSTEM_PROMPT = (
    "You are an SRE agent for the Kubernetes namespace 'shop'. Use the tools to find the root cause "
    "of the incident and, unless told not to change anything, fix it with the one change that "
    "addresses it. Verify with check_health before claiming success. If the incident does not say "
    "which deployment is affected, ask the user. Finish with a message that starts with "
    f"'{FINAL_OK}:' or 'NOT RESOLVED:' (or 'ROOT CAUSE:' for investigate-only tasks), naming the "
    "deployment and the cause."
)


@dataclass(frozen=True)
class Scenario:
    """One incident to work: what broke and how the request is phrased."""

    kind: str
    ambiguous: bool = False  # the alert does not name the deployment
    read_only: bool = False  # investigate and report only
    handoff: bool = False  # a triage agent hands off to a remediation agent
    max_steps: int = 12


def scenarios(count: int, rng: random.Random) -> list[Scenario]:
    """A varied, reproducible mix of incidents and task shapes."""
    out = []
    for i in range(count):
        shape = rng.random()
        out.append(Scenario(
            kind=env.INCIDENT_KINDS[i % len(env.INCIDENT_KINDS)],
            ambiguous=shape < 0.2,
            read_only=0.2 <= shape < 0.35,
            handoff=shape >= 0.75,
        ))
    return out


def task_text(cluster: env.Cluster, scenario: Scenario) -> str:
    inc = cluster.incident
    if scenario.ambiguous:
        text = "Incident: customers report errors in the shop. Please sort it out."
    else:
        text = f"Incident: {inc.title}. Deployment: {inc.target}."
    if scenario.read_only:
        text += " Investigate only: do not change anything, report the root cause."
    return text


# --- models ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    content: str
    tool_calls: tuple[tuple[str, str, dict[str, Any]], ...]  # (id, name, arguments)


class Model(Protocol):
    name: str
    profile: Profile | None

    def reply(self, messages: list[dict[str, Any]], *, role: str, allowed: tuple[str, ...]) -> Reply: ...


def _tool_schemas(allowed: tuple[str, ...]) -> list[dict[str, Any]]:
    specs = {name: (spec.description, spec.params) for name, spec in env.TOOLS.items()}
    specs[env.CLARIFY_TOOL] = ("Ask the user a question about the incident.", {"question": "the question"})
    specs[env.HANDOFF_TOOL] = ("Hand the incident to the remediation agent.", {"summary": "deployment and finding"})
    return [
        {"type": "function", "function": {
            "name": name, "description": specs[name][0],
            "parameters": {"type": "object", "required": list(specs[name][1]),
                           "properties": {p: {"type": "string", "description": d} for p, d in specs[name][1].items()}},
        }}
        for name in allowed
    ]


def _complete(allowed: tuple[str, ...], **kwargs: Any) -> Any:
    """``litellm.completion`` offering the ``allowed`` tools (none: a plain answer is wanted).

    litellm 1.106.2 imports its MCP gateway (and so the optional ``mcp`` package) whenever
    ``tools`` is passed; our tools are plain functions, so that path is skipped explicitly.
    """
    import litellm

    if allowed:
        kwargs["tools"] = _tool_schemas(allowed)
    return litellm.completion(**kwargs, _skip_mcp_handler=True)


def _parse(response: Any) -> Reply:
    message = response.choices[0].message
    calls = []
    for tc in message.tool_calls or ():
        try:
            args = json.loads(tc.function.arguments or "{}")
        except ValueError:
            args = {}
        calls.append((tc.id, tc.function.name, args if isinstance(args, dict) else {}))
    return Reply(message.content or "", tuple(calls))


class PolicyModel:
    """A simulated model: the policy decides, litellm delivers it as a mocked completion."""

    def __init__(self, profile: Profile, rng: random.Random) -> None:
        self.name = profile.model
        self.profile: Profile | None = profile
        self._policy = SimulatedModel(profile, rng)
        self._calls = 0

    def reply(self, messages: list[dict[str, Any]], *, role: str, allowed: tuple[str, ...]) -> Reply:
        decision = self._policy.decide(messages, role=role, allowed=allowed)
        mock_calls = []
        for name, args in decision.tool_calls:
            self._calls += 1
            mock_calls.append({"id": f"call_{self._calls}", "type": "function",
                               "function": {"name": name, "arguments": json.dumps(args)}})
        response = _complete(
            allowed, model=self.name, custom_llm_provider="openai", messages=messages,
            mock_response=decision.content, mock_tool_calls=mock_calls or None,
        )
        return _parse(response)


class LiteLLMModel:
    """A real model, called with the user's own credentials; the model is the policy."""

    profile: Profile | None = None

    def __init__(self, model: str) -> None:
        self.name = model

    def reply(self, messages: list[dict[str, Any]], *, role: str, allowed: tuple[str, ...]) -> Reply:
        import litellm
        import openai

        litellm.suppress_debug_info = True  # its "Give Feedback" banner would bury the one-line error
        try:
            return _parse(_complete(allowed, model=self.name, messages=messages))
        except openai.APIError as exc:  # litellm's errors derive from openai's: a key, an endpoint, a model name
            raise UsageError(f"model {self.name} failed: {type(exc).__name__}: {one_line(str(exc))[:300]}") from None


def make_model(name: str, rng: random.Random) -> Model:
    """A simulated profile by name (``sim-frontier``...), otherwise a real litellm model string."""
    profile = PROFILES.get(name)
    return PolicyModel(profile, rng) if profile else LiteLLMModel(name)


# --- the agent ------------------------------------------------------------------------------


@dataclass
class RunResult:
    trace_id: str
    model: str
    scenario: Scenario
    outcome: str  # success | failure
    claimed_success: bool | None
    steps: int
    interventions: list[tuple[str, str]] = field(default_factory=list)  # (guard, action), sub-agents included


@dataclass
class _AgentEnd:
    answer: str | None
    reason: str  # final_answer | max_steps | handoff
    steps: int


def run_incident(model: Model, scenario: Scenario, rng: random.Random,
                 guards: GuardConfig | None = None) -> RunResult:
    """Work one incident end to end; returns the true outcome and the run's trace id.

    With ``guards`` the runs (and a handoff's sub-run) are guarded: refused tool calls and
    refused success claims go back to the model, and a run a guard stops asks the model once
    for its final answer.
    """
    from mast_otel.instrumentation import agent_run

    cluster = env.make_cluster(scenario.kind, rng)
    task = task_text(cluster, scenario)
    name, role, allowed = (
        ("sre-triage", "triage", TRIAGE_TOOLS) if scenario.handoff else ("sre-agent", "sre", SINGLE_AGENT_TOOLS)
    )
    with agent_run(
        name, max_steps=scenario.max_steps, ambiguous=scenario.ambiguous,
        constraints=("read_only",) if scenario.read_only else (), role=role, allowed_tools=allowed, task=task,
        guards=guards,
    ) as run:
        interventions: list[tuple[str, str]] = []
        end = _agent_loop(model, cluster, task, role, allowed, scenario.max_steps, run, interventions)
        _record_end(run, end)
        if run.guard is not None:
            interventions += [(i.guard, i.action) for i in run.guard.interventions]
        if scenario.read_only:
            ok = not cluster.writes and env.diagnosis_is_correct(cluster, end.answer)
        else:
            ok = cluster.resolved
        outcome = "success" if ok else "failure"
        run.set_outcome(outcome, score=1.0 if ok else 0.0)
        trace_id = format(run.span.get_span_context().trace_id, "032x")
    return RunResult(trace_id, model.name, scenario, outcome, _claims_success(end.answer), end.steps, interventions)


def _record_end(run: Any, end: _AgentEnd) -> None:
    """Final answer, claimed success and termination reason on the agent's span (the final answer
    itself already went through the verification gate, when the run is guarded)."""
    if end.answer is not None:
        run.set_final_answer(end.answer)
        run.set_claimed_success(bool(_claims_success(end.answer)))
    run.set_termination_reason(end.reason)


def _claims_success(answer: str | None) -> bool | None:
    """A final answer claims the task done when it reports a fix or (investigate-only) a cause."""
    return None if answer is None else answer.startswith((FINAL_OK, REPORT))


def _agent_loop(model: Model, cluster: env.Cluster, opening: str, role: str, allowed: tuple[str, ...],
                max_steps: int, run: Any = None, interventions: list[tuple[str, str]] | None = None) -> _AgentEnd:
    """Model -> tool -> model ... until a final answer, a handoff or the step budget.

    At the budget the agent stops running tools and asks the model, once, for its final answer
    (the run still ends as ``max_steps``): what a model claims when cut off is part of the run.
    A guarded run (``run.guard``) feeds a refused tool call back as the tool's result and a
    refused success claim back as a user message; a run a guard stops ends like a cut-off run.
    """
    from mast_otel.instrumentation.guards.events import GuardRefusal, RunStopped

    history: list[dict[str, Any]] = [{"role": "user", "content": opening}]
    profile = model.profile
    for step in range(1, max_steps + 1):
        reply = _ask(model, history, role, allowed)
        action = _chosen_action(reply, profile)
        if action is None:
            if run is not None and run.guard is not None:
                refused = run.guard.before_finish(claimed_success=bool(_claims_success(reply.content)), span=run.span)
                if refused is not None and refused.enforced:
                    history.append({"role": "user", "content": f"{CLAIM_REFUSED}: {refused.reason}"})
                    continue
            return _AgentEnd(reply.content, "final_answer", step)
        call_id = reply.tool_calls[0][0] if reply.tool_calls else f"text_{step}"
        name, args = action
        try:
            if name == env.HANDOFF_TOOL:
                return _AgentEnd(_handoff(model, cluster, args, run, interventions), "handoff", step)
            result = _run_tool(cluster, name, args)
        except RunStopped as stopped:
            history.append({"role": "user", "content": f"{RUN_ENDED}: {stopped.intervention.reason}. "
                            "No more tools. Give your final answer now."})
            return _AgentEnd(_ask(model, history, role, ()).content or None, stopped.termination_reason, step)
        except GuardRefusal as refused:
            result = refused.refusal()
        history.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": json.dumps(result)})
    history.append({"role": "user", "content": f"{OUT_OF_STEPS} ({max_steps}): no more tools. Give your final answer now."})
    answer = _ask(model, history, role, ()).content or None
    if run is not None and run.guard is not None and answer is not None:
        refusal = run.guard.before_finish(claimed_success=bool(_claims_success(answer)), span=run.span)
        if refusal is not None and refusal.enforced:  # no step left to check: the run ends without the claim
            answer = f"{FINAL_NOT_OK}: stopped at the step budget without a passing check ({refusal.failure_mode})."
    return _AgentEnd(answer, "max_steps", max_steps)


def _ask(model: Model, history: list[dict[str, Any]], role: str, allowed: tuple[str, ...]) -> Reply:
    """One model call on the (possibly trimmed) history; the reply is appended to it."""
    profile = model.profile
    if profile and profile.context_messages and len(history) > profile.context_messages:
        history[:] = _compact(history)
    reply = model.reply([{"role": "system", "content": SYSTEM_PROMPT}, *history], role=role, allowed=allowed)
    history.append(_assistant_message(reply))
    return reply


def _compact(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A naive context manager: over the window, keep only the latest tool exchange (the task too goes)."""
    starts = [i for i, m in enumerate(history) if m["role"] == "assistant"]
    return history[starts[-1]:] if starts else history


def _assistant_message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in reply.tool_calls
        ]
    return message


def _chosen_action(reply: Reply, profile: Profile | None) -> Action | None:
    """What the agent executes: a ReAct model's text action wins over its structured call."""
    if profile and profile.react:
        text_action = parse_text_action(reply.content)
        if text_action:
            return text_action
    if reply.tool_calls:
        _, name, args = reply.tool_calls[0]
        return name, {str(k): str(v) for k, v in args.items()}
    return None


def _run_tool(cluster: env.Cluster, name: str, args: dict[str, str]) -> dict[str, Any]:
    """One tool call inside its span; a refused call is recorded as an error and shown to the model."""
    from mast_otel.instrumentation import tool_call

    kind = env.TOOLS[name].kind if name in env.TOOLS else ("clarify" if name == env.CLARIFY_TOOL else "other")
    try:
        with tool_call(name, kind=kind, arguments=args) as call:
            if name == env.CLARIFY_TOOL:
                target = cluster.incident.target
                result = {"answer": f"The alert is about the {target} deployment.", "deployment": target}
            else:
                result = env.call_tool(cluster, name, args)
            call.set_result(result)
            if kind == "verify":
                call.set_verification(bool(result.get("passed")))
            return result
    except env.ToolError as exc:
        return {"error": str(exc)}


def _handoff(model: Model, cluster: env.Cluster, args: dict[str, str], parent: Any = None,
             interventions: list[tuple[str, str]] | None = None) -> str | None:
    """The triage agent's handoff: a remediation agent works on from the triage summary."""
    from mast_otel.instrumentation import agent_run, tool_call

    summary = args.get("summary", "")
    guards = parent.guards if parent is not None else None
    with tool_call(env.HANDOFF_TOOL, kind="handoff", arguments=args) as call:
        with agent_run("sre-remediator", max_steps=REMEDIATOR_MAX_STEPS, role="remediation",
                       allowed_tools=REMEDIATION_TOOLS, task=summary, guards=guards) as sub:
            end = _agent_loop(model, cluster, f"Handoff from triage. {summary}", "remediation",
                              REMEDIATION_TOOLS, REMEDIATOR_MAX_STEPS, sub, interventions)
            _record_end(sub, end)
            if sub.guard is not None and interventions is not None:
                interventions += [(i.guard, i.action) for i in sub.guard.interventions]
        call.set_result({"accepted": True, "answer": end.answer})
    return end.answer
