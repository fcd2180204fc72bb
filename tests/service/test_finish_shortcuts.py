"""Finishing a run does some work once that it did twice; each must give what the plain way gives.

- ``arrived_states`` tells the spans with hints in C;
- a diagnosis locates each finding's decisive step once (``attribute`` tries it per pool, and a
  team's findings are located by ``with_agents`` first), on the shortcuts path (``Run.shortcuts``);
- the merge stage keeps a run's spans as they arrived from the states the assembler took when
  the run completed, rather than reading every span again;
- the store writes those spans from the spans and their states, rather than from a copy of each span.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast_otel.processors import attribution, model
from mast_otel.processors.attribution import attribute, build_diagnosis
from mast_otel.processors.model import Finding, Role, Run, RunHints, Span, arrived_state, arrived_states
from mast_otel.processors.service.pipeline import merge
from tests.detectors.conftest import TRACE, RunBuilder

@pytest.fixture
def rb() -> RunBuilder:
    return RunBuilder()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), max_size=12))
def test_arrived_states_are_each_spans_arrived_state(with_hints) -> None:
    spans = [Span(TRACE, f"{i:016x}", None, "s", i, i + 1, role=Role.AGENT if hinted else Role.LLM,
                  hints=RunHints(max_steps=i) if hinted else None) for i, hinted in enumerate(with_hints)]
    states, hinted = arrived_states(spans)
    assert hinted == sum(with_hints)
    assert states == [arrived_state(s) for s in spans]
    for span, state in zip(spans, states):
        assert state[-1] is None if span.hints is None else (state[-1] is not span.hints and state[-1] == span.hints)


def test_a_diagnosis_locates_each_findings_step_once_on_the_shortcuts_path_and_agrees_with_the_plain_one(rb, monkeypatch) -> None:
    """A team's finding is located for its agent and again for the attribution, which tries the
    weighty findings, then all of them: once on the shortcuts path, each time on the plain one,
    with the same diagnosis."""
    lead = rb.agent("lead", claimed_success=False)
    rb.llm(lead)
    worker = rb.agent("worker", parent=lead)
    call = rb.llm(worker, requested_tools=("get_pods",))
    tool = rb.tool(worker, "get_pods", {}, "Error: refused", error=True)
    findings = [Finding("FM-3.3", 0.6, "x", (tool.span_id,), source="rules", detector="d"),
                Finding("FM-1.3", 0.6, "y", (call.span_id, tool.span_id), source="rules", detector="e")]
    calls: list[Finding] = []
    decisive = attribution.decisive_step
    monkeypatch.setattr(attribution, "decisive_step", lambda run, f, by_id: calls.append(f) or decisive(run, f, by_id))
    diagnoses = []
    for shortcuts in (True, False):
        calls.clear()
        run = Run.from_spans(TRACE, copy.deepcopy(rb.spans), shortcuts=shortcuts)
        assert len(run.agent_spans) > 1
        diagnoses.append(build_diagnosis(run, findings))
        located = [(f.mode, f.evidence_span_ids) for f in calls]
        if shortcuts:
            assert sorted(located) == sorted({(f.mode, f.evidence_span_ids) for f in findings})
        else:
            assert len(located) > len(findings)
    assert diagnoses[0] == diagnoses[1] and diagnoses[0].attribution is not None
    run = Run.from_spans(TRACE, copy.deepcopy(rb.spans))
    assert attribute(run, diagnoses[0].findings) == diagnoses[0].attribution


def test_the_merge_keeps_the_states_the_assembler_took_for_the_spans_it_retained(rb) -> None:
    from mast_otel.processors.service.pipeline.assembler import Retained, TraceBuffer

    agent = rb.agent("sre", max_steps=3)
    rb.llm(agent)
    buf = TraceBuffer(TRACE, 0.0, 0.0)
    buf.spans = copy.deepcopy(rb.spans)
    states = arrived_states(buf.spans)[0]
    kept = Retained(buf.spans, 0, 0.0, None, "root_ended", arrived=states)
    assert merge._arrived(buf.spans, buf, kept) is states
    buf.spans[0].hints.max_steps = 9  # what a diagnosis may make of a span: the states stay as it arrived
    assert merge._arrived(buf.spans, buf, kept)[0][-1].max_steps == 3
    others = copy.deepcopy(buf.spans)  # spans another replica stored with these: read now
    assert merge._arrived(others, buf, kept) == arrived_states(others)[0]
    assert merge._arrived(buf.spans, buf, None) == arrived_states(buf.spans)[0]
    assert merge._arrived(buf.spans, buf, Retained(buf.spans, 0, 0.0, None, "root_ended")) == arrived_states(buf.spans)[0]


def test_the_merge_reads_each_runs_arrived_states_once_for_a_store_that_keeps_spans(monkeypatch, tmp_path) -> None:
    """With a store that keeps spans (a shared one), the spans it is handed are those the
    assembler's states make, and no span is read for them a second time."""
    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.ingest.decode import DecodeResult
    from mast_otel.processors.service.pipeline import assembler as assembly
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore
    from mast_otel.processors.service.store.span_codec import parse_spans, spans_json
    from mast_otel.processors.service.telemetry.metrics import Metrics

    rb = RunBuilder()
    agent = rb.agent("sre", max_steps=1)
    rb.llm(agent), rb.tool(agent, "get_pods", {}, "x"), rb.llm(agent), rb.tool(agent, "get_pods", {}, "x")
    arrived = copy.deepcopy(rb.run().spans)
    store = DiagnosisStore(tmp_path / "d.sqlite")
    monkeypatch.setattr(DiagnosisStore, "keeps_spans", property(lambda self: True))
    reads, real = [], model.arrived_states
    for where in (model, assembly, merge):
        monkeypatch.setattr(where, "arrived_states", lambda spans: reads.append(len(spans)) or real(spans))
    config = ProcessorConfig(assembly={"grace_seconds": 0, "idle_timeout_seconds": 600})
    stage = IngestStage(config, Metrics(config.metrics), store)
    stage.ingest(DecodeResult(spans=copy.deepcopy(arrived)), "http")
    assert stage.sweep() == 1
    assert reads == [len(arrived)]  # as the run completed, and not again
    diagnosed = stage.get_run(TRACE)
    assert diagnosed is not None and diagnosed.hints.max_steps == 1
    text = store.spans(TRACE)
    assert text is not None and text == spans_json(arrived)
    assert parse_spans(text) == arrived
    store.close()


