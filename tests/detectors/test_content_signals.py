"""Content signals on OTel-shaped runs of a non-AG2 shape (an SRE agent's tool calls), and on step lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import diagnose
from mast_otel.processors.detectors import text
from mast_otel.processors.detectors.content_signals import CONFIDENCE, DETECTOR, OPT_IN
from mast_otel.processors.ingest.transcripts import runs_from_steplist

ON = DetectionConfig(content=OPT_IN)
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
QUERY = ("sum by (pod, node) (rate(container_cpu_usage_seconds_total{{namespace=\"checkout\", container!=\"\", "
         "pod=~\"api-.*\", cluster=\"eu-west-1\", job=\"kubelet\", metrics_path=\"/metrics/cadvisor\"}}[{window}])) "
         "/ sum by (pod, node) (kube_pod_container_resource_limits{{resource=\"cpu\", namespace=\"checkout\", "
         "job=\"kube-state-metrics\", cluster=\"eu-west-1\"}})")


def content_findings(run, config=ON) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in diagnose(run, config):
        if f.detector == DETECTOR:
            out.setdefault(f.mode, []).append(f)
    return out


def test_text_measures() -> None:
    assert text.numbers("total 1,089/20 dollars, about 54.45, at -3") >= {1089.0, 20.0, 54.45, -3.0}
    assert text.any_same(text.numbers("26.67%"), text.numbers("26.666666666666668"))
    assert text.any_same(text.numbers("$1.50"), text.numbers("price: $3/2"))
    assert not text.any_same(text.numbers("4.2"), text.numbers("4.1697"))
    assert text.numbers("pod-3 api_v2") == frozenset()  # digits inside names are not values
    a, b = text.shingles("The Quick brown fox jumps"), text.shingles("the quick, brown fox jumps!")
    assert text.jaccard(a, b) == 1.0 and text.jaccard(a, text.shingles("a b c d")) == 0.0


def test_signals_are_off_by_default(rb) -> None:
    a = rb.agent(final_answer="42")
    for _ in range(3):
        rb.tool(a, "prometheus_query", QUERY, "41", tool_args=QUERY.format(window="5m"), tool_result="api-1 41")
    assert content_findings(rb.run(), DetectionConfig()) == {}
    assert set(content_findings(rb.run())) == {"FM-1.3", "FM-2.6"}


def test_nearly_repeated_tool_input_is_repeated_work(rb) -> None:
    a = rb.agent()
    first = rb.tool(a, "prometheus_query", 1, "a", tool_args=QUERY.format(window="5m"), tool_result="api-1 0.93")
    rb.llm(a, output_text="CPU is high on api-1; checking the limit next.")
    again = rb.tool(a, "prometheus_query", 2, "b", tool_args=QUERY.format(window="10m"), tool_result="api-1 0.91")
    (f,) = content_findings(rb.run())["FM-1.3"]
    assert f.evidence_span_ids == (first.span_id, again.span_id) and f.span_id == again.span_id
    assert f.confidence == CONFIDENCE < 0.7 and "prometheus_query" in f.explanation
    assert "container_cpu" not in f.explanation and "%" in f.explanation


def test_different_work_short_lines_and_other_agents_are_not_repeated_work(rb) -> None:
    root = rb.agent("lead")
    rb.tool(root, "prometheus_query", 1, "a", tool_args=QUERY.format(window="5m"), tool_result="0.9")
    rb.tool(root, "kubectl", 2, "b", tool_args="kubectl get events -n checkout --sort-by=.lastTimestamp "
            "--field-selector involvedObject.name=api-1 -o wide", tool_result="OOMKilled")
    for _ in range(3):
        rb.llm(root, output_text="Handing over to the on-call agent.")
    other = rb.agent("oncall", parent=root)
    rb.tool(other, "prometheus_query", 3, "c", tool_args=QUERY.format(window="5m"), tool_result="0.9")
    assert "FM-1.3" not in content_findings(rb.run())


def test_more_calls_after_the_answer_was_computed(rb) -> None:
    a = rb.agent(final_answer="3 pods")
    found = rb.tool(a, "kubectl", 1, "r", tool_args="get pods", tool_result="crashlooping: 3")
    more = [rb.tool(a, name, i, "x", tool_args=name, tool_result="ok") for i, name in enumerate(("logs", "describe"))]
    (f,) = content_findings(rb.run())["FM-1.5"]
    assert f.evidence_span_ids == (found.span_id, *(m.span_id for m in more)) and "2 more tool call" in f.explanation


def test_answer_computed_last_is_not_continued_work(rb) -> None:
    a = rb.agent(final_answer="3 pods")
    rb.tool(a, "kubectl", 1, "r", tool_args="get deployments", tool_result="replicas: 5")
    rb.tool(a, "kubectl", 2, "s", tool_args="get pods", tool_result="crashlooping: 3")
    assert content_findings(rb.run()) == {}


@pytest.mark.parametrize("answer, last_result, flagged", [
    ("42", "errors in the last hour: 41", True),
    ("41", "errors in the last hour: 41", False),
    ("0.25", "error ratio 1/4", False),
    ("error rate rose after the 14:02 deploy, so I rolled back to version 7 of api", "41", False),  # prose
    ("rolled back", "41", False),  # no value to compare
])
def test_answer_against_the_last_computed_result(rb, answer, last_result, flagged) -> None:
    a = rb.agent(final_answer=answer)
    rb.tool(a, "promql", 1, "r", tool_args="sum(errors)", tool_result="12")
    last = rb.tool(a, "promql", 2, "s", tool_args="sum(errors[1h])", tool_result=last_result)
    rb.tool(a, "promql", 3, error=True, tool_args="bad query", tool_result="parse error at 1:7")  # failed: not a result
    found = content_findings(rb.run()).get("FM-2.6", [])
    assert bool(found) is flagged
    if flagged:
        assert found[0].evidence_span_ids[0] == last.span_id and "promql" in found[0].explanation


def test_no_content_no_content_findings(rb) -> None:
    a = rb.agent(final_answer="42")
    for i in range(3):
        rb.tool(a, "promql", i, i)
    assert content_findings(rb.run()) == {}


def test_fixture_runs_raise_no_content_findings() -> None:
    runs = runs_from_steplist(json.loads((FIXTURES / "sre_steplist.json").read_text()))
    assert all(content_findings(run) == {} for run in runs)


def test_repeated_turn_passing_lines_are_not_step_repetition(rb) -> None:
    a = rb.agent()
    for _ in range(3):
        rb.llm(a, output_text="Next: the verifier agent.")
    assert diagnose(rb.run()) == []
    substantive = "Checked the api-1 pod logs again; the OOM kill repeats every four minutes since the deploy."
    outs = [rb.llm(a, output_text=substantive) for _ in range(3)]
    (f,) = [f for f in diagnose(rb.run()) if f.mode == "FM-1.3"]
    assert f.evidence_span_ids == tuple(o.span_id for o in outs)
