"""A simulated Kubernetes cluster with one injected incident: the demo agent's world.

It is a small state machine, not a script. Read tools report what the cluster looks like,
write tools change it, and the health check reports the true state, so a run's outcome and
its verification evidence follow from what the agent actually did: only the right fix
resolves an incident; restarts, rollbacks of the wrong thing or moves to a full node do not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

NAMESPACE = "shop"
NODES = ("node-1", "node-2", "node-3")


@dataclass
class Deployment:
    name: str
    image: str
    previous_image: str
    node: str
    replicas: int = 2
    config_revision: int = 4
    memory_limit_mi: int = 512
    memory_needed_mi: int = 300
    restarts: int = 0


@dataclass
class Node:
    name: str
    disk_used_pct: float = 41.0
    cpu_used_pct: float = 35.0
    debug_logs_gb: float = 0.4


@dataclass(frozen=True)
class Incident:
    """One kind of failure the cluster can be put in, and how to recognise its fix."""

    kind: str
    target: str  # the deployment users see failing
    title: str  # the alert text the agent is given
    root_cause: str  # words a correct diagnosis must contain


INCIDENT_KINDS = ("bad_image", "bad_config", "disk_full", "noisy_neighbour", "oom")


@dataclass
class Cluster:
    """The cluster's true state, the incident in it, and every write applied so far."""

    incident: Incident
    deployments: dict[str, Deployment]
    nodes: dict[str, Node]
    config: dict[str, dict[str, str]]  # configmap -> data
    config_history: dict[str, list[dict[str, str]]]
    writes: list[str] = field(default_factory=list)
    noisy_node: str | None = None  # node where an unlimited batch job hogs the CPU

    # --- the truth -----------------------------------------------------------------------
    def healthy(self, name: str) -> bool:
        """Whether deployment ``name`` really serves traffic now."""
        dep = self.deployments[name]
        node = self.nodes[dep.node]
        if dep.image.endswith("-bad"):
            return False
        if self.config[f"{name}-config"].get("DB_PORT") != "5432":
            return False
        if node.disk_used_pct >= 98:
            return False
        if dep.memory_limit_mi < dep.memory_needed_mi:
            return False
        return node.cpu_used_pct < 95

    @property
    def resolved(self) -> bool:
        return all(self.healthy(name) for name in self.deployments)

    def pod_status(self, name: str) -> tuple[str, str]:
        """(status, reason) the way ``kubectl get pods`` would summarise it."""
        dep = self.deployments[name]
        node = self.nodes[dep.node]
        if dep.image.endswith("-bad"):
            return "CrashLoopBackOff", "Back-off restarting failed container"
        if dep.memory_limit_mi < dep.memory_needed_mi:
            return "CrashLoopBackOff", "OOMKilled"
        if node.disk_used_pct >= 98:
            return "Error", "Evicted: node has DiskPressure"
        if self.config[f"{name}-config"].get("DB_PORT") != "5432":
            return "Running", "Readiness probe failed"
        if node.cpu_used_pct >= 95:
            return "Running", "Readiness probe timed out"
        return "Running", "Ready"

    def logs(self, name: str) -> list[str]:
        dep = self.deployments[name]
        node = self.nodes[dep.node]
        if dep.image.endswith("-bad"):
            return [f"starting {dep.image}", "Traceback (most recent call last):",
                    "ImportError: cannot import name 'PaymentClient' from 'shop.clients'",
                    "container exited with code 1"]
        if dep.memory_limit_mi < dep.memory_needed_mi:
            return ["loading index shards 1..12", f"index loaded: {dep.memory_needed_mi}Mi resident",
                    f"Killed (memory limit {dep.memory_limit_mi}Mi exceeded)"]
        if node.disk_used_pct >= 98:
            return ["write /var/lib/app/cache/blk-0042: No space left on device",
                    f"disk usage on {node.name}: {node.disk_used_pct:.0f}%"]
        port = self.config[f"{name}-config"].get("DB_PORT")
        if port != "5432":
            return [f"connecting to postgres db-primary:{port}",
                    f"dial tcp 10.0.3.12:{port}: connect: connection refused",
                    f"config revision {dep.config_revision} loaded"]
        if node.cpu_used_pct >= 95:
            return ["request /api/cart took 4812ms", "worker pool saturated: 0 idle of 16",
                    f"cpu throttled 78% of periods on {node.name}"]
        return ["GET /healthz 200", "serving requests normally"]

    def events(self) -> list[str]:
        out = []
        for name, dep in self.deployments.items():
            status, reason = self.pod_status(name)
            if status != "Running" or reason != "Ready":
                out.append(f"Warning {name}: {reason}")
            if dep.image != dep.previous_image:
                out.append(f"Normal {name}: rolled out image {dep.image}")
        if self.noisy_node:
            out.append(f"Normal batch-report: job started on {self.noisy_node} (no cpu limit)")
        inc = self.incident
        if inc.kind == "bad_config":
            out.append(f"Normal {inc.target}-config: configmap updated to revision 5")
        return out


