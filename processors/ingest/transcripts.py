"""Step-list logs (agent transcripts that never were spans) turned into runs.

The generic format, one record or a JSON list of records::

    {"steps": [{"agent": "coder", "kind": "message|tool_call|tool_result|system",
                "content": "...", "metadata": {"step_index": 3}, ...optional step fields}],
     "metadata": {...optional run fields}, "labels": {...optional}}

Each record becomes a :class:`Run` of synthesized spans: one agent span for the run, one
per distinct agent under it, a model-call span per message or tool call an agent wrote, and
a tool span pairing each ``tool_call`` with its ``tool_result`` (by ``tool_call_id`` when
given, else first in first out). Span ids are derived from the record, so the same file
always yields the same ids. Content goes only into the content fields.

Optional step fields: ``tool`` (tool name), ``tool_call_id``, ``tool_kind``, ``arguments``,
``error``, ``verification_passed``, ``model``, ``requested_tools``, ``input_message_count``,
``role`` (``user`` marks a human turn, which is no model call).
Optional run fields (``metadata``): ``trace_id`` (kept as the run's source key; the run's id
is a digest of the whole record, see :func:`record_id`), ``task``, ``final_answer``, ``success``
or ``outcome``, ``score``, ``model``/``llm_name``, ``agent``/``mas_name``, ``service_name``,
``conversation_id``, the ``mast.*`` hints by their short names (``max_steps``, ``ambiguous``,
``constraints``, ``termination_reason``, ``claimed_success``) and ``agents``:
``{name: {"role", "allowed_tools", "max_steps"}}``.
Labels: ``labels`` (``{"modes": {"FM-1.1": true, ...}, "outcome": ...}``) or MAST-Data's
``metadata.mast_annotation`` (``{"1.1": 0|1, ...}``), stored in ``Run.labels`` as
``{"modes": {mode: bool}, "outcome": "success"|"failure"|None}``.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from typing import Any

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors import taxonomy
from mast_otel.processors.model import Role, Run, RunHints, Span

KINDS = ("message", "tool_call", "tool_result", "system")
HUMAN_NAMES = ("user", "human")
BASE_NS = 1_700_000_000 * 10**9  # synthetic clock: step i starts i milliseconds after this
STEP_NS = 10**6
# Generic signs that a tool result is a failure, when the step does not say so itself.
_EXCEPTION = re.compile(r"^\s*(\w+(?:Error|Exception)):", re.MULTILINE)
_FAILURE = re.compile(r"Traceback \(most recent call last\)|\bexit ?code[:=]? *-?[1-9]|\bexecution failed\b", re.IGNORECASE)


class StepListError(ValueError):
    """A record that claims to be a step list but cannot be read as one."""


def is_steplist(obj: Any) -> bool:
    """A step-list record, or a list whose first item is one."""
    if isinstance(obj, list):
        return bool(obj) and is_steplist(obj[0])
    if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
        return False
    first = obj["steps"][0] if obj["steps"] else {}
    return isinstance(first, dict) and ("kind" in first or "agent" in first)


def runs_from_steplist(obj: dict | list) -> list[Run]:
    """One run per record; raises :class:`StepListError` naming the record and step at fault."""
    records = obj if isinstance(obj, list) else [obj]
    return [_record_run(record, n) for n, record in enumerate(records)]


def record_id(record: dict) -> str:
    """The run's trace id: a digest of the whole record, so only a true duplicate shares it.

    A field such as ``metadata.trace_id`` cannot serve: MAST-Data restarts it at 0 in every
    sub-dataset, and keying on it merged hundreds of different runs into one.
    """
    return hashlib.sha256(f"steplist:{stable_hash(record)}".encode()).hexdigest()[:32]


def run_from_record(record: Any, n: int = 0) -> Run:
    """One record's run (``n`` names the record in errors)."""
    return _record_run(record, n)


def _record_run(record: Any, n: int) -> Run:
    if not isinstance(record, dict) or not isinstance(record.get("steps"), list):
        raise StepListError(f"record {n}: expected an object with a 'steps' list")
    meta = record.get("metadata") or {}
    if not isinstance(meta, dict):
        raise StepListError(f"record {n}: 'metadata' must be an object")
    return _Builder(record, meta, n).build()


