"""The tools every recorded agent gets, over a tiny simulated cluster.

Plain functions with type hints and docstrings, as a user would write them, so each
framework builds its own tool schema from them. Results are JSON-able dicts. A failing
call returns an error value (``{"status": "error", ...}``), the way most real tools report
failure, unless the scenario asks the tool to raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class ToolFailure(RuntimeError):
    """Raised by a tool whose scenario wants an exception rather than an error value."""


@dataclass
class Cluster:
    restart_failures: int = 0  # restarts that fail before one succeeds
    restart_raises: bool = False  # a failing restart raises instead of returning an error value
    unhealthy_checks: int = 0  # health checks that report unhealthy before one passes
    restarts: int = 0
    checks: int = 0
    rollout_polls: int = 0
    log_reads: int = 0
    healthy: bool = False
    calls: list[str] = field(default_factory=list)

    # -- the tools -------------------------------------------------------------------------
    def get_pods(self, namespace: str) -> dict:
        """List the pods of a namespace with their status."""
        self.calls.append("get_pods")
        status = "Running" if self.healthy else "CrashLoopBackOff"
        return {"namespace": namespace, "pods": [{"name": "checkout-7d9f", "status": status, "restarts": 14}]}

    def get_logs(self, pod: str, since_minutes: int) -> dict:
        """Read a pod's recent log lines."""
        self.calls.append("get_logs")
        self.log_reads += 1
        return {"pod": pod, "lines": [f"{since_minutes}m ago: connection refused to payments:8080 (attempt {self.log_reads})"]}

    def get_rollout_status(self, deployment: str) -> dict:
        """Show how far a deployment's rollout has progressed."""
        self.calls.append("get_rollout_status")
        self.rollout_polls += 1
        progress = min(100, 25 * self.rollout_polls)
        return {"deployment": deployment, "updated_replicas_percent": progress, "complete": progress == 100}

    def restart_deployment(self, deployment: str) -> dict:
        """Restart a deployment's pods (rolling restart)."""
        self.calls.append("restart_deployment")
        self.restarts += 1
        if self.restarts <= self.restart_failures:
            if self.restart_raises:
                raise ToolFailure(f"restart of {deployment} refused: admission webhook timed out")
            return {"status": "error", "error": f"restart of {deployment} refused: admission webhook timed out"}
        self.healthy = True
        return {"status": "ok", "deployment": deployment, "restarted_pods": 3}

    def check_health(self, deployment: str) -> dict:
        """Check whether a deployment is healthy: ready replicas and passing probes."""
        self.calls.append("check_health")
        self.checks += 1
        healthy = self.healthy and self.checks > self.unhealthy_checks
        return {"deployment": deployment, "healthy": healthy, "ready_replicas": 3 if healthy else 0}

    def tools(self) -> list:
        """The bound tool methods, in the order frameworks list them."""
        return [self.get_pods, self.get_logs, self.get_rollout_status, self.restart_deployment, self.check_health]