def make_cluster(kind: str, rng: random.Random) -> Cluster:
    """A healthy three-service cluster, then the incident ``kind`` applied to one service."""
    if kind not in INCIDENT_KINDS:
        raise ValueError(f"unknown incident kind {kind!r}; expected one of {', '.join(INCIDENT_KINDS)}")
    deployments = {
        "checkout": Deployment("checkout", "shop/checkout:2.3.0", "shop/checkout:2.3.0", "node-1"),
        "payments": Deployment("payments", "shop/payments:1.9.4", "shop/payments:1.9.4", "node-2"),
        "search": Deployment("search", "shop/search:5.1.2", "shop/search:5.1.2", "node-3",
                             memory_limit_mi=1024, memory_needed_mi=690),
    }
    nodes = {n: Node(n, disk_used_pct=rng.uniform(30, 60), cpu_used_pct=rng.uniform(20, 50)) for n in NODES}
    config = {f"{d}-config": {"DB_HOST": "db-primary", "DB_PORT": "5432", "LOG_LEVEL": "info"} for d in deployments}
    history = {k: [dict(v)] for k, v in config.items()}
    target = {"bad_image": "checkout", "bad_config": "payments", "disk_full": "search",
              "noisy_neighbour": "checkout", "oom": "search"}[kind]
    if kind == "bad_image":
        deployments[target].image = "shop/checkout:2.4.0-bad"
        cause = "bad image"
    elif kind == "bad_config":
        config[f"{target}-config"] = {**config[f"{target}-config"], "DB_PORT": "5433"}
        history[f"{target}-config"].append(dict(config[f"{target}-config"]))
        deployments[target].config_revision = 5
        cause = "config"
    elif kind == "disk_full":
        full = nodes[deployments[target].node]
        full.disk_used_pct, full.debug_logs_gb = 100.0, 38.0
        cause = "disk"
    elif kind == "noisy_neighbour":
        nodes[deployments[target].node].cpu_used_pct = 99.0
        cause = "noisy neighbour"
    else:
        deployments[target].memory_limit_mi = 512
        cause = "memory limit"
    title = {
        "bad_image": f"{target} pods are crash-looping after the last deploy",
        "bad_config": f"{target} returns 503 since the last config change",
        "disk_full": f"{target} pods keep getting evicted",
        "noisy_neighbour": f"{target} p99 latency above 4s",
        "oom": f"{target} restarts every few minutes",
    }[kind]
    cluster = Cluster(Incident(kind, target, title, cause), deployments, nodes, config, history)
    cluster.noisy_node = deployments[target].node if kind == "noisy_neighbour" else None
    return cluster


# --- tools ----------------------------------------------------------------------------------


