"""The simulated cluster is a state machine: only the right fix resolves an incident, and the
health check reports the true state whatever the agent claims."""

from __future__ import annotations

import random

import pytest

from mast_otel.demo import environment as env

RIGHT_FIX = {
    "bad_image": ("rollback_deployment", {"deployment": "checkout"}),
    "bad_config": ("rollback_config", {"deployment": "payments"}),
    "disk_full": ("cleanup_logs", {"node": "node-3"}),
    "noisy_neighbour": ("move_workload", {"deployment": "checkout", "node": "node-2"}),
    "oom": ("set_memory_limit", {"deployment": "search", "memory_mi": "1024"}),
}


def cluster(kind: str) -> env.Cluster:
    return env.make_cluster(kind, random.Random(3))


@pytest.mark.parametrize("kind", env.INCIDENT_KINDS)
def test_incident_breaks_its_target_and_only_its_target(kind):
    c = cluster(kind)
    assert not c.resolved
    target = c.incident.target
    health = {name: env.call_tool(c, "check_health", {"deployment": name})["passed"] for name in c.deployments}
    assert health[target] is False
    assert all(ok for name, ok in health.items() if name != target)


@pytest.mark.parametrize("kind", env.INCIDENT_KINDS)
def test_right_fix_resolves_and_verify_reports_it(kind):
    c = cluster(kind)
    name, args = RIGHT_FIX[kind]
    env.call_tool(c, name, args)
    assert c.resolved
    assert env.call_tool(c, "check_health", {"deployment": c.incident.target})["passed"] is True
    assert c.writes == [" ".join([name, *args.values()])]


@pytest.mark.parametrize("kind", env.INCIDENT_KINDS)
def test_restart_never_fixes_and_verify_says_so(kind):
    c = cluster(kind)
    env.call_tool(c, "restart_deployment", {"deployment": c.incident.target})
    assert not c.resolved
    check = env.call_tool(c, "check_health", {"deployment": c.incident.target})
    assert check["passed"] is False and check["status"] in ("CrashLoopBackOff", "Error", "Running")


@pytest.mark.parametrize("kind,wrong", [
    ("bad_config", ("rollback_deployment", {"deployment": "payments"})),  # image was never changed
    ("bad_image", ("rollback_config", {"deployment": "checkout"})),
    ("disk_full", ("cleanup_logs", {"node": "node-1"})),  # the wrong node
    ("oom", ("set_memory_limit", {"deployment": "search", "memory_mi": "600"})),  # still below what it needs
    ("noisy_neighbour", ("move_workload", {"deployment": "checkout", "node": "node-1"})),  # same node
])
def test_plausible_wrong_fixes_fail(kind, wrong):
    c = cluster(kind)
    env.call_tool(c, *wrong)
    assert not c.resolved
    assert env.call_tool(c, "check_health", {"deployment": c.incident.target})["passed"] is False


def test_read_tools_show_the_evidence_a_diagnosis_needs():
    c = cluster("bad_image")
    pods = {p["deployment"]: p for p in env.call_tool(c, "get_pods", {})["pods"]}
    assert pods["checkout"]["status"] == "CrashLoopBackOff"
    assert any("ImportError" in line for line in env.call_tool(c, "get_logs", {"deployment": "checkout"})["lines"])
    assert env.call_tool(c, "describe", {"deployment": "checkout"})["image"].endswith("-bad")
    noisy = cluster("noisy_neighbour")
    assert env.call_tool(noisy, "get_metrics", {"node": "node-1"})["top_consumer"] == "batch-report"
    assert c.writes == []  # reads change nothing


def test_bad_calls_raise_tool_errors_with_reasons():
    c = cluster("oom")
    with pytest.raises(env.ToolError, match="unknown tool"):
        env.call_tool(c, "kubectl_delete_everything", {})
    with pytest.raises(env.ToolError, match="needs deployment"):
        env.call_tool(c, "get_logs", {})
    with pytest.raises(env.ToolError, match="not found"):
        env.call_tool(c, "describe", {"deployment": "nope"})
    with pytest.raises(env.ToolError, match="between"):
        env.call_tool(c, "set_memory_limit", {"deployment": "search", "memory_mi": "999999"})
    assert c.writes == []


def test_diagnosis_check_needs_service_and_cause():
    c = cluster("disk_full")
    assert env.diagnosis_is_correct(c, "ROOT CAUSE: search: disk full on node-3")
    assert not env.diagnosis_is_correct(c, "ROOT CAUSE: search: bad image")
    assert not env.diagnosis_is_correct(c, None)
