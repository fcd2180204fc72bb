"""Finishing's shortcuts give the plain path's answers: a handing agent's decision and a receiver's
first call looked up in the run's model calls grouped by agent (``Run.shortcuts``), and a report's
first words split from a prefix of it (``tools.kinds.leading_words``), and
the conversation's exchanges of a run's tool calls found from its last spans (``hints._exchanges_of``)."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast_otel.processors.hints import _exchanges_of, derive_hints
from mast_otel.processors.model import Role, Run, Span
from mast_otel.processors.team import Handoff, decision_of, first_call_of, team_of
from mast_otel.processors.tools.kinds import leading_words, words
from tests.detectors.conftest import TRACE
from tests.detectors.test_fast_paths import _traces


def _asks(run: Run) -> list[Handoff | tuple[str | None, int]]:
    """Every handoff of the run's team, and one from every agent span at every span's start;
    every agent name (and one no agent has) at every span's start, a tick before and after."""
    times = sorted({t for s in run.spans for t in (s.start_ns - 1, s.start_ns, s.start_ns + 1)})
    names = sorted({s.agent_name for s in run.spans if s.agent_name}) + ["Nobody", None]
    asks: list[Handoff | tuple[str | None, int]] = list(team_of(run).handoffs) if len(run.agent_spans) > 1 else []
    for agent in [*run.agent_spans, None]:
        asks += [Handoff("h", agent.span_id if agent is not None else None, None, None, "transfer", t) for t in times]
    asks += [(name, t) for name in names for t in times]
    return asks


def _answers(run: Run, asks: list[Handoff | tuple[str | None, int]]) -> list[Span | None]:
    return [decision_of(run, a) if isinstance(a, Handoff) else first_call_of(run, *a) for a in asks]


def _both_ways(trace_id: str, spans: list[Span]) -> tuple[int, int]:
    fast = Run.from_spans(trace_id, copy.deepcopy(spans))
    plain = Run.from_spans(trace_id, copy.deepcopy(spans), shortcuts=False)
    derive_hints(fast)
    derive_hints(plain)
    asks = _asks(plain)
    got, want = _answers(fast, asks), _answers(plain, asks)
    assert [s.span_id if s else None for s in got] == [s.span_id if s else None for s in want]
    return len(asks), sum(s is not None for s in want)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces())
def test_decisions_and_first_calls_are_found_as_a_scan_finds_them(spans) -> None:
    _both_ways(TRACE, spans)


def test_decisions_and_first_calls_of_every_recorded_run_are_found_as_a_scan_finds_them() -> None:
    from mast_otel.processors.ingest.files import load_runs
    from tests.corpora import corpus_files

    asked = found = 0
    for path in corpus_files():
        for run in load_runs([path]):
            a, f = _both_ways(run.trace_id, run.spans + run.wrappers)
            asked, found = asked + a, found + f
    assert asked > 10_000 and found > 1_000  # calls were asked for and found both ways


_TEXT = st.text(st.sampled_from("aZ9 -_.:\nbQx"), max_size=600)


@settings(max_examples=500, deadline=None)
@given(_TEXT, st.integers(0, 60))
def test_the_leading_words_of_a_text_are_its_first_words(text, count) -> None:
    assert leading_words(text, count) == words(text)[:count]


def test_the_leading_words_of_a_long_report_cut_inside_a_word_are_its_first_words() -> None:
    # the first prefix ends inside a word, and one inside a run of separators or between a small letter and a capital
    for head in range(0, 80):
        text = "x" * head + " checksPassedOK " * 200
        assert leading_words(text, 40) == words(text)[:40]
        text = "aB" * head + " -- " * 300 + "fail"
        assert leading_words(text, 40) == words(text)[:40]


_CALL_IDS = st.sampled_from(["c1", "c2", "c3", "c4"])
_EXCHANGE = st.tuples(st.sampled_from([None, "a1", "a2"]), st.sampled_from([None, "r1", "r2"]), st.sampled_from([None, "ok", "Error: x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([Role.LLM, Role.TOOL, Role.OTHER]), st.none() | _CALL_IDS,
                          st.none() | st.dictionaries(_CALL_IDS, _EXCHANGE, max_size=4)), min_size=1, max_size=10))
def test_the_exchanges_of_a_runs_tool_calls_are_the_merged_exchanges_of_its_spans(made) -> None:
    spans = [Span(TRACE, f"{i:016x}", None, "s", 1000 + i, 2000 + i, role=role, tool_call_id=call_id if role is Role.TOOL else None,
                  tool_exchanges=exchanges) for i, (role, call_id, exchanges) in enumerate(made)]
    run = Run.from_spans(TRACE, spans)
    merged = {k: v for s in run.spans if s.tool_exchanges for k, v in s.tool_exchanges.items()}
    wanted = {s.tool_call_id for s in run.tool_calls} & set(merged)
    assert _exchanges_of(run) == {k: merged[k] for k in wanted}
