"""What the web view shows at a glance says what it measured: a success rate of the runs whose
outcome is known (and how many those are), a model the run did not name as "unknown" on every
page, time-axis labels that differ, and a step count inferred without step numbers said to be."""

from __future__ import annotations

import re
import time

from fastapi import FastAPI
from fastapi.testclient import TestClient

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.model import Diagnosis, Role, Run, Span
from mast_otel.processors.service.store.run_steps import steps_json, step_rows
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.web.routes import build_router
from mast_otel.processors.web.timeline import axis_labels

TRACE = "ab" * 16


def _client(store: DiagnosisStore) -> TestClient:
    app = FastAPI()
    app.include_router(build_router(store, None, ProcessorConfig()))
    return TestClient(app)


def test_the_success_rate_counts_only_runs_with_a_known_outcome_and_says_how_many(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    now = time.time()
    outcomes = ["success"] * 19 + ["failure"] + [None] * 80
    store.save_many((Diagnosis(trace_id=f"{i:032x}", findings=[], fatal=False, model="gpt-4o", outcome=outcome,
                               diagnosed_at=now - i), None) for i, outcome in enumerate(outcomes))
    page = _client(store).get("/").text
    row = page.split('<tr data-model="gpt-4o"', 1)[1].split("</tr>", 1)[0]
    assert re.search(r'data-field="success_rate">95%<', row)
    assert re.search(r'data-field="known"[^>]*>of 20 known<', row), row
    chart = page.split('id="success-chart"', 1)[1].split("</svg>", 1)[0]
    widths = {kind: float(w) for w, kind in re.findall(r'width="([\d.]+)"[^>]*data-outcome="(success|failure)"', chart)}
    unknown = re.search(r'data-outcome="unknown" data-runs="(\d+)"', chart)
    assert unknown and unknown.group(1) == "80"
    assert widths == {"success": 38.0, "failure": 2.0}, widths  # shares of all 100 runs on a 200-wide bar
    assert "95% of 20" in chart
    store.close()


def test_a_run_without_a_model_reads_unknown_in_the_runs_list_as_on_its_page(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many([(Diagnosis(trace_id=TRACE, findings=[], fatal=False, model=None, outcome="failure",
                                diagnosed_at=time.time()), None)])
    client = _client(store)
    for path in ("/runs", "/"):  # the runs list and the overview's recent failed runs
        cell = re.search(rf'href="/runs/{TRACE}".*?data-field="model">(.*?)</td>', client.get(path).text, re.S)
        assert cell and "unknown" in cell.group(1), path
    assert re.search(r"<th>model</th><td[^>]*>unknown<", client.get(f"/runs/{TRACE}").text)
    store.close()


def test_time_axis_labels_never_repeat():
    for total in (4, 130_000, 1_000_000, 2_500_000, 800_000_000, 2_500_000_000, 59_000_000_000, 130_000_000_000):
        labels = axis_labels([total * i // 4 for i in range(5)])
        assert len(set(labels)) == 5, (total, labels)
    assert axis_labels([0, 32_500, 65_000, 97_500, 130_000]) == ["0 µs", "32 µs", "65 µs", "98 µs", "130 µs"]


def _run_page(tmp_path, numbered: bool) -> str:
    """A run of one model call and the four tool calls it asked for, with or without step numbers."""
    spans = [Span(TRACE, "a" * 16, None, "invoke_agent triage", 0, 10_000_000, Role.AGENT, agent_name="triage"),
             Span(TRACE, "b" * 16, "a" * 16, "chat gpt-4o", 1_000_000, 2_000_000, Role.LLM, step_index=1 if numbered else None)]
    spans += [Span(TRACE, f"{i:016x}", "a" * 16, "execute_tool kubectl_get", 2_000_000 + i * 1_000_000, 2_500_000 + i * 1_000_000,
                   Role.TOOL, tool_name="kubectl_get", step_index=(i + 2 if numbered else None)) for i in range(4)]
    store = DiagnosisStore(tmp_path / f"d{numbered}.sqlite")
    store.save_many([(Diagnosis(trace_id=TRACE, findings=[], fatal=False, model="gpt-4o", step_count=5,
                                diagnosed_at=time.time()), None)], {TRACE: steps_json(step_rows(Run.from_spans(TRACE, spans)))})
    page = _client(store).get(f"/runs/{TRACE}").text
    store.close()
    note = re.search(r'<p[^>]*data-field="steps-inferred">(.*?)</p>', page, re.S)
    return re.search(r'data-field="step_count">(.*?)</td>', page, re.S).group(1), note.group(1) if note else None


def test_a_step_count_inferred_without_step_numbers_says_so(tmp_path):
    inferred, note = _run_page(tmp_path, numbered=False)
    assert inferred.startswith("1 ") and "5 model and tool calls" in inferred
    assert note and "no step numbers" in note and "a model call and the tool calls after it" in note, note
    numbered, note = _run_page(tmp_path, numbered=True)
    assert numbered.startswith("5 ") and note is None