def _failure_of(step: dict, text: str) -> tuple[bool, str | None]:
    if "error" in step:
        error = step["error"]
        return bool(error), error if isinstance(error, str) else None
    exception = _EXCEPTION.search(text)
    if exception is None and _FAILURE.search(text) is None:
        return False, None
    return True, exception.group(1) if exception else None


def _outcome(meta: dict) -> str | None:
    if meta.get("outcome") in ("success", "failure", "unknown"):
        return meta["outcome"]
    success = meta.get("success")
    return None if success is None else ("success" if success else "failure")


def _labels(record: dict, meta: dict, n: int) -> dict[str, Any]:
    given = record.get("labels") or meta.get("labels")
    raw = given.get("modes") if isinstance(given, dict) else meta.get("mast_annotation")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise StepListError(f"record {n}: mode labels must be an object of mode -> 0/1")
    try:
        modes = {taxonomy.get(str(k)).id: bool(v) for k, v in raw.items()}
    except KeyError as exc:
        raise StepListError(f"record {n}: {exc.args[0]}") from None
    outcome = given.get("outcome") if isinstance(given, dict) and "outcome" in given else _outcome(meta)
    return {"modes": modes, "outcome": outcome, "group": _group(meta), "order": _order(meta, n)}


def _group(meta: dict) -> str:
    """The sub-data-set a record belongs to, for the label checks in ``eval``."""
    if meta.get("mad_trace_key"):
        return str(meta["mad_trace_key"])
    parts = [str(meta[k]) for k in ("mas_name", "agent", "benchmark_name", "model", "llm_name") if meta.get(k)]
    return "/".join(parts)


def _order(meta: dict, n: int) -> str | int:
    """The record's key inside its group (``metadata.trace_id`` when given, else its position)."""
    key = meta.get("trace_id")
    return key if isinstance(key, (int, str)) and not isinstance(key, bool) else n


def _tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else (str(value),)


_KIND_NAMES = {int: "an integer", bool: "true or false", str: "a string", dict: "an object", (int, float): "a number"}


