"""A small builder of runs made of plain ``Span`` objects, the way normalized OTel spans look."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.model import Role, Run, RunHints, Span

TRACE = "ab" * 16


class RunBuilder:
    """Spans in execution order; every step gets the next start time and a readable span id."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._clock = itertools.count(1)
        self._ids = itertools.count(1)

    def _span(self, role: Role, name: str, parent: Span | None, sid: str | None, **kw: Any) -> Span:
        t = next(self._clock) * 1000
        span = Span(TRACE, sid or f"{role.value[:1]}{next(self._ids):015d}", parent.span_id if parent else None,
                    name, t, t + 500, role=role, **kw)
        self.spans.append(span)
        return span

    def agent(self, name: str = "sre", parent: Span | None = None, sid: str | None = None, **hints: Any) -> Span:
        return self._span(Role.AGENT, f"invoke_agent {name}", parent, sid, agent_name=name, hints=RunHints(**hints))

    def llm(self, parent: Span, sid: str | None = None, **kw: Any) -> Span:
        return self._span(Role.LLM, "chat m1", parent, sid, model=kw.pop("model", "m1"), **kw)

    def tool(self, parent: Span, name: str, args: Any = None, result: Any = None, *, kind: str = "other",
             sid: str | None = None, **kw: Any) -> Span:
        return self._span(Role.TOOL, f"execute_tool {name}", parent, sid, tool_name=name, tool_kind=kind,
                          args_hash=stable_hash(args) if args is not None else None,
                          result_hash=stable_hash(result) if result is not None else None, **kw)

    def run(self, completion: str = "root_ended") -> Run:
        for agent in (s for s in self.spans if s.role is Role.AGENT):  # agents end after their steps
            agent.end_ns = max(s.end_ns for s in self.spans) + 1
        return Run.from_spans(TRACE, list(self.spans), completion=completion)


@pytest.fixture
def rb() -> RunBuilder:
    return RunBuilder()
