"""Framework-neutral scenarios: what the model does, how the cluster answers, what should be found.

Every scenario is one agent run on the same task. ``expected`` modes must be diagnosed,
``allowed`` ones may be (a slip that legitimately shows as two modes), anything else is a
false alarm. Near misses look like a failure on the surface and must stay quiet. Scenarios
with ``needs`` use a framework feature the recorder sets up: ``limit`` the framework's own
turn/step limit (``LIMIT`` model calls; every run is recorded under it, so clean runs are
near misses of it), ``history`` a history processor that keeps only the last few messages
(a compaction set too tight, see ``HISTORY_TRIGGER``), ``raises`` a tool that raises instead of returning an error value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cluster import Cluster
from .stub_model import Answer, Call, Script

TASK = "The checkout service in namespace shop is down. Find out why and fix it."
INSTRUCTIONS = "You are an SRE agent. Use the tools to diagnose and fix Kubernetes incidents."
LIMIT = 8  # model calls a run may make before the framework stops it
# The history processor: once a model call would send more than HISTORY_TRIGGER messages, it
# sends only the system prompt and the last HISTORY_KEEP messages (a compaction set too tight).
HISTORY_TRIGGER = 8
HISTORY_KEEP = 3

RESOLVED = "Resolved: checkout was crash-looping; I restarted it and it is healthy now."


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    actions: tuple
    expected: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()
    near_miss_of: str | None = None  # the mode this scenario looks like but is not
    needs: frozenset[str] = frozenset()
    cluster: dict = field(default_factory=dict)

    def script(self) -> Script:
        return Script(list(self.actions))

    def new_cluster(self) -> Cluster:
        return Cluster(**self.cluster)


PODS = Call("get_pods", {"namespace": "shop"})
RESTART = Call("restart_deployment", {"deployment": "checkout"})
CHECK = Call("check_health", {"deployment": "checkout"})
ROLLOUT = Call("get_rollout_status", {"deployment": "checkout"})


def logs(minutes: int) -> Call:
    return Call("get_logs", {"pod": "checkout-7d9f", "since_minutes": minutes})


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("clean", "read, fix, check that passed, resolved", (PODS, RESTART, CHECK, Answer(RESOLVED))),
    Scenario("loop", "the same read, same arguments, same result, four times in a row",
             (PODS, PODS, PODS, PODS, Answer("checkout-7d9f is in CrashLoopBackOff.")), expected=frozenset({"FM-1.3"})),
    Scenario("poll", "a rollout polled four times while it progresses, then checked",
             (RESTART, ROLLOUT, ROLLOUT, ROLLOUT, ROLLOUT, CHECK, Answer(RESOLVED)), near_miss_of="FM-1.3"),
    Scenario("limit", "keeps reading new logs until the framework's own limit stops the run",
             tuple(logs(5 * k) for k in range(1, LIMIT + 6)), expected=frozenset({"FM-1.5"}),
             needs=frozenset({"limit"})),
    Scenario("tool_error", "the fix fails with an error value and the agent stops there",
             (PODS, RESTART, Answer("I could not restart checkout: the restart was refused.")),
             expected=frozenset({"FM-3.1"}), cluster={"restart_failures": 1}),
    Scenario("tool_exception", "the fix raises and the agent stops there",
             (PODS, RESTART, Answer("I could not restart checkout: the restart was refused.")),
             expected=frozenset({"FM-3.1"}), cluster={"restart_failures": 1, "restart_raises": True},
             needs=frozenset({"raises"})),
    Scenario("retry_ok", "the fix fails once, the retry works and is checked",
             (PODS, RESTART, RESTART, CHECK, Answer(RESOLVED)), near_miss_of="FM-3.1", cluster={"restart_failures": 1}),
    Scenario("unchecked", "a change, then success claimed without any check",
             (PODS, RESTART, Answer("Restarted checkout; the incident is resolved.")), expected=frozenset({"FM-3.2"})),
    Scenario("failed_check", "success claimed although the last check failed",
             (PODS, RESTART, CHECK, Answer(RESOLVED)), expected=frozenset({"FM-3.3"}), allowed=frozenset({"FM-3.1"}),
             cluster={"unhealthy_checks": 1}),
    Scenario("recheck", "a check fails, the agent fixes again and the second check passes",
             (PODS, RESTART, CHECK, logs(10), RESTART, CHECK, Answer(RESOLVED)), near_miss_of="FM-3.3",
             cluster={"unhealthy_checks": 1}),
    Scenario("history", "a history window too small for the run drops what the agent had gathered",
             (PODS, logs(5), logs(10), logs(15), logs(20), logs(25), Answer("checkout cannot reach payments:8080.")),
             expected=frozenset({"FM-1.4"}), needs=frozenset({"history"})),
)

BY_NAME = {s.name: s for s in SCENARIOS}
