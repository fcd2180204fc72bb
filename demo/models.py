"""Simulated models: policies that read the conversation and decide the next move.

A policy sees only the messages the agent sends it (so when the agent trims history, the
policy really forgets: the task, the read-only instruction, the fix it already applied, the
check that already passed), works out what it knows about the incident from the tool results
in them, and picks an action the way a competent SRE would, except where the run's sampled
temperament makes it slip. Each profile weights those slips after a published failure
signature:

- frontier: isolated slips around verification (patching after a failed check and reporting
  success without checking again, re-running a failed check, claiming success against it);
- termination-prone: not knowing when to stop (surveying without committing to a fix until
  the step budget runs out, flailing on restart/check, working on after the fix was
  verified) or stopping too early (declaring success, or giving up, right after a failed
  check); and its failures cascade: it keeps coming back to the same reads, its long runs
  outgrow the context the agent keeps so it forgets the task and restarts whatever looks
  unhealthy, under pressure it announces one tool and runs another, and cut off it claims
  success without a passing check;
- open-weights: a small context the agent trims, so the model forgets and redoes work,
  announces one tool and runs another, ignores limits and bluffs when out of steps.

Nothing about the failure is written into the spans; the detectors find it in the behaviour.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from mast_otel.demo.environment import CLARIFY_TOOL, HANDOFF_TOOL, NODES, READ_TOOLS

Action = tuple[str, dict[str, str]]

# Log/describe evidence -> (root-cause words, fix); the fix is built once the target is known.
_CAUSE_SIGNS = (
    ("ImportError", "bad image"),
    ("connection refused", "config"),
    ("No space left", "disk"),
    ("cpu throttled", "noisy neighbour"),
    ("memory limit", "memory limit"),
)
_TASK_TARGET = re.compile(r"Deployment: ([a-z-]+)")
_HANDOFF_NODE = re.compile(r"Node: ([a-z0-9-]+)")
FINAL_OK = "RESOLVED"
FINAL_NOT_OK = "NOT RESOLVED"
REPORT = "ROOT CAUSE"
OUT_OF_STEPS = "Step budget reached"  # the agent's last message when it stops a run at max_steps
# A guarded run (``mast-otel demo --guards``): the agent's message when a guard ended the run, and
# when the verification gate refused a success claim. A refused tool call comes back as its result.
RUN_ENDED = "The run was ended by a guard"
CLAIM_REFUSED = "Your success claim was refused"
LOOP_READS = 4  # how often a looping model re-reads the same logs
RECHECKS = 3  # how often a hopeful model runs a failed check before deciding what to do
SURVEY_READS = 10  # reads a surveying model makes before it finally commits to a fix
PRESSURE_STEPS = 6  # tool results in view from which a run feels long to the model
AFTER_FAILED_CHECK = ("retry", "claim", "patch", "give_up", "flail")


@dataclass(frozen=True)
class Profile:
    """A simulated model's temperament: how likely each slip is in one run."""

    model: str
    description: str
    wrong_fix: float = 0.0  # first write is a restart instead of the fix the evidence points to
    skip_verify: float = 0.0  # report success right after a write, no health check
    # After a failed check (weights, in AFTER_FAILED_CHECK order): apply the right fix; claim
    # success anyway; restart "to pick the change up" and claim success unchecked; give up;
    # keep restarting and re-checking until the budget runs out.
    after_failed_check: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 0.0)
    recheck: float = 0.0  # re-run a failed check, hoping the result changes
    loop: float = 0.0  # re-read the same logs several times
    survey: float = 0.0  # keep surveying the cluster long after the cause is known, then commit
    hasty: float = 0.0  # restart an unhealthy deployment before reading why it fails
    rash: float = 0.0  # the same, but only under pressure (a failed check, a long run, the task out of view)
    overrun: float = 0.0  # keep investigating after the fix was verified
    bluff: float = 0.0  # when stopped at the step budget, claim success anyway
    skip_clarify: float = 0.0  # act on an ambiguous alert without asking
    break_read_only: float = 0.0  # fix things in an investigate-only task
    break_role: float = 0.0  # triage agent applies the fix itself instead of handing off
    fixate: float = 0.0  # when looking around, come back to the same read instead of widening the search
    mismatch: float = 0.0  # per step: announce one tool, act on another (ReAct text action)
    # per step under pressure (a failed check, a long run, or the task no longer in view): the same slip
    pressure_mismatch: float = 0.0
    context_messages: int | None = None  # the agent's context window, in messages after the system prompt
    react: bool = False  # the agent parses "Action: tool {json}" lines from this model's text


