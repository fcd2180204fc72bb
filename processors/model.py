"""The one internal model of an agent run, whatever convention its spans were written in.

Normalizers (OTel GenAI, OpenInference, OpenLLMetry, litellm, mast-otel's own
instrumentation, step-list logs) turn their input into :class:`Span` records; trace assembly
groups them into a :class:`Run`; detectors read a ``Run`` and return :class:`Finding` s;
the pipeline wraps those in a :class:`Diagnosis`. Everything here is plain data: no I/O.
"""

from __future__ import annotations

import enum
import functools
import sys
from dataclasses import dataclass, field, fields
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Mapping, TypeVar

if TYPE_CHECKING:
    from mast_otel.processors.attribution import Attribution


class Role(str, enum.Enum):
    """What an agent-related span stands for. ``OTHER`` spans pass through untouched."""

    AGENT = "agent"
    LLM = "llm"
    TOOL = "tool"
    OTHER = "other"


# Module constants for the per-span loops: on Python 3.11 reading ``Role.LLM`` goes through the enum
# metaclass (about 0.15 us), which adds up over every span of every run.
AGENT, LLM, TOOL, OTHER = Role.AGENT, Role.LLM, Role.TOOL, Role.OTHER


Source = Literal["rules", "judge"]
T = TypeVar("T")


@dataclass(slots=True)
class RunHints:
    """Run-level facts from the agent span (``mast.task.*``, ``mast.agent.*``, ``mast.run.*``)."""

    max_steps: int | None = None
    # the framework family whose step budget ``max_steps`` is, counted in its unit
    # (``frameworks.<family>``'s ``StepBudget``); None: mast-otel's own (iterations, ``mast.task.max_steps``)
    budget_framework: str | None = None
    ambiguous: bool | None = None
    constraints: tuple[str, ...] = ()
    role: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    termination_reason: str | None = None
    claimed_success: bool | None = None
    outcome: str | None = None  # "success" | "failure" | "unknown"
    score: float | None = None
    final_answer: str | None = None
    task: str | None = None  # the request, when content was captured
    # the framework's own check of the answer (a guardrail) rejected every attempt: the words saying so
    rejected_by_check: str | None = None
    # hints derived from what the framework emitted rather than set explicitly: field -> how
    derived: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class GuardIntervention:
    """A ``mast.guard.intervention`` event an agent-side guard wrote on one span."""

    span_id: str  # the span it was written on
    guard: str  # loop | budget | verification | clarify_or_read_only
    mode: str  # observe | enforce
    action: str  # recorded | blocked | stopped | refused_finish
    failure_mode: str  # the mode the guard acted on
    evidence_span_ids: tuple[str, ...] = ()
    reason: str = ""

    @property
    def enforced(self) -> bool:
        return self.mode == "enforce" and self.action != "recorded"


