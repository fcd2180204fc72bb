from __future__ import annotations

import pytest

from mast_otel.processors import taxonomy
from mast_otel.processors.model import Finding, Role, Run, Span, merge_findings


def test_registry_holds_the_fourteen_design_modes() -> None:
    assert taxonomy.MODE_IDS == (
        "FM-1.1", "FM-1.2", "FM-1.3", "FM-1.4", "FM-1.5",
        "FM-2.1", "FM-2.2", "FM-2.3", "FM-2.4", "FM-2.5", "FM-2.6",
        "FM-3.1", "FM-3.2", "FM-3.3",
    )
    fatal = {m.id for m in taxonomy.MODES.values() if m.severity == "fatal"}
    assert fatal == {"FM-1.4", "FM-1.5", "FM-2.2", "FM-2.3", "FM-3.1"}
    assert {m.category for m in taxonomy.MODES.values()} == {"FC1", "FC2", "FC3"}
    assert all(m.definition and set(m.covered_by) <= {"rules", "judge"} for m in taxonomy.MODES.values())


def test_severity_overrides_and_bare_label_ids() -> None:
    assert taxonomy.get("1.3").id == "FM-1.3"
    assert taxonomy.severity("FM-1.3", {"FM-1.3": "fatal"}) == "fatal"
    assert taxonomy.is_fatal(["FM-1.3"]) is False
    assert taxonomy.is_fatal(["FM-1.3", "FM-3.1"]) is True
    with pytest.raises(KeyError, match="unknown failure mode"):
        taxonomy.get("FM-9.9")


def _span(sid: str, parent: str | None, role: Role, start: int, **kw) -> Span:
    return Span("t" * 32, sid, parent, sid, start, start + 10, role=role, **kw)


def test_run_root_is_outermost_agent_even_under_a_non_agent_parent() -> None:
    spans = [
        _span("http", None, Role.OTHER, 0),
        _span("outer", "http", Role.AGENT, 1, agent_name="triage"),
        _span("inner", "outer", Role.AGENT, 2, agent_name="fixer"),
        _span("llm", "inner", Role.LLM, 3, model="m1"),
        _span("llm2", "outer", Role.LLM, 4, model="m1"),
        _span("tool", "inner", Role.TOOL, 5, tool_name="kubectl"),
    ]
    run = Run.from_spans("t" * 32, reversed(spans))
    assert run.root is not None and run.root.span_id == "outer"
    assert run.agent == "triage" and run.model == "m1"
    assert [s.span_id for s in run.steps] == ["llm", "llm2", "tool"]
    assert run.agent_of(run.span("tool")).span_id == "inner"


def test_merge_keeps_each_source_and_sorts_modes() -> None:
    findings = [
        Finding("FM-3.3", 0.9, "x", ("a",), source="rules"),
        Finding("FM-1.3", 0.6, "y", ("b",), source="judge"),
        Finding("FM-1.3", 0.8, "z", ("c", "b"), source="rules"),
    ]
    merged = merge_findings(findings)
    assert list(merged) == ["FM-1.3", "FM-3.3"]
    assert merged["FM-1.3"].sources == ("judge", "rules")
    assert merged["FM-1.3"].confidence == 0.8
    assert merged["FM-1.3"].evidence_span_ids == ("b", "c")


def test_build_diagnosis_takes_run_facts_and_fatality_from_overrides() -> None:
    from mast_otel.processors.model import RunHints
    from mast_otel.processors.attribution import build_diagnosis

    root = _span("root", None, Role.AGENT, 0, agent_name="sre", service_name="svc",
                 hints=RunHints(outcome="failure", score=0.25))
    run = Run.from_spans("t" * 32, [root, _span("llm", "root", Role.LLM, 1, model="m")])
    found = [Finding("FM-1.3", 0.9, "loop", ("llm",))]
    d = build_diagnosis(run, found)
    assert (d.agent, d.model, d.service_name, d.outcome, d.score) == ("sre", "m", "svc", "failure", 0.25)
    assert d.fatal is False and d.modes == ["FM-1.3"] and d.sources == ["rules"]
    assert build_diagnosis(run, found, severity_overrides={"FM-1.3": "fatal"}).fatal is True
    assert (d.started_ns, d.ended_ns, d.span_count, d.step_count) == (0, 11, 2, 1)


