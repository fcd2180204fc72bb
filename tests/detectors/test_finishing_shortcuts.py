"""Finishing's shortcuts give the plain path's answers: the conversation's exchanges of a run's tool
calls found from its last spans (``hints._exchanges_of``, on ``Run.shortcuts``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.hints import _exchanges_of
from mast_otel.processors.model import Role, Run, Span
from tests.detectors.conftest import TRACE

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