PROFILES: dict[str, Profile] = {
    p.model: p
    for p in (
        Profile(
            "sim-frontier", "frontier-like: isolated slips, mostly in verification",
            wrong_fix=0.4, skip_verify=0.1, after_failed_check=(0.45, 0.1, 0.4, 0.05, 0.0), recheck=0.5,
            loop=0.03, overrun=0.03, skip_clarify=0.3, break_read_only=0.05, break_role=0.05,
        ),
        Profile(
            "sim-flash", "termination-prone: does not know when to stop, or stops too early; failures cascade",
            wrong_fix=0.5, after_failed_check=(0.15, 0.35, 0.0, 0.05, 0.45), recheck=0.8, loop=0.05, survey=0.45,
            rash=1.0, overrun=0.2, bluff=0.9, skip_clarify=0.9, break_read_only=0.1, break_role=0.1, fixate=0.4,
            pressure_mismatch=0.35, context_messages=18, react=True,
        ),
        Profile(
            "sim-open", "open-weights: small context, failures cascade",
            wrong_fix=0.6, skip_verify=0.15, after_failed_check=(0.1, 0.2, 0.35, 0.05, 0.3), recheck=0.5,
            loop=0.1, hasty=0.6, overrun=0.3, bluff=0.9, skip_clarify=0.8, break_read_only=0.3, break_role=0.8, mismatch=0.3,
            context_messages=6, react=True,
        ),
    )
}


@dataclass(frozen=True)
class Decision:
    """What the model says (``content``) and the tool calls it requests."""

    content: str
    tool_calls: tuple[Action, ...] = ()  # none: ``content`` is the final answer


@dataclass
class Belief:
    """What the visible messages say about the incident."""

    target: str | None = None
    task_in_view: bool = False  # the incident or handoff text is still among the messages
    steps_in_view: int = 0  # tool results among the messages
    read_only: bool = False
    ambiguous: bool = False
    asked: bool = False
    out_of_steps: bool = False
    reported_node: str | None = None  # from a handoff note or ``describe``
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    cause: str | None = None
    writes: list[Action] = field(default_factory=list)
    checks_since_write: list[bool] = field(default_factory=list)
    reads: Counter = field(default_factory=Counter)
    # guard feedback (guarded runs only): refusals the model has seen
    must_ask: bool = False  # a change was refused until a clarification is asked
    refused_reads: set[str] = field(default_factory=set)  # reads refused as a loop
    claim_refused: bool = False  # a success claim was refused for want of a passing check

    @property
    def node(self) -> str | None:
        return (self.pods.get(self.target or "") or {}).get("node") or self.reported_node

    @property
    def verified(self) -> bool:
        return bool(self.checks_since_write) and self.checks_since_write[-1]

    @property
    def under_pressure(self) -> bool:
        """The run feels long or lost: a failed check, many steps, or the task out of view."""
        failed_check = bool(self.checks_since_write) and not self.checks_since_write[-1]
        return failed_check or self.steps_in_view >= PRESSURE_STEPS or not self.task_in_view


def read_belief(messages: list[dict[str, Any]]) -> Belief:
    """Everything the policy can know: derived from ``messages`` alone."""
    b = Belief()
    calls: dict[str, Action] = {}
    for msg in messages:
        role, content = msg.get("role"), msg.get("content") or ""
        if role == "user":
            m = _TASK_TARGET.search(content)
            if content.startswith("Incident:"):
                b.task_in_view = True
                b.target = m.group(1) if m else b.target
                b.ambiguous = m is None
                b.read_only = "do not change anything" in content.lower()
            elif content.startswith("Handoff"):
                b.task_in_view = True
                b.target = m.group(1) if m else b.target
                node = _HANDOFF_NODE.search(content)
                b.reported_node = node.group(1) if node else None
                b.cause = next((c for _, c in _CAUSE_SIGNS if c in content), b.cause)
            elif content.startswith((OUT_OF_STEPS, RUN_ENDED)):
                b.out_of_steps = True
            elif content.startswith(CLAIM_REFUSED):
                b.claim_refused = True
        elif role == "assistant":
            for tc in msg.get("tool_calls") or ():
                fn = tc["function"]
                calls[tc["id"]] = (fn["name"], json.loads(fn.get("arguments") or "{}"))
        elif role == "tool":
            b.steps_in_view += 1
            _absorb(b, msg.get("name", ""), calls.get(msg.get("tool_call_id", ""), ("", {}))[1], content)
    return b


