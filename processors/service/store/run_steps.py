"""A run's compact step list: what the store keeps of its spans once they are released.

The processor holds a diagnosed run's spans only for the retention window. The step list is
written with the diagnosis so the run page's timeline and ``GET /v1/diagnoses/{id}?include=steps``
work for as long as the diagnosis is kept, across restarts. It holds structure only (ids,
roles, names, times, tool kinds, errors, check results), never message or tool content.

A list is capped in bytes (``store.max_step_list_bytes``): past the cap, long names and lists
are shortened, and if that is not enough, steps are folded, keeping the steps the findings
point at, then the first and the last steps; the list records where steps were folded and how
many, so the page and the API can say so.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, NamedTuple, Sequence, TypeVar

from mast_otel.processors.model import Diagnosis, Role, Run, RunHints, Span
from mast_otel.processors.service.store import compact_json


class RunStep(NamedTuple):
    """One agent, model or tool span of a run, without content (a tuple: cheap to build and write)."""

    span_id: str
    parent_span_id: str | None
    role: str  # "agent" | "llm" | "tool"
    name: str
    start_ns: int
    end_ns: int
    agent: str | None = None  # the agent span's own name, or the agent a step names
    step_index: int | None = None
    model: str | None = None
    input_message_count: int | None = None
    requested_tools: tuple[str, ...] = ()  # tool names a model call asked for
    tool_name: str | None = None
    tool_kind: str | None = None
    error: str | None = None  # the error type, or "error" when the span failed without one
    verification_passed: bool | None = None
    budget: int | None = None  # an agent's ``mast.task.max_steps``
    constraints: tuple[str, ...] = ()  # an agent's declared constraints
    termination_reason: str | None = None  # how an agent ended
    tool_kind_source: str | None = None  # "catalog" or "inferred" when the kind was not emitted
    # guard interventions on this span: (guard, mode, action, failure mode) each
    interventions: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def label(self) -> str:
        """What the timeline calls it: the tool, the agent, or the model call's span name."""
        if self.role == Role.TOOL.value:
            return self.tool_name or self.name
        if self.role == Role.AGENT.value:
            return self.agent or self.name
        return self.name


_FIELDS = RunStep._fields
_REQUIRED = ("span_id", "role", "name", "start_ns", "end_ns")
_TUPLES = ("requested_tools", "constraints", "interventions")


StepRow = tuple[
    str, str | None, str, str, int, int, str | None, int | None, str | None, int | None, tuple[str, ...],
    str | None, str | None, str | None, bool | None, int | None, tuple[str, ...], str | None, str | None,
    tuple[tuple[str, str, str, str], ...],
]
"""A step as a plain tuple of :class:`RunStep`'s fields in order: what a diagnosis hands its
outputs and the store writes. Plain, because a ``NamedTuple`` costs a second copy to build and a
third to serialize (orjson writes only exact tuples); readers wrap rows in ``RunStep``."""

_new_step = tuple.__new__  # RunStep(...) goes through a generated Python __new__; this does not
_NO_HINTS = RunHints()  # what a span without hints reads as (read only)


def _interventions(span: Span) -> tuple[tuple[str, str, str, str], ...]:
    """The span's guard interventions as (guard, mode, action, failure mode) tuples."""
    return tuple((g.guard, g.mode, g.action, g.failure_mode) for g in span.guard_interventions)


def step_rows(run: Run) -> list[StepRow]:
    """The run's agent, model and tool spans in start order, as rows (one comprehension: it runs
    per span; ``role._value_`` is the member's stored value, read without ``Enum``'s Python-level
    ``value`` property or ``__hash__``)."""
    no_hints, other, interventions = _NO_HINTS, Role.OTHER, _interventions
    return [(
        s.span_id, s.parent_span_id, s.role._value_, s.name, s.start_ns, s.end_ns,
        s.agent_name, s.step_index, s.model, s.input_message_count, s.requested_tools, s.tool_name,
        s.tool_kind, (s.error_type or "error") if s.error else None, s.verification_passed,
        h.max_steps, h.constraints, h.termination_reason, s.tool_kind_source,
        interventions(s) if s.guard_interventions else (),
    ) for s in run.spans if s.role is not other for h in (s.hints or no_hints,)]


def as_steps(rows: Iterable[StepRow]) -> list[RunStep]:
    """Rows as :class:`RunStep` (for readers: the timeline, the API)."""
    new, step = _new_step, RunStep
    return [new(step, row) for row in rows]


def run_steps(run: Run) -> list[RunStep]:
    """The run's step list, for reading (the run page of a run the store has no list for)."""
    return as_steps(step_rows(run))


class StepFold(NamedTuple):
    """Steps left out of a list: ``left_out`` of them, after the first ``after`` steps kept."""

    after: int
    left_out: int


class StepList(list):  # list[RunStep], plus how it was cut
    """A stored step list: its steps, where steps were folded, and whether long names were shortened."""

    def __init__(self, steps: Iterable[RunStep] = (), folds: Sequence[StepFold] = (), shortened: bool = False) -> None:
        super().__init__(steps)
        self.folds = tuple(folds)
        self.shortened = shortened

    @property
    def folded(self) -> int:
        return sum(f.left_out for f in self.folds)


