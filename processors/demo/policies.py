"""Simulated models: policies that read the conversation and decide the next move.

A policy sees only the messages the agent sends it (so when the agent trims history, the
policy really forgets), works out what it knows about the incident from the tool results in
them, and picks an action the way a competent SRE would, except where the run's sampled
temperament makes it slip: apply a plausible but wrong fix, skip the health check, claim
success after a failed check, give up, loop on a read, keep working after the fix is
verified, act on an ambiguous alert without asking, break a read-only or role limit, or
announce one tool and run another. Each profile weights those slips after the published
failure signatures of frontier, termination-prone and open models; nothing about the
failure is written into the spans, the detectors find it in the behaviour.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mast_otel.processors.demo.environment import CLARIFY_TOOL, HANDOFF_TOOL, NODES, READ_TOOLS

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


@dataclass(frozen=True)
class Profile:
    """A simulated model's temperament: how likely each slip is in one run."""

    model: str
    description: str
    wrong_fix: float = 0.0  # first write is a restart instead of the fix the evidence points to
    skip_verify: float = 0.0  # report success right after a write, no health check
    after_failed_check: tuple[float, float, float] = (1.0, 0.0, 0.0)  # retry, claim success anyway, give up
    recheck: float = 0.0  # re-run a failed check twice, hoping the result changes
    loop: float = 0.0  # re-run the same read several times
    overrun: float = 0.0  # keep investigating after the fix was verified
    quit_early: float = 0.0  # stop once the cause is known, fix not even tried
    skip_clarify: float = 0.0  # act on an ambiguous alert without asking
    break_read_only: float = 0.0  # fix things in an investigate-only task
    break_role: float = 0.0  # triage agent applies the fix itself instead of handing off
    mismatch: float = 0.0  # per step: announce one tool, act on another (ReAct text action)
    context_messages: int | None = None  # the agent's context window, in messages after the system prompt
    react: bool = False  # the agent parses "Action: tool {json}" lines from this model's text