def test_an_attribution_as_a_dict_is_what_asdict_gives_and_reads_back():
    """``Attribution.as_dict`` reads the fields in C instead of ``dataclasses.asdict``'s deep copy."""
    from dataclasses import asdict

    from mast_otel.processors.attribution import Attribution

    for attribution in (Attribution("fixer", "00f1", "rules", "FM-1.3", 4, "lead", "#4 tool 'get_pods'"),
                        Attribution(None, None, "judge", "FM-2.3")):
        assert attribution.as_dict() == asdict(attribution)
        assert list(attribution.as_dict()) == list(asdict(attribution))
        assert Attribution.from_dict(attribution.as_dict()) == attribution


def test_arrived_states_of_a_run_are_each_spans_arrived_state_with_its_hints_copied():
    """``arrived_states`` (a run's completion) reads what ``arrived_state`` reads span by span: the
    same values, hints as copies (equal, not the same object, so a diagnosis changing the span's
    hints in place leaves them as they arrived), and the count of spans with hints."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mast_otel.processors.model import RunHints, Span, arrived_state, arrived_states

    hints = st.builds(RunHints, max_steps=st.none() | st.integers(0, 50), task=st.none() | st.text(max_size=20),
                      constraints=st.lists(st.text(max_size=5), max_size=3).map(tuple),
                      derived=st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))
    span = st.builds(Span, st.just("ab" * 16), st.text("0123456789abcdef", min_size=16, max_size=16),
                     st.none() | st.just("cd" * 8), st.text(max_size=10), st.integers(0, 10), st.integers(10, 20),
                     role=st.sampled_from(list(Role)), hints=st.none() | hints,
                     model=st.none() | st.text(max_size=8), tool_result=st.none() | st.text(max_size=30))

    @settings(max_examples=80, deadline=None)
    @given(st.lists(span, max_size=12))
    def check(spans: list[Span]) -> None:
        states, hinted = arrived_states(spans)
        assert states == [arrived_state(s) for s in spans]
        assert hinted == sum(s.hints is not None for s in spans)
        for s, state in zip(spans, states):
            assert state[-1] is None if s.hints is None else (state[-1] == s.hints and state[-1] is not s.hints)
            if s.hints is not None:
                s.hints.max_steps = -1  # changed in place after completion, as a diagnosis may
                assert state[-1].max_steps != -1

    check()


def test_a_copied_span_or_hints_holds_every_field_as_the_original_does():
    """The copier a span's or its hints' copy is made with (their ``__init__`` with every field)
    gives what setting each slot gives, and a class whose ``__init__`` does not take every field
    is copied slot by slot."""
    from dataclasses import dataclass, field, fields

    from mast_otel.processors.model import RunHints, Span, _slot_copier

    span = Span("ab" * 16, "cd" * 8, None, "chat", 1, 2, role=Role.LLM, model="m", requested_tools=("a",),
                tool_exchanges={"c": ("a", None, "r")}, hints=RunHints(max_steps=3, derived={"k": "v"}), wire_bytes=99)
    for obj in (span, span.hints):
        cls = type(obj)
        copied = _slot_copier(cls, tuple(f.name for f in fields(cls)))(obj)
        assert copied is not obj and type(copied) is cls
        assert all(getattr(copied, f.name) is getattr(obj, f.name) for f in fields(cls))  # shallow: the same values

    @dataclass(slots=True)
    class Partly:
        a: int
        b: list[int] = field(default_factory=list, init=False)

    partly = Partly(1)
    partly.b.append(2)
    copied = _slot_copier(Partly, ("a", "b"))(partly)
    assert (copied.a, copied.b) == (1, [2]) and copied.b is partly.b