def steps_json(rows: Sequence[StepRow], folds: Sequence[StepFold] = (), shortened: bool = False) -> str:
    """Compact JSON: the field names once, then one array per step (and how the list was cut, if
    it was). Steps hold no floats, so :mod:`compact_json` writes them; fast as plain tuples
    (``RunStep`` rows are written alike, by the standard encoder)."""
    cut = {"folded": folds, "shortened": True} if shortened else {"folded": folds} if folds else {}
    return compact_json.dumps({"fields": _FIELDS, "rows": rows, **cut})


FIELD_CHARS = 200  # a string field past the cap is shortened to this
LIST_ITEMS = 10  # and a list field to this many items
Item = TypeVar("Item", bound=tuple)


def _short(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= FIELD_CHARS else value[:FIELD_CHARS] + "…"
    if isinstance(value, tuple):
        return tuple(_short(v) for v in value[:LIST_ITEMS])
    return value


def fold(items: Sequence[Item], budget: int, size: Callable[[Item], int], keep: Sequence[str] = ()) -> tuple[list[Item], list[StepFold]]:
    """The items (steps or rows, each a tuple starting with its span id) whose ``size`` adds up to
    at most ``budget``: those in ``keep`` first, in its order, up to half of it; then alternately
    from the start and the end. The others are folded, each run of them counted where it was."""
    sizes = [size(item) for item in items]
    if sum(sizes) <= budget:
        return list(items), []
    chosen = [False] * len(items)
    used = 0
    position = {item[0]: i for i, item in enumerate(items)}
    for span_id in keep:
        i = position.get(span_id)
        if i is not None and not chosen[i] and used + sizes[i] <= budget // 2:
            chosen[i], used = True, used + sizes[i]
    ends = [0, len(items) - 1]  # the next step from the start, and from the end
    step = (1, -1)
    open_ends = [True, True]
    while any(open_ends) and ends[0] <= ends[1]:
        for side in (0, 1):
            i = ends[side]
            if not open_ends[side] or ends[0] > ends[1]:
                continue
            if not chosen[i] and used + sizes[i] > budget:
                open_ends[side] = False
                continue
            if not chosen[i]:
                chosen[i], used = True, used + sizes[i]
            ends[side] += step[side]
    kept: list[Item] = []
    folds: list[StepFold] = []
    left_out = 0
    for item, taken in zip(items, chosen):
        if taken:
            if left_out:
                folds.append(StepFold(len(kept), left_out))
                left_out = 0
            kept.append(item)
        else:
            left_out += 1
    if left_out:
        folds.append(StepFold(len(kept), left_out))
    return kept, folds


def pointed_at(diagnosis: Diagnosis | None) -> list[str]:
    """The span ids a diagnosis points at, the steps a cut list keeps first, most telling first:
    the step it went wrong at, each finding's first evidence, then the rest of the evidence."""
    if diagnosis is None:
        return []
    findings = diagnosis.findings
    step = diagnosis.attribution.step_span_id if diagnosis.attribution is not None else None
    ordered = [step, *(f.evidence_span_ids[0] for f in findings if f.evidence_span_ids),
               *(sid for f in findings for sid in f.evidence_span_ids[1:])]
    return list(dict.fromkeys(sid for sid in ordered if sid))


def capped_steps_json(rows: Sequence[StepRow], max_bytes: int, keep: Sequence[str] = ()) -> str:
    """``steps_json`` of ``rows`` in at most ``max_bytes``: as it is when it fits; else with long
    names and lists shortened, and if still too long, folded (``keep``: span ids to keep first,
    the steps findings point at)."""
    text = steps_json(rows)
    if len(text) <= max_bytes:  # ASCII: characters are bytes
        return text
    short = [_short(row) for row in rows]
    text = steps_json(short, shortened=True)
    budget = max_bytes - len(steps_json([], shortened=True))
    while len(text) > max_bytes and budget > 0:
        kept, folds = fold(short, budget, lambda row: len(compact_json.dumps(row)) + 1, keep)
        text = steps_json(kept, folds, shortened=True)
        budget -= max(len(text) - max_bytes, 1)  # the fold records took room too: try again with less
    return text


def parse_steps(text: str) -> StepList:
    """The steps ``steps_json`` wrote, read by field name: fields this version does not know
    (a newer writer) are ignored, fields it lacks take their defaults."""
    data = json.loads(text)
    names = data["fields"]
    if any(k not in names for k in _REQUIRED):
        return StepList()
    known = [(i, k) for i, k in enumerate(names) if k in _FIELDS]
    out = []
    for row in data["rows"]:
        values: dict[str, Any] = {"parent_span_id": None}
        values.update((k, row[i]) for i, k in known if i < len(row))
        if any(k not in values for k in _REQUIRED):
            continue  # a short row: not a step this version can draw
        for k in _TUPLES:
            values[k] = tuple(values.get(k) or ())
        values["interventions"] = tuple(tuple(g) for g in values["interventions"] if isinstance(g, (list, tuple)))
        out.append(RunStep(**values))
    folds = [StepFold(int(after), int(count)) for after, count in data.get("folded") or ()]
    return StepList(out, folds, bool(data.get("shortened")))
