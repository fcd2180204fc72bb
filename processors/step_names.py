"""Steps named the way a person reads them: number, kind and name ("#3 chat gpt-4o-mini").

Span ids stay in the machine fields; wherever a person reads a step (the run page's "went
wrong at" line, the evidence under a finding, ``analyze``'s table, the API's labels) it is
named by its step number, its kind (``chat`` for a model call, ``tool`` for a tool call,
``agent`` for an agent span) and its name (the model, the tool, the agent).

The number is the framework's own step number (``mast.step.index``) when the span carries
one, else the step as step limits count them: a model call and the tool calls after it, up to
the next model call, are one step, numbered from 1 in start order over the whole run (the
count the run page's "steps" shows). Agent spans get no number.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol, Sequence

from mast_otel.processors.detectors.context import IterationCounter
from mast_otel.processors.model import Role, Span

NAME_CHARS = 120  # a longer name (a generated tool name, a long span name) ends in "…" in a label
_KIND = {Role.LLM.value: "chat", Role.TOOL.value: "tool", Role.AGENT.value: "agent"}


class NumberedStep(Protocol):
    """What numbering reads of a step (a ``Span`` or a stored ``RunStep``)."""

    @property
    def span_id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def step_index(self) -> int | None: ...


class NamedStep(Protocol):
    """What naming reads of a step (a ``RunStep`` of the stored step list has it all)."""

    @property
    def span_id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def step_index(self) -> int | None: ...
    @property
    def agent(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def tool_name(self) -> str | None: ...


class _Counted:
    """A step as ``IterationCounter`` reads it."""

    __slots__ = ("span_id", "step_index", "role")

    def __init__(self, step: NumberedStep) -> None:
        self.span_id, self.step_index, self.role = step.span_id, step.step_index, Role(step.role)


def _start(step: NumberedStep) -> tuple[int, int]:
    return step.start_ns, step.step_index if step.step_index is not None else -1


def step_numbers(steps: Iterable[NumberedStep]) -> dict[str, int]:
    """Span id -> step number for every model and tool call (see the module docstring). Once per page or
    diagnosis: a sort and one pass (spans are counted as they are; stored steps, whose role is a plain
    string, through a small stand-in)."""
    calls = sorted((s for s in steps if s.role == "llm" or s.role == "tool"), key=_start)
    counter = IterationCounter()
    add = counter.add
    order: dict[object, int] = {}
    numbers: dict[str, int] = {}
    for step in calls:
        add(step if isinstance(step.role, Role) else _Counted(step))  # type: ignore[arg-type]  # reads span_id, step_index, role
        key = counter.current
        number = order.get(key)
        if number is None:
            number = order[key] = len(order) + 1
        numbers[step.span_id] = step.step_index if step.step_index is not None else number
    return numbers


def label(role: str, name: str, number: int | None = None) -> str:
    """"#3 chat gpt-4o-mini", "#4 tool restart_deployment", "agent sre-agent" (no number: "chat gpt-4o-mini")."""
    kind = _KIND.get(role, role)
    name = name if len(name) <= NAME_CHARS else name[:NAME_CHARS] + "…"
    return f"#{number} {kind} {name}" if number is not None and role != Role.AGENT.value else f"{kind} {name}"


def step_label(step: NamedStep, number: int | None = None) -> str:
    """A stored step's label (see ``label``): a model call by its model, a tool call by its tool."""
    if step.role == Role.LLM.value:
        return label(step.role, step.model or step.name, number)
    if step.role == Role.TOOL.value:
        return label(step.role, step.tool_name or step.name, number)
    return label(step.role, step.agent or step.name, number)


def span_label(span: Span, number: int | None = None) -> str:
    """A span's label, named as ``step_label`` names its stored step."""
    role = span.role.value
    if role == Role.LLM.value:
        return label(role, span.model or span.name, number)
    if role == Role.TOOL.value:
        return label(role, span.tool_name or span.name, number)
    return label(role, span.agent_name or span.name, number)


class StepNames:
    """Labels for a run's steps, numbered once (a stored list folded by the store numbers only the
    steps the framework numbered: the folded ones cannot be counted)."""

    def __init__(self, steps: Sequence[NamedStep], complete: bool = True) -> None:
        self._steps = {s.span_id: s for s in steps}
        self._numbers: Mapping[str, int] = (
            step_numbers(steps) if complete else {s.span_id: s.step_index for s in steps if s.step_index is not None})

    def label(self, span_id: str | None) -> str | None:
        """The step's label; ``None`` when the span is not one of the steps."""
        step = self._steps.get(span_id or "")
        return step_label(step, self._numbers.get(step.span_id)) if step is not None else None

    def number(self, span_id: str) -> int | None:
        return self._numbers.get(span_id)

    def labels(self, span_ids: Iterable[str]) -> list[str]:
        """A label for each span id, the id itself where the span is not a known step."""
        return [self.label(sid) or sid for sid in span_ids]
