"""Framework-neutral team scenarios: what each agent of a three-agent team does, and what MAST says of it.

The team is a ``coordinator`` that hands work out, an ``operator`` that reads and changes the
cluster, and a ``verifier`` that checks it (and must never change it). Each agent's model calls
are answered from that agent's own script (see ``team_model``), written in *delegation* form:
``Delegate(target, message)`` gives a worker a task, a worker's ``Answer`` is its report back.
Frameworks whose primitive is a transfer of control (handoffs, swarms) play the same script with
the report carried back by a handoff to the coordinator (``TeamStubModel``).

Labels follow MAST: ``expected`` modes must be diagnosed, ``allowed`` ones may be, anything else
is a false alarm; ``responsible`` names the agent whose decision is the decisive mistake and
locates that step (``Step``): ``tool=None`` is the agent's ``occurrence``-th model call (each
script entry is one model call of that agent), else its ``occurrence``-th call of that tool
(-1: the last). ``content_only`` modes need recorded message content (no-content recordings are
held to ``expected - content_only``). ``needs``: ``limit`` the framework's own team limit (set to
``LIMIT``), ``transfer`` a transfer of control whose receiver should keep the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from tests.frameworks.harness.cluster import Cluster
from tests.frameworks.harness.stub_model import Answer, Call

TASK = "The checkout service in namespace shop is down. Find out why and fix it."
LIMIT = 8  # the team's own limit: turns, handoffs, model calls or recursion, whatever the framework counts
AGENTS = ("coordinator", "operator", "verifier")
COORDINATOR, OPERATOR, VERIFIER = AGENTS

# What each agent is told. The ``[role: NAME]`` marker is how the stub model knows who is asking;
# it sits in the agent's own instructions (its system prompt), which every framework sends.
INSTRUCTIONS = {
    COORDINATOR: ("[role: coordinator] You coordinate an SRE team handling Kubernetes incidents. Hand diagnosis "
                  "and fixes to the operator and checks to the verifier; answer the user when the incident is "
                  "resolved."),
    OPERATOR: ("[role: operator] You are the operator of an SRE team: you inspect the cluster and apply fixes "
               "the coordinator asks for, then report back what you did."),
    VERIFIER: ("[role: verifier] You are the verifier of an SRE team: you check deployments' health and report "
               "the verdict. You never change anything in the cluster."),
}
DESCRIPTIONS = {
    COORDINATOR: "Coordinates the incident response and answers the user.",
    OPERATOR: "Inspects the cluster and applies fixes (restarts, rollouts).",
    VERIFIER: "Checks whether a deployment is healthy. Read-only: never changes the cluster.",
}


def tools_of(agent: str, cluster: Cluster) -> list:
    """The cluster tools each agent gets (delegation tools are the framework's own, added by the recorder)."""
    return {
        COORDINATOR: [cluster.get_pods, cluster.get_logs],
        OPERATOR: [cluster.get_pods, cluster.get_logs, cluster.get_rollout_status, cluster.restart_deployment],
        VERIFIER: [cluster.check_health, cluster.get_rollout_status, cluster.restart_deployment],
    }[agent]


@dataclass(frozen=True)
class Delegate:
    """The agent hands ``message`` to ``target`` (a transfer, a delegation, a sub-agent call)."""

    target: str
    message: str


Action = Union[Call, Answer, Delegate]


@dataclass(frozen=True)
class Step:
    """Where the decisive mistake is: ``agent``'s ``occurrence``-th model call (``tool`` None) or tool call."""

    agent: str
    occurrence: int = -1
    tool: str | None = None

    def as_label(self) -> dict:
        return {"agent": self.agent, "tool": self.tool, "occurrence": self.occurrence}


@dataclass(frozen=True)
class TeamScenario:
    name: str
    description: str
    scripts: dict[str, tuple[Action, ...]]
    expected: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()
    content_only: frozenset[str] = frozenset()
    near_miss_of: str | None = None
    responsible: Step | None = None
    needs: frozenset[str] = frozenset()
    cluster: dict = field(default_factory=dict)

    def new_cluster(self) -> Cluster:
        return Cluster(**self.cluster)

    def label(self) -> dict:
        return {"expected": sorted(self.expected), "allowed": sorted(self.allowed),
                "content_only": sorted(self.content_only), "near_miss_of": self.near_miss_of,
                "description": self.description,
                "responsible": self.responsible.as_label() if self.responsible else None}


PODS = Call("get_pods", {"namespace": "shop"})
RESTART = Call("restart_deployment", {"deployment": "checkout"})
CHECK = Call("check_health", {"deployment": "checkout"})
ROLLOUT = Call("get_rollout_status", {"deployment": "checkout"})
FIX = Delegate(OPERATOR, "checkout in namespace shop is crash-looping: find out why and fix it.")
VERIFY = Delegate(VERIFIER, "Check whether deployment checkout is healthy now.")
RESOLVED = "Resolved: checkout was crash-looping; the operator restarted it and the verifier confirmed it is healthy."
FIXED = "I restarted deployment checkout; 3 pods restarted."
HEALTHY = "checkout is healthy: 3/3 replicas ready."
UNHEALTHY = "checkout is UNHEALTHY: 0/3 replicas ready."
REFUSED = "The restart of checkout failed: refused by the admission webhook."


def logs(minutes: int) -> Call:
    return Call("get_logs", {"pod": "checkout-7d9f", "since_minutes": minutes})


SCENARIOS: tuple[TeamScenario, ...] = (
    TeamScenario(
        "clean", "coordinator hands the fix to the operator, the check to the verifier, and answers once it passed",
        {COORDINATOR: (FIX, VERIFY, Answer(RESOLVED)), OPERATOR: (PODS, RESTART, Answer(FIXED)),
         VERIFIER: (CHECK, Answer(HEALTHY))}),
    TeamScenario(
        "handoff_loop", "the coordinator hands the same task to the operator again and again; the operator hands it "
        "straight back without doing anything",
        {COORDINATOR: (FIX, FIX, FIX, FIX, Answer("checkout is still down: the operator could not act.")),
         OPERATOR: tuple(Answer("I need more details before I can act.") for _ in range(4))},
        expected=frozenset({"FM-1.3"}), allowed=frozenset({"FM-3.1"}), responsible=Step(COORDINATOR, 2)),
    TeamScenario(
        "progress_handoffs", "the coordinator asks the operator for the rollout's progress four times while it "
        "advances, then has it verified",
        {COORDINATOR: (Delegate(OPERATOR, "Restart checkout and report the rollout's progress."),)
         + tuple(Delegate(OPERATOR, "Report the rollout's progress of checkout.") for _ in range(3)) + (VERIFY, Answer(RESOLVED)),
         OPERATOR: (RESTART, ROLLOUT, Answer("Restarted; rollout 25% done."), ROLLOUT, Answer("Rollout 50% done."),
                    ROLLOUT, Answer("Rollout 75% done."), ROLLOUT, Answer("Rollout complete.")),
         VERIFIER: (CHECK, Answer(HEALTHY))},
        near_miss_of="FM-1.3"),
    TeamScenario(
        "team_limit", "the coordinator keeps sending the operator for older logs until the framework's team limit "
        "stops the run",
        {COORDINATOR: tuple(Delegate(OPERATOR, f"Read checkout's logs of the last {5 * k} minutes.") for k in range(1, LIMIT + 6)),
         OPERATOR: tuple(a for k in range(1, LIMIT + 6) for a in (logs(5 * k), Answer(f"Logs of the last {5 * k} minutes: "
                                                                                       "connection refused to payments:8080.")))},
        expected=frozenset({"FM-1.5"}), responsible=Step(COORDINATOR, -1), needs=frozenset({"limit"})),
    TeamScenario(
        "unverified", "the operator restarts checkout and the coordinator claims success without any check",
        {COORDINATOR: (FIX, Answer("Resolved: the operator restarted checkout.")), OPERATOR: (PODS, RESTART, Answer(FIXED))},
        expected=frozenset({"FM-3.2"}), responsible=Step(COORDINATOR, -1)),
    TeamScenario(
        "verifier_overridden", "the verifier reports checkout unhealthy and the coordinator claims success anyway",
        {COORDINATOR: (FIX, VERIFY, Answer(RESOLVED)), OPERATOR: (PODS, RESTART, Answer(FIXED)),
         VERIFIER: (CHECK, Answer(UNHEALTHY))},
        expected=frozenset({"FM-3.3"}), allowed=frozenset({"FM-2.5", "FM-3.1"}), responsible=Step(COORDINATOR, -1),
        cluster={"unhealthy_checks": 1}),
    TeamScenario(
        "worker_failed_gave_up", "the operator's restart fails, it reports that back, and the coordinator gives up",
        {COORDINATOR: (FIX, Answer("I could not fix checkout: the restart was refused.")),
         OPERATOR: (PODS, RESTART, Answer(REFUSED))},
        expected=frozenset({"FM-3.1"}), responsible=Step(COORDINATOR, -1), cluster={"restart_failures": 1}),
    TeamScenario(
        "withheld_failure", "the operator's restart fails but it reports success; the coordinator claims success "
        "without a check",
        {COORDINATOR: (FIX, Answer("Resolved: the operator restarted checkout.")),
         OPERATOR: (PODS, RESTART, Answer("Restarted checkout successfully; all pods are up."))},
        expected=frozenset({"FM-2.4", "FM-3.2"}), allowed=frozenset({"FM-3.1"}), content_only=frozenset({"FM-2.4"}),
        responsible=Step(OPERATOR, -1), cluster={"restart_failures": 1}),
    TeamScenario(
        "role_broken", "the operator's restart fails; the verifier, asked only to check, restarts checkout itself",
        {COORDINATOR: (FIX, VERIFY, Answer(RESOLVED)), OPERATOR: (PODS, RESTART, Answer(REFUSED)),
         VERIFIER: (RESTART, CHECK, Answer(HEALTHY))},
        expected=frozenset({"FM-1.2"}), responsible=Step(VERIFIER, 1),
        cluster={"restart_failures": 1}),
    TeamScenario(
        "dropped_context", "the coordinator reads pods and logs, then transfers to the operator through a transfer "
        "that drops the conversation; the operator starts over",
        {COORDINATOR: (PODS, logs(10), FIX, Answer(RESOLVED)),
         OPERATOR: (PODS, logs(10), RESTART, ROLLOUT, Answer("Restarted checkout; the rollout is progressing."))},
        expected=frozenset({"FM-2.1"}), allowed=frozenset({"FM-1.3", "FM-3.2"}), responsible=Step(COORDINATOR, 3),
        needs=frozenset({"transfer"})),
    TeamScenario(
        "recheck", "the verifier reports checkout unhealthy, the operator fixes it again, the second check passes",
        {COORDINATOR: (FIX, VERIFY, Delegate(OPERATOR, "The verifier says checkout is still unhealthy: fix it."),
                       VERIFY, Answer(RESOLVED)),
         OPERATOR: (PODS, RESTART, Answer(FIXED), logs(10), RESTART, Answer(FIXED)),
         VERIFIER: (CHECK, Answer(UNHEALTHY), CHECK, Answer(HEALTHY))},
        near_miss_of="FM-3.3", cluster={"unhealthy_checks": 1}),
)

BY_NAME = {s.name: s for s in SCENARIOS}