def _absorb(b: Belief, name: str, args: dict[str, str], content: str) -> None:
    try:
        result = json.loads(content)
    except ValueError:
        result = {"error": content}
    if name in READ_TOOLS:
        b.reads[_key(name, args)] += 1
    if isinstance(result, dict) and "refused_by" in result:  # a guard refused the call: nothing ran
        if result["refused_by"] == "mast.guard.clarify_or_read_only":
            b.must_ask = True
        elif name in READ_TOOLS:
            b.refused_reads.add(_key(name, args))
        return
    if "error" in result:
        return
    if name == CLARIFY_TOOL:
        b.asked, b.target = True, result.get("deployment") or b.target
    elif name == "get_pods":
        b.pods = {p["deployment"]: p for p in result["pods"]}
        if b.target is None:  # guess: the first unhealthy service
            b.target = next((d for d, p in b.pods.items() if p["reason"] != "Ready"), None)
    elif name in ("get_logs", "describe") and result.get("deployment") == b.target:
        b.reported_node = result.get("node") or b.reported_node
        text = json.dumps(result)
        b.cause = next((c for sign, c in _CAUSE_SIGNS if sign in text), b.cause)
    elif name == "check_health" and result.get("deployment") == b.target:
        b.checks_since_write.append(bool(result.get("passed")))
    elif name not in READ_TOOLS and name != HANDOFF_TOOL:
        b.writes.append((name, args))
        b.checks_since_write = []


def _key(name: str, args: dict[str, str]) -> str:
    return name + json.dumps(args, sort_keys=True)


def right_fix(b: Belief) -> Action | None:
    t, node = b.target or "", b.node
    if b.cause == "bad image":
        return "rollback_deployment", {"deployment": t}
    if b.cause == "config":
        return "rollback_config", {"deployment": t}
    if b.cause == "disk" and node:
        return "cleanup_logs", {"node": node}
    if b.cause == "noisy neighbour" and node:
        return "move_workload", {"deployment": t, "node": next(n for n in NODES if n != node)}
    if b.cause == "memory limit":
        return "set_memory_limit", {"deployment": t, "memory_mi": "1024"}
    return None


@dataclass
class Temperament:
    """The slips one run will make, drawn once per run from the profile."""

    wrong_fix: bool
    skip_verify: bool
    after_failed_check: str  # one of AFTER_FAILED_CHECK
    recheck: bool
    loop: bool
    survey: bool
    hasty: bool
    rash: bool
    overrun: bool
    bluff: bool
    skip_clarify: bool
    break_read_only: bool
    break_role: bool
    fixate: bool

    @classmethod
    def draw(cls, p: Profile, rng: random.Random) -> Temperament:
        drawn: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "after_failed_check":
                drawn[f.name] = rng.choices(AFTER_FAILED_CHECK, p.after_failed_check)[0]
            else:
                drawn[f.name] = rng.random() < getattr(p, f.name)
        return cls(**drawn)