def _typed(obj: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` if it is absent or of ``kind``; a :class:`StepListError` naming ``where`` otherwise."""
    value = obj.get(key)
    if value is None or (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))):
        return value
    raise StepListError(f"{where}: {key!r} must be {_KIND_NAMES[kind]}, got {type(value).__name__}")


class _Builder:
    """Synthesizes one record's spans."""

    def __init__(self, record: dict, meta: dict, n: int) -> None:
        self.record, self.meta, self.n = record, meta, n
        self.trace_id = record_id(record)
        self.where = f"record {n}"
        self.model = _typed(meta, "model", str, self.where) or _typed(meta, "llm_name", str, self.where)
        self.service_name = _typed(meta, "service_name", str, self.where)
        self.run_name = str(meta.get("agent") or meta.get("mas_name") or "agent")
        self.spans: list[Span] = []
        self.agents: dict[str, Span] = {}
        self.pending: deque[Span] = deque()
        self.by_call_id: dict[str, Span] = {}

    def _id(self, key: str) -> str:
        return hashlib.sha256(f"{self.trace_id}/{key}".encode()).hexdigest()[:16]

    def _span(self, key: str, parent: Span | None, name: str, t: int, role: Role, **kw: Any) -> Span:
        span = Span(self.trace_id, self._id(key), parent.span_id if parent else None, name, t, t + STEP_NS // 2,
                    role=role, service_name=self.service_name, convention="steps", **kw)
        self.spans.append(span)
        return span

    def build(self) -> Run:
        meta, where = self.meta, self.where
        hints = RunHints(
            max_steps=_typed(meta, "max_steps", int, where), ambiguous=_typed(meta, "ambiguous", bool, where),
            constraints=_tuple(meta.get("constraints")), termination_reason=_typed(meta, "termination_reason", str, where),
            claimed_success=_typed(meta, "claimed_success", bool, where), outcome=_outcome(meta),
            score=_typed(meta, "score", (int, float), where),
            final_answer=None if meta.get("final_answer") is None else str(meta["final_answer"]),
            task=_typed(meta, "task", str, where),
        )
        if hints.termination_reason is None and (hints.final_answer or "").strip():
            hints.termination_reason = "final_answer"
        self.root = self._span("run", None, f"invoke_agent {self.run_name}", BASE_NS, Role.AGENT,
                               agent_name=self.run_name, hints=hints, conversation_id=_typed(meta, "conversation_id", str, where))
        for i, step in enumerate(self.record["steps"]):
            if not isinstance(step, dict):
                raise StepListError(f"record {self.n}, step {i}: expected an object")
            kind = step.get("kind", "message")
            if kind not in KINDS:
                raise StepListError(f"record {self.n}, step {i}: unknown kind {kind!r} (expected one of {KINDS})")
            self._step(i, step, kind, BASE_NS + (i + 1) * STEP_NS)
        end = max(s.end_ns for s in self.spans) + 1
        for agent in (self.root, *self.agents.values()):
            agent.end_ns = end
        run = Run.from_spans(self.trace_id, self.spans)
        run.labels = _labels(self.record, meta, self.n)
        return run

    def _agent(self, name: str, t: int) -> Span:
        if name == self.run_name:
            return self.root
        agent = self.agents.get(name)
        if agent is None:
            where = f"{self.where}, agent {name!r}"
            spec = _typed(_typed(self.meta, "agents", dict, self.where) or {}, name, dict, where) or {}
            allowed = spec.get("allowed_tools")
            agent = self._span(f"agent:{name}", self.root, f"invoke_agent {name}", t, Role.AGENT, agent_name=name,
                               hints=RunHints(max_steps=_typed(spec, "max_steps", int, where), role=_typed(spec, "role", str, where),
                                              allowed_tools=None if allowed is None else _tuple(allowed)))
            self.agents[name] = agent
        return agent

    def _step(self, i: int, step: dict, kind: str, t: int) -> None:
        content = step.get("content")
        text = content if isinstance(content, str) else ("" if content is None else stable_hash(content))
        where = f"{self.where}, step {i}"
        index = _typed(_typed(step, "metadata", dict, where) or {}, "step_index", int, where)
        index = i if index is None else index
        human = str(step.get("role", "")).lower() in HUMAN_NAMES or str(step.get("agent", "")).lower() in HUMAN_NAMES
        if kind == "system" or (human and kind != "tool_result"):
            return
        agent = self._agent(str(step.get("agent") or self.run_name), t)
        if kind == "tool_result":
            self._result(i, step, text, t, agent, index)
            return
        tool = str(step.get("tool") or step.get("tool_name") or "tool")
        requested = (tool,) if kind == "tool_call" else _tuple(step.get("requested_tools"))
        model = _typed(step, "model", str, where) or self.model
        self._span(f"step:{i}", agent, f"chat {model}" if model else "chat", t, Role.LLM, model=model,
                   request_model=model, output_text=text, requested_tools=requested, step_index=index,
                   input_message_count=_typed(step, "input_message_count", int, where))
        if kind == "tool_call":
            args = step.get("arguments", text)
            call = self._span(f"tool:{i}", agent, f"execute_tool {tool}", t + STEP_NS // 2, Role.TOOL,
                              tool_name=tool, tool_kind=_typed(step, "tool_kind", str, where) or "other", step_index=index,
                              tool_args=args if isinstance(args, str) else stable_hash(args), args_hash=stable_hash(args))
            if step.get("tool_call_id"):
                self.by_call_id[str(step["tool_call_id"])] = call
            self.pending.append(call)

    def _result(self, i: int, step: dict, text: str, t: int, agent: Span, index: int) -> None:
        call = self.by_call_id.pop(str(step["tool_call_id"]), None) if step.get("tool_call_id") else None
        if call is not None and call in self.pending:
            self.pending.remove(call)
        elif call is None and self.pending:
            call = self.pending.popleft()
        if call is None:  # a result with no call: a tool span of its own
            tool = str(step.get("tool") or step.get("tool_name") or "tool")
            call = self._span(f"tool:{i}", agent, f"execute_tool {tool}", t, Role.TOOL, tool_name=tool,
                              tool_kind=_typed(step, "tool_kind", str, f"{self.where}, step {i}") or "other", step_index=index)
        error, error_type = _failure_of(step, text)
        call.end_ns = t + STEP_NS // 2
        call.tool_result, call.result_hash = text, stable_hash(text)
        call.error, call.error_type = error, error_type
        if "verification_passed" in step:
            call.verification_passed = bool(step["verification_passed"])