_VALUES = {"role": st.sampled_from(list(Role)), "hints": st.none() | st.builds(RunHints, max_steps=st.integers(0, 3)),
           "error": st.booleans(), "derived": st.none() | st.dictionaries(st.sampled_from(["a", "b"]), st.text(max_size=3), max_size=2)}


@st.composite
def _diagnosed(draw) -> tuple[list[Span], list[Span]]:
    """Spans as they arrived, and the same spans after a diagnosis changed some of the fields
    it writes (in place, as the rules' stage does)."""
    arrived = []
    for i in range(draw(st.integers(0, 6))):
        kw = {name: draw(_VALUES.get(name, st.none() | st.text(max_size=4))) for name in draw(
            st.lists(st.sampled_from(model.ARRIVED_FIELDS), max_size=5, unique=True))}
        kw.update({name: draw(st.none() | st.text(max_size=4)) for name in draw(
            st.lists(st.sampled_from(["input_text", "output_text", "tool_args", "tool_description", "tool_call_id"]),
                     max_size=2, unique=True))})
        parent = kw.pop("parent_span_id", None)
        arrived.append(Span(TRACE, f"{i:016x}", parent, "s", i, i + 1, **kw))
    diagnosed = copy.deepcopy(arrived)
    for span in diagnosed:
        for name in draw(st.lists(st.sampled_from(model.ARRIVED_FIELDS), max_size=4, unique=True)):
            if name == "hints" and span.hints is not None and draw(st.booleans()):
                span.hints.max_steps = 7  # changed in place, as derivation does
            else:
                setattr(span, name, draw(_VALUES.get(name, st.none() | st.text(max_size=4))))
    return arrived, diagnosed


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_diagnosed(), min_size=1, max_size=3))
def test_spans_written_from_their_arrived_states_are_the_text_of_their_arrived_copies(runs) -> None:
    """The store writes a run's spans as they arrived from its spans and their states, without
    copying each span: the same text as writing copies, byte for byte, run after run (the
    encoder's fields widen as runs fill more), and it reads back as the spans that arrived."""
    from mast_otel.processors.service.store.span_codec import SpanEncoder, parse_spans

    from_states, from_copies = SpanEncoder(), SpanEncoder()
    for arrived, diagnosed in runs:
        states = arrived_states(copy.deepcopy(arrived))[0]
        text = from_states(diagnosed, {"x": None}, states)
        assert text == from_copies(list(map(model.as_arrived, diagnosed, states)), {"x": None})
        assert parse_spans(text) == arrived