PROFILES: dict[str, Profile] = {
    p.model: p
    for p in (
        Profile(
            "sim-frontier", "frontier-like: isolated slips, mostly in verification",
            wrong_fix=0.4, skip_verify=0.2, after_failed_check=(0.45, 0.45, 0.1), recheck=0.5, loop=0.03,
            overrun=0.03, skip_clarify=0.3, break_read_only=0.08, break_role=0.05,
        ),
        Profile(
            "sim-flash", "termination-prone: stops too early or does not know when to stop",
            wrong_fix=0.45, skip_verify=0.1, after_failed_check=(0.2, 0.1, 0.7), recheck=0.3, loop=0.2,
            overrun=0.35, quit_early=0.25, skip_clarify=0.4, break_read_only=0.1, break_role=0.1,
        ),
        Profile(
            "sim-open", "open-weights: small context, failures cascade",
            wrong_fix=0.5, skip_verify=0.45, after_failed_check=(0.2, 0.6, 0.2), recheck=0.5, loop=0.3,
            overrun=0.2, skip_clarify=0.6, break_read_only=0.5, break_role=0.5, mismatch=0.25,
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
    read_only: bool = False
    ambiguous: bool = False
    asked: bool = False
    reported_node: str | None = None  # from a handoff note or ``describe``
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    cause: str | None = None
    writes: list[Action] = field(default_factory=list)
    checks_since_write: list[bool] = field(default_factory=list)
    reads: Counter = field(default_factory=Counter)

    @property
    def node(self) -> str | None:
        return (self.pods.get(self.target or "") or {}).get("node") or self.reported_node

    @property
    def verified(self) -> bool:
        return bool(self.checks_since_write) and self.checks_since_write[-1]


def read_belief(messages: list[dict[str, Any]]) -> Belief:
    """Everything the policy can know: derived from ``messages`` alone."""
    b = Belief()
    calls: dict[str, Action] = {}
    for msg in messages:
        role, content = msg.get("role"), msg.get("content") or ""
        if role == "user":
            m = _TASK_TARGET.search(content)
            if content.startswith("Incident:"):
                b.target = m.group(1) if m else b.target
                b.ambiguous = m is None
                b.read_only = "do not change anything" in content.lower()
            elif content.startswith("Handoff"):
                b.target = m.group(1) if m else b.target
                node = _HANDOFF_NODE.search(content)
                b.reported_node = node.group(1) if node else None
                b.cause = next((c for _, c in _CAUSE_SIGNS if c in content), b.cause)
        elif role == "assistant":
            for tc in msg.get("tool_calls") or ():
                fn = tc["function"]
                calls[tc["id"]] = (fn["name"], json.loads(fn.get("arguments") or "{}"))
        elif role == "tool":
            _absorb(b, msg.get("name", ""), calls.get(msg.get("tool_call_id", ""), ("", {}))[1], content)
    return b


def _absorb(b: Belief, name: str, args: dict[str, str], content: str) -> None:
    try:
        result = json.loads(content)
    except ValueError:
        result = {"error": content}
    if name in READ_TOOLS:
        b.reads[_key(name, args)] += 1
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
    after_failed_check: str  # retry | claim | give_up
    recheck: bool
    loop: bool
    overrun: bool
    quit_early: bool
    skip_clarify: bool
    break_read_only: bool
    break_role: bool

    @classmethod
    def draw(cls, p: Profile, rng: random.Random) -> Temperament:
        return cls(
            wrong_fix=rng.random() < p.wrong_fix,
            skip_verify=rng.random() < p.skip_verify,
            after_failed_check=rng.choices(("retry", "claim", "give_up"), p.after_failed_check)[0],
            recheck=rng.random() < p.recheck,
            loop=rng.random() < p.loop,
            overrun=rng.random() < p.overrun,
            quit_early=rng.random() < p.quit_early,
            skip_clarify=rng.random() < p.skip_clarify,
            break_read_only=rng.random() < p.break_read_only,
            break_role=rng.random() < p.break_role,
        )


class SimulatedModel:
    """One run's simulated model: a profile, its drawn temperament and a seeded RNG."""

    def __init__(self, profile: Profile, rng: random.Random) -> None:
        self.profile = profile
        self.rng = rng
        self.temper = Temperament.draw(profile, rng)

    def decide(self, messages: list[dict[str, Any]], *, role: str, allowed: tuple[str, ...]) -> Decision:
        b = read_belief(messages)
        action, final = self._next(b, role, allowed)
        if final is not None:
            return Decision(final)
        assert action is not None
        name, args = action
        if self.profile.react and self.rng.random() < self.profile.mismatch:
            # Says (and requests) one thing, acts on another: the ReAct text wins in the agent.
            other = self.rng.choice([t for t in READ_TOOLS if t != name])
            acted = (other, _default_args(other, b))
            return Decision(f"I will call {name} next.\nAction: {acted[0]} {json.dumps(acted[1])}", (action,))
        text = f"Next I call {name}."
        if self.profile.react:
            text += f"\nAction: {name} {json.dumps(args)}"
        return Decision(text, (action,))

    def _next(self, b: Belief, role: str, allowed: tuple[str, ...]) -> tuple[Action | None, str | None]:
        t = self.temper
        if b.ambiguous and not b.asked and not t.skip_clarify and CLARIFY_TOOL in allowed:
            return (CLARIFY_TOOL, {"question": "Which deployment is the alert about?"}), None
        if not b.pods and not (b.target and b.node):
            return ("get_pods", {}), None
        if b.target is None:
            if b.writes:
                return None, f"{FINAL_OK}: every pod is healthy after {b.writes[-1][0]}."
            return None, f"{FINAL_NOT_OK}: every pod looks healthy, nothing to fix."
        logs = ("get_logs", {"deployment": b.target})
        if b.cause is None:
            return logs, None
        if t.loop and b.reads[_key(*logs)] < 4:
            return logs, None  # stuck re-reading the same logs
        summary = f"{b.target}: {b.cause}"
        if b.read_only and not t.break_read_only:
            return None, f"{REPORT}: {summary}. Deployment: {b.target}. No changes made, as asked."
        if t.quit_early and not b.writes:
            return None, f"{FINAL_NOT_OK}: {summary}; this needs a human, stopping here."
        if role == "triage" and not t.break_role:
            return (HANDOFF_TOOL, {"summary": f"Deployment: {b.target}. Node: {b.node}. Finding: {b.cause}."}), None
        fix = right_fix(b)
        if fix is None:
            return ("describe", {"deployment": b.target}), None
        if not b.writes:
            return (("restart_deployment", {"deployment": b.target}) if t.wrong_fix else fix), None
        check = ("check_health", {"deployment": b.target})
        if not b.checks_since_write:
            if t.skip_verify:
                return None, f"{FINAL_OK}: {summary}, applied {b.writes[-1][0]}."
            return check, None
        if b.verified:
            if t.overrun:
                return self.rng.choice([("get_pods", {}), ("get_events", {}), check]), None
            return None, f"{FINAL_OK}: {summary}, applied {b.writes[-1][0]}, health check passed."
        # the latest write did not fix it
        if t.recheck and len(b.checks_since_write) < 3:
            return check, None
        if t.after_failed_check == "claim":
            return None, f"{FINAL_OK}: {summary}, applied {b.writes[-1][0]}; service should recover shortly."
        if t.after_failed_check == "give_up" or fix in b.writes:
            return None, f"{FINAL_NOT_OK}: {summary}; {b.writes[-1][0]} did not help, escalating."
        return fix, None


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