@dataclass(slots=True)
class Span:
    """One normalized span. Fields that do not apply to its role stay ``None``.

    Ids are lowercase hex (32 characters for traces, 16 for spans). Times are Unix
    nanoseconds. Content fields are filled only when the emitter captured content.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    role: Role = Role.OTHER
    error: bool = False
    error_type: str | None = None
    status_message: str | None = None
    service_name: str | None = None
    convention: str | None = None  # "gen_ai", "openinference", "openllmetry", "litellm", "steps", or a dialect's own

    # agent spans
    agent_name: str | None = None
    # a framework's parentless workflow/chain span standing in for the run; it gives way to a
    # real agent span of the same trace (Run.from_spans), so the run is named after the agent
    workflow: bool = False
    conversation_id: str | None = None
    hints: RunHints | None = None

    # model calls
    model: str | None = None  # response model when known, else request model
    request_model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_message_count: int | None = None
    finish_reasons: tuple[str, ...] = ()
    requested_tools: tuple[str, ...] = ()  # tool names the model asked to call
    tools_offered: bool | None = None  # whether the call offered the model tools (known when content was captured)
    answer_tools: tuple[str, ...] = ()  # offered tools whose call is the run's answer (a framework's output tools)

    # tool calls
    tool_name: str | None = None
    tool_kind: str | None = None  # read | write | verify | clarify | handoff | other
    tool_kind_source: str | None = None  # None: as emitted (mast.tool.kind); "catalog" or "inferred"
    args_hash: str | None = None
    result_hash: str | None = None
    verification_passed: bool | None = None

    # model and tool spans (``agent_name`` above also names the enclosing agent on steps)
    step_index: int | None = None
    step_budget: int | None = None  # the enclosing run's ``mast.task.max_steps``, when its steps carry it
    # this step's own parent when that span was not kept (a framework's own step or node span
    # around it; set where the step is re-linked to its agent, see ``relink``): steps sharing it are
    # one unit of a budget counted in such spans
    unit_span_id: str | None = None

    # content, only when captured (already size-capped by the emitter or normalizer)
    input_text: str | None = None
    output_text: str | None = None
    tool_args: str | None = None
    tool_result: str | None = None

    tool_description: str | None = None  # what the tool says it does, when the emitter recorded it
    tool_call_id: str | None = None  # the model's id for this call (gen_ai.tool.call.id)
    # model calls: tool calls their messages show, by call id -> (args hash, result hash, result
    # text); lets tool spans that carry no content get it back (see hints.derive_hints)
    tool_exchanges: dict[str, tuple[str | None, str | None, str | None]] | None = None
    # fields derived from what the framework emitted rather than set explicitly: field -> how
    derived: dict[str, str] | None = None

    # where the content fields came from when not from the span's own attributes: "events" (its span
    # events), "logs" (log records joined to it by trace and span id); None: the span itself, or no content
    content_source: str | None = None

    # interventions agent-side guards recorded on this span (``mast.guard.intervention`` events)
    guard_interventions: tuple[GuardIntervention, ...] = ()

    # the span's serialized size as received (0: not known, e.g. decoded from JSON); what it
    # holds in strings and containers is at most a small multiple of it (the memory account)
    wire_bytes: int = field(default=0, compare=False, repr=False)
    # (``tool_result``, the failure it reports read as a tool that acts reads it: ``tools.values.error_in``
    # with ``bare_text``) as normalization read it on the shortcuts path, so hint derivation need not
    # parse the text again; it stands while ``tool_result`` is that same text (never stored or compared)
    result_reading: tuple[str, str | None] | None = field(default=None, compare=False, repr=False)

    @property
    def is_agent_related(self) -> bool:
        return self.role is not Role.OTHER


def _slot_copier(cls: type[T], names: tuple[str, ...]) -> Callable[[T], T]:
    """A shallow copy of a slotted dataclass (its field ``names``), several times cheaper than
    ``copy.copy`` (which goes through ``__reduce_ex__``): when the class's ``__init__`` takes every
    field and does nothing else, one call of it with the fields read in C (a third of the cost of
    setting each slot through its descriptor, the way taken otherwise)."""
    read_all = attrgetter(*names)
    by_init = (tuple(f.name for f in fields(cls) if f.init) == names  # type: ignore[arg-type]
               and not hasattr(cls, "__post_init__"))
    if by_init:
        return lambda obj: cls(*read_all(obj))
    setters, new = tuple(getattr(cls, n).__set__ for n in names), object.__new__

    def copy(obj: T) -> T:
        fresh = new(cls)
        for set_slot, value in zip(setters, read_all(obj)):
            set_slot(fresh, value)
        return fresh
    return copy


_copy_hints = _slot_copier(RunHints, tuple(f.name for f in fields(RunHints)))
_copy_span = _slot_copier(Span, tuple(f.name for f in fields(Span)))

# What a diagnosis writes on a run's spans in place: parents re-linked to kept spans, wrapper
# calls and answer tools taken out of the steps, a delegation tool's calls moved under a stand-in
# agent, tool kinds, hints and fields read from the conversation. ``hints`` last (see below).
_DIAGNOSIS_WRITES = ("parent_span_id", "unit_span_id", "role", "model", "error", "error_type", "status_message",
                     "agent_name", "convention", "tool_kind", "tool_kind_source", "verification_passed",
                     "args_hash", "result_hash", "tool_result", "derived", "hints")
ARRIVED_FIELDS = _DIAGNOSIS_WRITES  # what an ``ArrivedState`` holds, in its order
_read_writes = attrgetter(*_DIAGNOSIS_WRITES)
_HINTS = attrgetter("hints")
_set_writes = tuple(getattr(Span, name).__set__ for name in _DIAGNOSIS_WRITES)
ArrivedState = tuple[object, ...]
# memory one span's state holds: the tuple and its place in a list (its values are the span's own),
# and for a span with hints the copy of its hints (their values are shared with the span's)
ARRIVED_STATE_BYTES = sys.getsizeof(tuple(_DIAGNOSIS_WRITES)) + 8
ARRIVED_HINTS_BYTES = sys.getsizeof(RunHints())


def arrived_state(span: Span) -> ArrivedState:
    """What a diagnosis may change on ``span``, as it is now: taken when a run completes, so a
    run revived by late spans is diagnosed again from what arrived, not from what a diagnosis of
    part of it made of its spans. ``hints`` is changed in place and kept as a copy; ``derived`` is
    replaced, never changed (``hints.notes.note``), so it is shared."""
    state = _read_writes(span)
    return state if span.hints is None else state[:-1] + (_copy_hints(span.hints),)


def arrived_states(spans: list[Span]) -> tuple[list[ArrivedState], int]:
    """``arrived_state`` of each of ``spans`` (at a run's completion), and how many hold hints
    (their copies are charged to the memory account): the fields read in C for every span, a
    Python step only for the spans with hints (agent spans, a few per run)."""
    states = list(map(_read_writes, spans))
    # the spans with hints, told in C (a ``RunHints`` is always true; ``None`` false)
    hinted = list(compress(range(len(states)), map(_HINTS, spans)))
    for i in hinted:
        state = states[i]
        states[i] = (*state[:-1], _copy_hints(state[-1]))
    return states, len(hinted)


def as_arrived(span: Span, state: ArrivedState) -> Span:
    """A copy of ``span`` with the fields in ``state`` (``arrived_state``) as they were then."""
    fresh = _copy_span(span)
    for set_field, value in zip(_set_writes, state):
        set_field(fresh, value)
    if fresh.hints is not None:
        fresh.hints = _copy_hints(fresh.hints)
    return fresh


# The metadata of a dataclass field that caches what the object's other fields hold (its
# findings, grouped): the memory account (``held_bytes``) leaves it out rather than count them twice.
HELD_ELSEWHERE: Mapping[str, str] = {"held": "elsewhere"}

_START, _SPAN_ID, _WORKFLOW = attrgetter("start_ns"), attrgetter("span_id"), attrgetter("workflow")
_MODEL = attrgetter("model")
_UNKNOWN = object()  # a view not computed yet (``None`` is a valid answer)


class _RunViews:
    """A run's spans by role, built in one pass, and by id, on first ask (see ``Run._viewed``):
    the usual single-agent diagnosis never looks a span up by id."""

    __slots__ = ("spans", "count", "steps", "llm", "tool", "agent_spans", "by_id", "agent", "agent_of_root", "memo", "owners")

    def __init__(self, spans: list[Span]) -> None:
        self.spans, self.count = spans, len(spans)
        self.by_id: dict[str, Span] | None = None
        self.steps: list[Span] = []
        self.llm: list[Span] = []
        self.tool: list[Span] = []
        self.agent_spans: list[Span] = []
        llm, tool, agent = LLM, TOOL, AGENT
        for s in spans:  # identity tests: hashing a Role runs Enum.__hash__ in Python
            role = s.role
            if role is llm:
                self.llm.append(s)
                self.steps.append(s)
            elif role is tool:
                self.tool.append(s)
                self.steps.append(s)
            elif role is agent:
                self.agent_spans.append(s)
        self.agent: object = _UNKNOWN
        self.agent_of_root: Span | None = None
        self.memo: dict[str, object] | None = None  # see Run.memo
        self.owners: dict[int, Span | None] | None = None  # see Run.agent_of


@dataclass(slots=True)
class Run:
    """All agent-related spans of one trace, in start order, with the root agent span."""

    trace_id: str
    spans: list[Span]
    root: Span | None = None
    # "root_ended" (normal), "abandoned" (the root never arrived: the idle timeout passed without
    # it), "evicted", "shutdown", "offline"
    completion: str = "offline"
    labels: dict[str, Any] = field(default_factory=dict)  # ground-truth labels for eval
    # workflow spans that gave way to real agent spans (see from_spans): a team's limit error may sit there
    wrappers: list[Span] = field(default_factory=list)
    # take the shortcuts (views kept between asks, the one-model count, the guard-event test, and
    # hint derivation's tests for what most runs lack); False: every answer computed the plain
    # way, which tests compare them with (same answers)
    shortcuts: bool = field(default=True, compare=False, repr=False)

    @classmethod
    def from_spans(cls, trace_id: str, spans: Iterable[Span], completion: str = "offline",
                   links: Mapping[str, str | None] | None = None, *, shortcuts: bool = True) -> Run:
        """Order spans and pick the root: the outermost agent span (no agent ancestor); a
        workflow span stands in for it only when the trace has no real agent span.

        ``links``: the parent of each span of the trace that is not kept (neither agent, model nor
        tool: a framework's turn, step or node spans). A kept span below such spans is re-parented
        to its nearest kept ancestor, so a step still belongs to the agent that ran it.

        ``shortcuts``: see the field (here: spans sorted by start alone when no two start together)."""
        spans = list(spans)
        if links:
            relink(spans, links)
        wrappers: list[Span] = []
        if any(map(_WORKFLOW, spans)) and any(s.role is AGENT and not s.workflow for s in spans):
            wrappers = [s for s in spans if s.workflow]
            spans = [s for s in spans if not s.workflow]
        ordered = sorted(spans, key=_START)  # in C; only spans that start together need the step index
        if not shortcuts or len(set(map(_START, ordered))) != len(ordered):
            ordered = sorted(spans, key=lambda s: (s.start_ns, s.step_index if s.step_index is not None else -1))
        run = cls(trace_id=trace_id, spans=ordered, completion=completion, wrappers=wrappers, shortcuts=shortcuts)
        for span in ordered:
            if span.role is not AGENT:
                continue
            if not span.parent_span_id:  # the trace's own root: no ancestors to look through
                run.root = span
                break
            by_id = run.spans_by_id
            parent = by_id.get(span.parent_span_id)
            has_agent_ancestor = False
            seen: set[str] = set()
            while parent is not None and parent.span_id not in seen:
                seen.add(parent.span_id)
                if parent.role is AGENT:
                    has_agent_ancestor = True
                    break
                parent = by_id.get(parent.parent_span_id) if parent.parent_span_id else None
            if not has_agent_ancestor:
                run.root = span
                break
        return run

    # --- views detectors use ---------------------------------------------------------------
    # Every diagnosis reads the same views several times (hint derivation, each detector, the
    # diagnosis record), so they are built in one pass on first ask and kept while ``spans`` is the
    # same list of the same length. They are shared: read them, never change them. Changing a
    # span's role afterwards (``derive_hints`` does) must be followed by ``forget_views``.
    _views: _RunViews | None = field(default=None, init=False, repr=False, compare=False)

    def _viewed(self) -> _RunViews:
        views, spans = self._views, self.spans
        if views is None or views.spans is not spans or views.count != len(spans):
            views = _RunViews(spans)
            if self.shortcuts:  # the plain path keeps none: every ask computes afresh
                self._views = views
        return views

    def memo(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once for this run's spans as they are (e.g. its team): kept with the views,
        so it is made again after the spans or their roles change (``forget_views``)."""
        views = self._viewed()
        if views.memo is None:
            views.memo = {}
        if key not in views.memo:
            views.memo[key] = make()
        return views.memo[key]  # type: ignore[return-value]

    def forget_views(self) -> None:
        """Drop the cached views: a span's role changed."""
        self._views = None

    def forget_agents(self) -> None:
        """Drop the kept answers of ``agent_of``: a span's parent changed (the other views stand)."""
        views = self._views
        if views is not None:
            views.owners = None

    @property
    def llm_calls(self) -> list[Span]:
        return self._viewed().llm

    @property
    def tool_calls(self) -> list[Span]:
        return self._viewed().tool

    @property
    def agent_spans(self) -> list[Span]:
        return self._viewed().agent_spans

    @property
    def steps(self) -> list[Span]:
        """Model and tool calls in execution order: the run's steps."""
        return self._viewed().steps

    @property
    def spans_by_id(self) -> dict[str, Span]:
        """Span id -> span (the later of two spans sharing an id)."""
        views = self._viewed()
        if views.by_id is None:
            views.by_id = dict(zip(map(_SPAN_ID, views.spans), views.spans))
        return views.by_id

    @property
    def hints(self) -> RunHints:
        return (self.root.hints if self.root and self.root.hints else None) or RunHints()

    @property
    def agent(self) -> str | None:
        """The agent the run is labelled with: the root agent's name, unless the root only wraps
        other agents (a workflow, crew or graph span such as "Agent workflow" that owns no step):
        then the agent it started first, the team's entry agent."""
        views = self._viewed()
        if views.agent_of_root is not self.root or views.agent is _UNKNOWN:
            views.agent, views.agent_of_root = self._label_agent(views), self.root
        return views.agent  # type: ignore[return-value]

    def _label_agent(self, views: _RunViews) -> str | None:
        root = self.root
        if root is not None and root.agent_name:
            nested = [s for s in views.agent_spans if s is not root and s.agent_name]
            if nested and root.span_id not in self._step_owners(views):
                return nested[0].agent_name  # spans are in start order
            return root.agent_name
        return next((s.agent_name for s in self.spans if s.agent_name), None)

    @property
    def model(self) -> str | None:
        """The model that made most of the run's calls (ties: the first seen)."""
        models = list(map(_MODEL, self._viewed().llm))
        if models and models[0] and self.shortcuts and models.count(models[0]) == len(models):
            return models[0]  # the usual run: one model made every call (told in C)
        counts: dict[str, int] = {}
        for s in self._viewed().llm:
            if s.model:
                counts[s.model] = counts.get(s.model, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else None

    @property
    def service_name(self) -> str | None:
        if self.root and self.root.service_name:
            return self.root.service_name
        return next((s.service_name for s in self.spans if s.service_name), None)

    def _step_owners(self, views: _RunViews) -> set[str | None]:
        """Span ids of the agents that own at least one step directly (one pass, memoized walk)."""
        by_id = self.spans_by_id
        nearest: dict[str, str | None] = {}
        owners: set[str | None] = set()
        for step in views.steps:
            chain: list[str] = []
            cur, found = by_id.get(step.parent_span_id or ""), None
            while cur is not None and cur.span_id not in nearest and len(chain) <= len(by_id):
                if cur.role is AGENT:
                    found = cur.span_id
                    break
                chain.append(cur.span_id)
                cur = by_id.get(cur.parent_span_id or "")
            else:
                if cur is not None and cur.span_id in nearest:
                    found = nearest[cur.span_id]
            for sid in chain:
                nearest[sid] = found
            owners.add(found)
        return owners

    def children(self, span_id: str) -> list[Span]:
        return [s for s in self.spans if s.parent_span_id == span_id]

    def span(self, span_id: str) -> Span | None:
        return next((s for s in self.spans if s.span_id == span_id), None)

    def agent_of(self, span: Span) -> Span | None:
        """The nearest enclosing agent span of ``span`` (itself if it is one). With ``shortcuts``
        the answer for a span of the run is kept with the views (hint derivation, the team model,
        the detectors and attribution ask it of the same steps again and again); a change of a
        span's parent must be followed by ``forget_agents`` (or ``forget_views``)."""
        if span.role is AGENT:
            return span
        if not self.shortcuts:
            return self._walk_to_agent(span, self.spans_by_id)
        views, spans = self._views, self.spans  # ``_viewed`` without the call (asked ~50 times a run)
        if views is None or views.spans is not spans or views.count != len(spans):
            views = self._viewed()
        owners = views.owners
        if owners is None:
            owners = views.owners = {}
        key = id(span)  # a span of the run lives as long as the views that hold it
        found = owners.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            by_id = views.by_id if views.by_id is not None else self.spans_by_id
            found = self._walk_to_agent(span, by_id)
            if by_id.get(span.span_id) is span:  # kept only for the run's own spans
                owners[key] = found
        return found  # type: ignore[return-value]

    @staticmethod
    def _walk_to_agent(span: Span, by_id: dict[str, Span]) -> Span | None:
        cur: Span | None = span
        seen: set[str] = set()
        while cur is not None and cur.span_id not in seen:
            if cur.role is AGENT:
                return cur
            seen.add(cur.span_id)
            cur = by_id.get(cur.parent_span_id) if cur.parent_span_id else None
        return None

    def __iter__(self) -> Iterator[Span]:
        return iter(self.spans)


def relink(spans: list[Span], links: Mapping[str, str | None]) -> None:
    """Point each span whose parent was not kept at its nearest kept ancestor (in place; see ``Run.from_spans``).
    For a step, the span passed over first, its own parent, is noted (``Span.unit_span_id``)."""
    kept = set(map(_SPAN_ID, spans))
    for span in spans:
        parent = span.parent_span_id
        if parent is not None and parent not in kept and parent in links and span.unit_span_id is None \
                and (span.role is LLM or span.role is TOOL):
            span.unit_span_id = parent  # the framework's own span around this step
        hops = 0
        while parent is not None and parent not in kept and parent in links and hops < 256:
            parent = links[parent]
            hops += 1
        span.parent_span_id = parent


@dataclass(slots=True, frozen=True)
class Finding:
    """One failure mode found in one run, with the spans that show it."""

    mode: str  # "FM-1.1" .. "FM-3.3"
    confidence: float  # 0..1
    explanation: str  # plain words, no message content
    evidence_span_ids: tuple[str, ...]
    span_id: str | None = None  # the span the evaluation event goes on; default: first evidence
    source: Source = "rules"
    detector: str = ""  # which detector raised it
    live: bool = False  # raised while the run was still in flight
    prompt_version: str | None = None  # judge findings: the prompt and schema that produced them
    prevented_by: str | None = None  # the guard that acted on this mode in the run (enforce mode)
    agent: str | None = None  # in a team: the agent whose decision it concerns (None: the run's agent)

    @property
    def anchor_span_id(self) -> str | None:
        return self.span_id or (self.evidence_span_ids[0] if self.evidence_span_ids else None)


@dataclass(slots=True)
class ModeVerdict:
    """A mode's final verdict for a run after merging rule and judge findings."""

    mode: str
    findings: list[Finding]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(sorted({f.source for f in self.findings}))

    @property
    def confidence(self) -> float:
        return max(f.confidence for f in self.findings)

    @property
    def evidence_span_ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for f in self.findings:
            for sid in f.evidence_span_ids:
                seen.setdefault(sid, None)
        return tuple(seen)


def merge_findings(findings: Iterable[Finding]) -> dict[str, ModeVerdict]:
    """Group findings by mode, keeping every source's finding (mode ids sort naturally)."""
    verdicts: dict[str, ModeVerdict] = {}
    for f in findings:
        verdict = verdicts.get(f.mode)
        if verdict is None:
            verdicts[f.mode] = ModeVerdict(f.mode, [f])
        else:
            verdict.findings.append(f)
    return {mode: verdicts[mode] for mode in sorted(verdicts, key=mode_sort_key)}


@functools.lru_cache(maxsize=256)  # a handful of mode ids, sorted in every diagnosis
def mode_sort_key(mode: str) -> tuple[int, int]:
    """``FM-1.3`` -> ``(1, 3)``; unknown ids sort last."""
    try:
        major, minor = mode.removeprefix("FM-").split(".")
        return int(major), int(minor)
    except ValueError:
        return (99, 99)


@dataclass(slots=True)
class Diagnosis:
    """A run's diagnosis: what the store keeps, the API returns and the exporters attach."""

    trace_id: str
    findings: list[Finding]
    fatal: bool
    service_name: str | None = None
    agent: str | None = None
    model: str | None = None
    root_span_id: str | None = None
    outcome: str | None = None  # success | failure | unknown, when known
    score: float | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    diagnosed_at: float = 0.0  # Unix seconds
    completion: str = "offline"  # see Run.completion
    span_count: int = 0
    step_count: int = 0
    revision: int = 0  # bumped on every re-diagnosis (late spans, judge findings)
    # live findings the final diagnosis did not confirm (kept so users see what was withdrawn)
    withdrawn: list[Finding] = field(default_factory=list)
    # for a failed or fatally diagnosed run: the agent and step it went wrong at
    attribution: Attribution | None = None
    # what agent-side guards did in the run (counted once each; the step list keeps them for the timeline)
    interventions: list[GuardIntervention] = field(default_factory=list)
    # merge_findings of ``findings``, kept while that list is the same object of the same length
    # (every output reads the verdicts; ``dataclasses.replace`` starts a new copy without it)
    # (the memory account counts the findings once: see ``HELD_ELSEWHERE``)
    _verdicts: tuple[list[Finding], int, dict[str, ModeVerdict]] | None = field(
        default=None, init=False, repr=False, compare=False, metadata=HELD_ELSEWHERE)

    @property
    def verdicts(self) -> dict[str, ModeVerdict]:
        """Findings grouped by mode, in mode order (read-only: shared between readers)."""
        cached = self._verdicts
        findings = self.findings
        if cached is None or cached[0] is not findings or cached[1] != len(findings):
            cached = self._verdicts = (findings, len(findings), merge_findings(findings))
        return cached[2]

    @property
    def modes(self) -> list[str]:
        return list(self.verdicts)

    @property
    def sources(self) -> list[str]:
        return sorted({f.source for f in self.findings})