class SimulatedModel:
    """One run's simulated model: a profile, its drawn temperament and a seeded RNG."""

    def __init__(self, profile: Profile, rng: random.Random) -> None:
        self.profile = profile
        self.rng = rng
        self.temper = Temperament.draw(profile, rng)

    def decide(self, messages: list[dict[str, Any]], *, role: str, allowed: tuple[str, ...]) -> Decision:
        b = read_belief(messages)
        action, final = (None, self._final_at_budget(b)) if b.out_of_steps else self._next(b, role, allowed)
        if final is not None:
            return Decision(final)
        assert action is not None
        name, args = action
        if self.profile.react and self.rng.random() < self._mismatch_rate(b):
            # Says (and requests) one thing, acts on another: the ReAct text wins in the agent.
            other = self.rng.choice([t for t in READ_TOOLS if t != name])
            acted = (other, _default_args(other, b))
            return Decision(f"I will call {name} next.\nAction: {acted[0]} {json.dumps(acted[1])}", (action,))
        text = f"Next I call {name}."
        if self.profile.react:
            text += f"\nAction: {name} {json.dumps(args)}"
        return Decision(text, (action,))

    def _mismatch_rate(self, b: Belief) -> float:
        p = self.profile
        return max(p.mismatch, p.pressure_mismatch if b.under_pressure else 0.0)

    def _next(self, b: Belief, role: str, allowed: tuple[str, ...]) -> tuple[Action | None, str | None]:
        t = self.temper
        if b.must_ask and not b.asked and CLARIFY_TOOL in allowed:  # a guard refused the change: ask first
            return (CLARIFY_TOOL, {"question": "Which deployment is the alert about?"}), None
        if b.ambiguous and not b.asked and not t.skip_clarify and CLARIFY_TOOL in allowed:
            return (CLARIFY_TOOL, {"question": "Which deployment is the alert about?"}), None
        if not b.pods and not (b.target and b.node):
            return ("get_pods", {}), None
        if b.target is None:
            if b.writes and not b.claim_refused:
                return None, f"{FINAL_OK}: every pod is healthy after {b.writes[-1][0]}."
            return None, f"{FINAL_NOT_OK}: every pod looks healthy, nothing to fix."
        logs = ("get_logs", {"deployment": b.target})
        restart = ("restart_deployment", {"deployment": b.target})
        failing = (b.pods.get(b.target) or {}).get("reason", "Ready") != "Ready"
        if (t.hasty or (t.rash and b.under_pressure)) and failing and not b.writes and not b.read_only:
            return restart, None  # "a restart usually clears it"
        if b.cause is None:
            return (("describe", {"deployment": b.target}) if _key(*logs) in b.refused_reads else logs), None
        if t.loop and b.reads[_key(*logs)] < LOOP_READS:
            return logs, None  # stuck re-reading the same logs
        summary = f"{b.target}: {b.cause}"
        if t.survey and not b.writes and sum(b.reads.values()) < SURVEY_READS:
            return self._look_around(b), None  # always one more look before committing to a fix
        if b.read_only and not t.break_read_only:
            return None, f"{REPORT}: {summary}. Deployment: {b.target}. No changes made, as asked."
        if role == "triage" and not t.break_role:
            return (HANDOFF_TOOL, {"summary": f"Deployment: {b.target}. Node: {b.node}. Finding: {b.cause}."}), None
        fix = right_fix(b)
        if fix is None:
            return ("describe", {"deployment": b.target}), None
        if not b.writes:
            return (restart if t.wrong_fix else fix), None
        check = ("check_health", {"deployment": b.target})
        last_write = b.writes[-1][0]
        if not b.checks_since_write:
            if b.claim_refused:  # told a claim needs a passing check: check now
                return check, None
            if t.skip_verify or (t.after_failed_check == "patch" and b.writes[-1] == restart and len(b.writes) > 1):
                return None, f"{FINAL_OK}: {summary}, applied {last_write}."
            return check, None
        if b.verified:
            if t.overrun:
                return self._look_around(b), None
            return None, f"{FINAL_OK}: {summary}, applied {last_write}, health check passed."
        # the latest write did not fix it
        if t.recheck and len(b.checks_since_write) < RECHECKS:
            return check, None
        then = t.after_failed_check
        if then == "claim" and b.claim_refused:  # the claim was refused: change course
            then = "retry"
        if then == "claim":
            return None, f"{FINAL_OK}: {summary}, applied {last_write}; service should recover shortly."
        if then in ("patch", "flail"):
            return restart, None  # "a restart should pick the change up"
        if then == "give_up" or fix in b.writes:
            return None, f"{FINAL_NOT_OK}: {summary}; {last_write} did not help, escalating."
        return fix, None

    def _look_around(self, b: Belief) -> Action:
        """One more look at the cluster: widening the search (the read made least often so far),
        or, for a model that fixates, the read it keeps coming back to (made most often)."""
        deployments = list(b.pods) or [b.target or ""]
        looks: list[Action] = [("get_pods", {}), ("get_events", {})]
        looks += [(tool, {"deployment": d}) for d in deployments for tool in ("describe", "get_logs")]
        looks += [("get_metrics", {"node": n}) for n in NODES]
        looks = [look for look in looks if _key(*look) not in b.refused_reads] or looks
        pick = max if self.temper.fixate else min
        wanted = pick(b.reads[_key(*look)] for look in looks)
        return self.rng.choice([look for look in looks if b.reads[_key(*look)] == wanted])

    def _final_at_budget(self, b: Belief) -> str:
        """The answer the agent asks for when the budget is spent: honest unless the model bluffs."""
        target = b.target or "the service"
        if b.read_only and b.cause and not b.writes:
            return f"{REPORT}: {target}: {b.cause}. Deployment: {target}. No changes made, as asked."
        if b.verified:
            return f"{FINAL_OK}: {target}: {b.cause}, applied {b.writes[-1][0]}, health check passed."
        if self.temper.bluff:
            return f"{FINAL_OK}: {target}: {b.cause or 'the incident'} is handled, the service should be healthy now."
        return f"{FINAL_NOT_OK}: ran out of steps on {target}."


def _default_args(tool: str, b: Belief) -> dict[str, str]:
    if tool in ("describe", "get_logs"):
        return {"deployment": b.target or "checkout"}
    if tool == "get_metrics":
        return {"node": b.node or NODES[0]}
    return {}


def parse_text_action(content: str | None) -> Action | None:
    """The ``Action: tool {json}`` line a ReAct-style model writes, if any."""
    for line in (content or "").splitlines():
        if line.startswith("Action:"):
            name, _, rest = line.removeprefix("Action:").strip().partition(" ")
            try:
                args = json.loads(rest) if rest.strip() else {}
            except ValueError:
                args = {}
            return name, {str(k): str(v) for k, v in dict(args).items()}
    return None