class ToolError(Exception):
    """A tool call the cluster refused (unknown name, bad arguments); the agent sees the reason."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    kind: str  # read | write | verify | clarify | handoff
    description: str
    params: dict[str, str]  # parameter -> description (all strings, all required)
    fn: Callable[..., dict[str, Any]]


def _deployment(cluster: Cluster, name: str) -> Deployment:
    try:
        return cluster.deployments[name]
    except KeyError:
        raise ToolError(f"deployment {name!r} not found in namespace {NAMESPACE}") from None


def _node(cluster: Cluster, name: str) -> Node:
    try:
        return cluster.nodes[name]
    except KeyError:
        raise ToolError(f"node {name!r} not found") from None


def get_pods(cluster: Cluster) -> dict[str, Any]:
    pods = []
    for name, dep in cluster.deployments.items():
        status, reason = cluster.pod_status(name)
        pods.append({"deployment": name, "node": dep.node, "status": status, "reason": reason,
                     "restarts": dep.restarts + (7 if status == "CrashLoopBackOff" else 0)})
    return {"namespace": NAMESPACE, "pods": pods}


def describe(cluster: Cluster, deployment: str) -> dict[str, Any]:
    dep = _deployment(cluster, deployment)
    status, reason = cluster.pod_status(deployment)
    return {"deployment": deployment, "image": dep.image, "previous_image": dep.previous_image,
            "node": dep.node, "memory_limit": f"{dep.memory_limit_mi}Mi",
            "config_revision": dep.config_revision, "status": status, "reason": reason}


def get_logs(cluster: Cluster, deployment: str) -> dict[str, Any]:
    _deployment(cluster, deployment)
    return {"deployment": deployment, "lines": cluster.logs(deployment)}


def get_events(cluster: Cluster) -> dict[str, Any]:
    return {"namespace": NAMESPACE, "events": cluster.events()}


def get_metrics(cluster: Cluster, node: str) -> dict[str, Any]:
    n = _node(cluster, node)
    top = "batch-report" if node == cluster.noisy_node else None
    return {"node": node, "cpu_used_pct": round(n.cpu_used_pct), "disk_used_pct": round(n.disk_used_pct),
            "top_consumer": top, "debug_logs_gb": round(n.debug_logs_gb, 1)}


def _write(cluster: Cluster, action: str) -> None:
    cluster.writes.append(action)


def rollback_deployment(cluster: Cluster, deployment: str) -> dict[str, Any]:
    dep = _deployment(cluster, deployment)
    _write(cluster, f"rollback_deployment {deployment}")
    dep.image = dep.previous_image
    return {"deployment": deployment, "image": dep.image, "rolled_out": True}


def rollback_config(cluster: Cluster, deployment: str) -> dict[str, Any]:
    dep = _deployment(cluster, deployment)
    _write(cluster, f"rollback_config {deployment}")
    history = cluster.config_history[f"{deployment}-config"]
    if len(history) > 1:
        history.pop()
        dep.config_revision -= 1
    cluster.config[f"{deployment}-config"] = dict(history[-1])
    dep.restarts += 1
    return {"configmap": f"{deployment}-config", "revision": dep.config_revision, "restarted": True}


def restart_deployment(cluster: Cluster, deployment: str) -> dict[str, Any]:
    dep = _deployment(cluster, deployment)
    _write(cluster, f"restart_deployment {deployment}")
    dep.restarts += 1
    return {"deployment": deployment, "restarted": True}


def cleanup_logs(cluster: Cluster, node: str) -> dict[str, Any]:
    n = _node(cluster, node)
    _write(cluster, f"cleanup_logs {node}")
    freed, n.debug_logs_gb = n.debug_logs_gb, 0.0
    n.disk_used_pct = max(5.0, n.disk_used_pct - freed * 1.5)
    return {"node": node, "freed_gb": round(freed, 1), "disk_used_pct": round(n.disk_used_pct)}


def move_workload(cluster: Cluster, deployment: str, node: str) -> dict[str, Any]:
    dep = _deployment(cluster, deployment)
    _node(cluster, node)
    _write(cluster, f"move_workload {deployment} {node}")
    dep.node = node
    return {"deployment": deployment, "node": node, "rescheduled": True}


def set_memory_limit(cluster: Cluster, deployment: str, memory_mi: str) -> dict[str, Any]:
    dep = _deployment(cluster, deployment)
    try:
        value = int(str(memory_mi).lower().removesuffix("mi"))
    except ValueError:
        raise ToolError(f"memory_mi must be a number of MiB, got {memory_mi!r}") from None
    if not 64 <= value <= 8192:
        raise ToolError("memory_mi must be between 64 and 8192")
    _write(cluster, f"set_memory_limit {deployment} {value}")
    dep.memory_limit_mi = value
    return {"deployment": deployment, "memory_limit": f"{value}Mi"}


def check_health(cluster: Cluster, deployment: str) -> dict[str, Any]:
    _deployment(cluster, deployment)
    status, reason = cluster.pod_status(deployment)
    return {"deployment": deployment, "passed": cluster.healthy(deployment), "status": status, "reason": reason}


TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in (
        ToolSpec("get_pods", "read", "List the namespace's pods with status and restarts.", {}, get_pods),
        ToolSpec("describe", "read", "Describe a deployment: image, node, limits, config revision.",
                 {"deployment": "deployment name"}, describe),
        ToolSpec("get_logs", "read", "Recent log lines of a deployment's pods.", {"deployment": "deployment name"}, get_logs),
        ToolSpec("get_events", "read", "Recent namespace events (rollouts, warnings).", {}, get_events),
        ToolSpec("get_metrics", "read", "CPU and disk use of a node and its top consumer.", {"node": "node name"}, get_metrics),
        ToolSpec("rollback_deployment", "write", "Roll a deployment back to its previous image.",
                 {"deployment": "deployment name"}, rollback_deployment),
        ToolSpec("rollback_config", "write", "Restore a deployment's previous configmap revision and restart it.",
                 {"deployment": "deployment name"}, rollback_config),
        ToolSpec("restart_deployment", "write", "Restart a deployment's pods.", {"deployment": "deployment name"}, restart_deployment),
        ToolSpec("cleanup_logs", "write", "Delete rotated debug logs on a node to free disk.", {"node": "node name"}, cleanup_logs),
        ToolSpec("move_workload", "write", "Reschedule a deployment onto another node.",
                 {"deployment": "deployment name", "node": "target node"}, move_workload),
        ToolSpec("set_memory_limit", "write", "Change a deployment's memory limit (MiB).",
                 {"deployment": "deployment name", "memory_mi": "new limit in MiB"}, set_memory_limit),
        ToolSpec("check_health", "verify", "Check whether a deployment really serves traffic now.",
                 {"deployment": "deployment name"}, check_health),
    )
}
CLARIFY_TOOL = "ask_user"
HANDOFF_TOOL = "handoff_to_remediator"
READ_TOOLS = tuple(n for n, t in TOOLS.items() if t.kind == "read")


def call_tool(cluster: Cluster, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one cluster tool; unknown tools and bad arguments raise :class:`ToolError`."""
    spec = TOOLS.get(name)
    if spec is None:
        raise ToolError(f"unknown tool {name!r}")
    missing = [p for p in spec.params if p not in arguments]
    if missing:
        raise ToolError(f"{name} needs {', '.join(missing)}")
    return spec.fn(cluster, **{p: str(arguments[p]) for p in spec.params})


def diagnosis_is_correct(cluster: Cluster, answer: str | None) -> bool:
    """A read-only investigation succeeds when the answer names the service and the root cause."""
    text = (answer or "").lower()
    return cluster.incident.target in text and cluster.incident.root_cause in text
