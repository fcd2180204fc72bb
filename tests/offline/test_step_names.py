"""Steps are named by number, kind and name wherever a person reads them; span ids stay in machine fields."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mast_otel.processors import taxonomy
from mast_otel.processors.cli import main
from mast_otel.processors.service.store.run_steps import RunStep
from mast_otel.processors.step_names import StepNames, step_numbers

ROOT = Path(__file__).resolve().parents[2]
STEP_LIST = str(ROOT / "tests" / "fixtures" / "runs" / "sre_steplist.json")
SPAN_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")


def step(i: int, role: str, index: int | None = None, **fields) -> RunStep:
    return RunStep(f"{i:016x}", None, role, fields.pop("name", f"span {i}"), i, i + 1, step_index=index, **fields)


def test_steps_are_numbered_as_step_limits_count_them_without_framework_numbers() -> None:
    """A model call and the tool calls after it are one step; a tool call before any model call is its own."""
    steps = [step(0, "agent", agent="sre-agent"), step(1, "tool", tool_name="get_pods"),
             step(2, "llm", model="gpt-4o-mini", name="chat gpt-4o-mini"), step(3, "tool", tool_name="restart"),
             step(4, "tool", tool_name="check"), step(5, "llm", model="gpt-4o-mini")]
    assert step_numbers(steps) == {steps[1].span_id: 1, steps[2].span_id: 2, steps[3].span_id: 2,
                                   steps[4].span_id: 2, steps[5].span_id: 3}
    names = StepNames(steps)
    assert names.labels(s.span_id for s in steps) == [
        "agent sre-agent", "#1 tool get_pods", "#2 chat gpt-4o-mini", "#2 tool restart", "#2 tool check",
        "#3 chat gpt-4o-mini"]
    assert names.label("f" * 16) is None and names.labels(["f" * 16]) == ["f" * 16]


def test_the_framework_s_own_step_numbers_win_and_a_folded_list_numbers_only_those() -> None:
    steps = [step(1, "llm", 7, model="m"), step(2, "tool", 7, tool_name="t"), step(3, "llm", model="m")]
    assert StepNames(steps).labels(s.span_id for s in steps) == ["#7 chat m", "#7 tool t", "#2 chat m"]
    # a list the store folded cannot count the steps it left out: unnumbered steps keep their kind and name
    assert StepNames(steps, complete=False).labels(s.span_id for s in steps) == ["#7 chat m", "#7 tool t", "chat m"]


def test_analyze_names_steps_and_says_what_to_do_in_the_table_json_and_html(tmp_path, capsys) -> None:
    assert main(["analyze", STEP_LIST, "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    looped = next(r for r in summary["runs"] if "FM-1.3" in r["modes"])
    who = looped["attribution"]
    assert re.fullmatch(r"#\d+ chat model-a", who["step_label"]) and SPAN_ID.fullmatch(who["step_span_id"])
    for run in summary["runs"]:
        for f in run["findings"]:
            assert len(f["evidence_steps"]) == len(f["evidence_span_ids"])
            assert not [label for label in f["evidence_steps"] if SPAN_ID.search(label)], f
            assert f["what_to_do"]["description"] == taxonomy.get(f["mode"]).definition
    loop = next(f for f in looped["findings"] if f["mode"] == "FM-1.3")
    assert all(re.fullmatch(r"#\d+ tool get_pods", label) for label in loop["evidence_steps"])
    assert loop["what_to_do"]["guards"] == ["loop"] and loop["what_to_do"]["docs"].startswith("docs/modes.md#fm-13")

    assert main(["analyze", STEP_LIST]) == 0
    table = capsys.readouterr().out
    assert f"{looped['trace_id']}: went wrong at {who['agent']}, {who['step_label']} ({who['mode']})" in table
    assert "evidence: " + "; ".join(loop["evidence_steps"]) in table
    words = table.split("\nFindings\n", 1)[1]
    assert not SPAN_ID.findall(words.replace(looped["trace_id"], "")), "a span id shown where a step is meant"
    assert "What to do" in words and "FM-1.3 Step repetition: " in words and "Guard: loop." in words

    out = tmp_path / "report.html"
    assert main(["analyze", STEP_LIST, "--format", "html", "--output", str(out)]) == 0
    html = out.read_text()
    assert f'<td class="went-wrong">{who["agent"]}, {who["step_label"]}</td>' in html
    assert 'data-what-to-do="FM-1.3"' in html and "detection.repetition.min_tool_repeats" in html
