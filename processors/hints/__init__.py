"""Hints derived from what agent frameworks emit, where mast-otel's explicit hints are absent.

The rule detectors read a run's hints: which tool calls change things and which check them,
whether a check passed, whether the run claims success, whether a limit stopped it. Runs
made with mast-otel's instrumentation state them (``mast.*``); runs from other frameworks
show them in their own words. :func:`derive_hints` fills in what is missing, in place, and
records on each span or run how every derived value was obtained; an explicit hint (the
instrumentation's, or the tool catalog's) is never overwritten. :func:`qualify` lowers the
confidence of a finding that rests on a derived hint and says which. Both read nothing but
the run (no I/O); deriving twice changes nothing more.
"""

from __future__ import annotations

import dataclasses
import functools
from operator import attrgetter
from typing import Callable, Iterable

from mast_otel.processors import team
from mast_otel.processors.frameworks import on_reload, registry
from mast_otel.processors.hints import claims, limits
from mast_otel.processors.tools.content_memo import failure_in, parsed_value, remembering
from mast_otel.processors.tools import kinds as tool_kinds, values as tool_values
from mast_otel.processors.hints.notes import note as _note
from mast_otel.processors.hints.settings import HintsConfig
from mast_otel.processors.hints.rests_on import mode_run_hints
from mast_otel.processors.model import Finding, Role, Run, RunHints, Span

DERIVED_CONFIDENCE = 0.85  # factor on a finding's confidence when it rests on derived hints
NOTES_CAP = 4


def derive_hints(run: Run, config: HintsConfig | None = None) -> Run:
    """Fill the hints ``run`` lacks from what its spans show; returns ``run``. On a run with
    ``shortcuts`` the texts it reads (tool results, answers) are read once (a memo held while it
    derives, or the caller's)."""
    with remembering(run.shortcuts):
        return _derive(run, config if config is not None else _default_config())


def _derive(run: Run, config: HintsConfig) -> Run:
    frameworks = registry()
    state: dict[str, object] = {}
    for rewrite in frameworks.run_rewrites:  # a framework's own rewrite, before anything reads the run's agents
        rewrite(run, state)
    _model_call_wrappers(run)
    _answer_tools(run)
    for rewrite in frameworks.team_rewrites:  # a framework's own team layout (which agent took which step)
        rewrite(run, state)
    if len(run.agent_spans) > 1:  # each step of a team to the agent that took it
        team.adopt_steps(run)
    if run.agent_spans:  # a team's delegated workers without agent spans of their own get one
        team.stand_in_agents(run)
    service, agent = run.service_name, run.agent
    exchanges: dict[str, tuple[str | None, str | None, str | None]] | None
    if not run.shortcuts:
        exchanges = {k: v for s in run.spans if s.tool_exchanges for k, v in s.tool_exchanges.items()}
    else:  # most runs show none: one pass in C; else only the calls' own, each from the last span holding it
        exchanges = _exchanges_of(run) if any(map(_EXCHANGES, run.spans)) else None
    for span in run.tool_calls:
        if exchanges and span.tool_call_id in exchanges:
            _from_conversation(span, exchanges[span.tool_call_id])
        kind = span.tool_kind
        # a known kind other than a check leaves only a failure to derive (and the note of a kind inferred on arrival)
        if kind is None or kind == "verify" or span.tool_kind_source == "inferred":
            _tool(span, config, service, agent)
        # A result text that reports a failure ("Error: restart refused") fails a tool not known to
        # read; a read tool's text is what it read (a log line), so only its structure says it failed.
        if span.tool_result is not None and not span.error and span.tool_kind != "read":
            _failed(span, _result_failure(span) if run.shortcuts else failure_in(span.tool_result, bare_text=True))
    if config.model_aliases or config.fold_model_snapshots:
        calls = run.llm_calls
        # a run's calls name a model or two: each name folded once (the plain path folds every call's)
        folded = {m: config.model_name(m) for m in set(map(_MODEL, calls)) if m} if run.shortcuts else None
        for span in calls:
            if span.model:
                span.model = folded[span.model] if folded is not None else config.model_name(span.model)
    for agent_span in run.agent_spans:
        if agent_span.error:
            _rejected_by_check(agent_span, config)
    root_span = run.root
    if root_span is not None:
        if root_span.hints is None:
            root_span.hints = RunHints()
        _termination(run, root_span.hints, config)
        _claim(run, root_span.hints, config)
    return run


def _exchanges_of(run: Run) -> dict[str, tuple[str | None, str | None, str | None]]:
    """The exchanges of the run's tool calls, by call id, each from the last span that holds it: what
    the merge of every span's ``tool_exchanges`` in order holds for them. A model call carries every
    earlier exchange of its run again, so the last spans usually hold them all."""
    wanted = {s.tool_call_id for s in run.tool_calls if s.tool_call_id is not None}
    found: dict[str, tuple[str | None, str | None, str | None]] = {}
    for span in reversed(run.spans):
        held_here = span.tool_exchanges
        if not wanted:
            break
        if held_here:
            for call_id in [c for c in wanted if c in held_here]:
                found[call_id] = held_here[call_id]
                wanted.discard(call_id)
    return found


def _result_failure(span: Span) -> str | None:
    """``failure_in(span.tool_result, bare_text=True)``: as normalization read it, while the result is
    the text it read (``Span.result_reading``), else read now."""
    kept = span.result_reading
    if kept is not None and kept[0] is span.tool_result:
        return kept[1]
    return failure_in(span.tool_result, bare_text=True)


def _tool(span: Span, config: HintsConfig, service: str | None, agent: str | None) -> None:
    name = span.tool_name or span.name
    if span.tool_kind is None:
        rule = tool_kinds.first_match(config.tools, name, span.service_name or service, span.agent_name or agent)
        if rule is not None:
            span.tool_kind, span.tool_kind_source = rule.kind, "catalog"  # explicit: no derivation note
        elif config.infer_tool_kinds:
            inferred = tool_kinds.infer(name, span.tool_description)
            if inferred is not None:
                span.tool_kind, span.tool_kind_source = inferred[0], "inferred"
                _note(span, "tool_kind", f"kind {inferred[0]!r} inferred because {inferred[1]}")
    elif span.tool_kind_source == "inferred" and (span.derived is None or "tool_kind" not in span.derived):
        # inferred as the call arrived (``arrival``): its note is written here, where it would have been
        inferred = tool_kinds.infer(name, span.tool_description)
        if inferred is not None:
            _note(span, "tool_kind", f"kind {inferred[0]!r} inferred because {inferred[1]}")
    if span.tool_kind == "verify" and span.verification_passed is None and not span.error and span.tool_result:
        passed = tool_kinds.verdict(parsed_value(span.tool_result))  # parsed once: its failure reading parses it too
        if passed is not None:
            span.verification_passed = passed
            _note(span, "verification_passed", f"check {'passed' if passed else 'failed'}, read from its result")


def arrival(config: HintsConfig) -> Callable[[Span], bool]:
    """What hint derivation already decides of a tool call as it arrives, done then (live detection
    calls it before its trackers read the call); whether the call stays among the run's steps.

    - An answer tool (``final_answer``) that did not fail leaves the steps (``_answer_tools``): its
      error can only be set later, never cleared, and a failed one stays.
    - The kind the catalog or the call's name gives it (``_tool``), when only the call's own fields
      decide it: no catalog entry is scoped to a service or an agent the call does not name (the
      run's would be read). Its note is written by the derivation, in its place among the call's others.

    Live trackers then read the steps and kinds the diagnosis reads, so it can reuse their work. A
    call it cannot decide is left as it is, for the derivation."""
    tools = tuple(config.tools)
    by_service = any(rule.service is not None for rule in tools)
    by_agent = any(rule.agent is not None for rule in tools)
    infer = config.infer_tool_kinds

    def arrive(span: Span) -> bool:
        if span.role is not Role.TOOL:
            return True
        if is_answer_tool(span.tool_name) and not span.error:
            return False
        if span.tool_kind is not None or (by_service and not span.service_name) or (by_agent and not span.agent_name):
            return True
        name = span.tool_name or span.name
        rule = tool_kinds.first_match(tools, name, span.service_name, span.agent_name) if tools else None
        if rule is not None:
            span.tool_kind, span.tool_kind_source = rule.kind, "catalog"
        elif infer:
            inferred = tool_kinds.infer(name, span.tool_description)
            if inferred is not None:
                span.tool_kind, span.tool_kind_source = inferred[0], "inferred"
        return True

    return arrive


def _failed(span: Span, reason: str | None) -> None:
    """Mark the call failed for ``reason``, a derived hint (nothing when ``reason`` is ``None``)."""
    if reason is not None:
        span.error, span.error_type = True, "returned_error"
        _note(span, "error", f"the call failed: {reason}")


@functools.lru_cache(maxsize=1)
def _default_config() -> HintsConfig:
    return HintsConfig()


on_reload(_default_config.cache_clear)  # its pattern defaults are read from the registry


def _model_call_wrappers(run: Run) -> None:
    """One model call, one step. Some instrumentations record a call as several model spans
    (a request-preparation span and an outer streaming span around the real one); those leave
    the steps: a model span with a model span inside it, and one that shows no finish reason,
    usage or requested tools when the next model span of the same parent does."""
    calls = run.llm_calls
    if len(calls) < 2:
        return
    parents = set(map(_PARENT, calls))
    # usually no call is another's parent: told in C before a pass in Python
    wrapper_parent = ({s.span_id: s.parent_span_id for s in calls if s.span_id in parents}
                      if not run.shortcuts or not parents.isdisjoint(map(_SPAN_ID, calls)) else {})
    changed = bool(wrapper_parent)
    if wrapper_parent:
        for s in calls:
            if s.span_id in wrapper_parent:
                s.role = Role.OTHER
        calls = [s for s in calls if s.span_id not in wrapper_parent]

    def parent(call: Span) -> str | None:  # the parent, looking through the wrappers just removed
        pid = call.parent_span_id
        while pid in wrapper_parent:
            pid = wrapper_parent[pid]
        return pid

    # Most calls show something: only those that do not are compared with the next one.
    quiet = () if run.shortcuts and all(map(_SHOWS_FINISH, calls)) else [i for i, c in enumerate(calls[:-1]) if _shows_nothing(c)]
    for i in quiet:
        span, following = calls[i], calls[i + 1]
        if not _shows_nothing(following) and parent(following) == parent(span):
            span.role = Role.OTHER
            changed = True
    if changed:
        run.forget_views()  # model spans left the steps


_SHOWS_FINISH = attrgetter("finish_reasons")  # a call with finish reasons shows something
_PARENT, _SPAN_ID, _TOOL_NAME = attrgetter("parent_span_id"), attrgetter("span_id"), attrgetter("tool_name")
_EXCHANGES, _DERIVED, _MODEL = attrgetter("tool_exchanges"), attrgetter("derived"), attrgetter("model")


def _shows_nothing(call: Span) -> bool:
    return not call.finish_reasons and call.output_tokens is None and not call.requested_tools and call.input_message_count is None


GENERIC_ANSWER_TOOLS = frozenset({"submit_final_answer"})  # frameworks add their own (their tables)


@functools.cache
def final_answer_tools() -> frozenset[str]:
    """Tools whose call only hands over the answer: the generic ones and every framework's."""
    return GENERIC_ANSWER_TOOLS | registry().final_answer_tools


@functools.lru_cache(maxsize=1024)
def is_answer_tool(name: str | None) -> bool:
    """``final_answer``, and the class name an instrumentation may give it instead (``FinalAnswerTool``)."""
    found = tool_kinds.words(name or "")
    if len(found) > 1 and found[-1] == "tool":
        found = found[:-1]
    names = final_answer_tools()
    return "_".join(found) in names or "".join(found) in names


on_reload(final_answer_tools.cache_clear)
on_reload(is_answer_tool.cache_clear)


def _answer_tools(run: Run) -> None:
    """A tool that only hands over the final answer (``final_answer``) is the run's
    answer, not a step of work: it leaves the steps and, when the root lacks one, gives the answer
    (its result, else the answer its arguments hand over)."""
    tools = run.tool_calls
    if not any(map(is_answer_tool, set(map(_TOOL_NAME, tools)))):
        return  # each distinct name looked at once: a run calls a few tools many times
    changed = False
    for span in tools:
        if is_answer_tool(span.tool_name) and not span.error:
            span.role = Role.OTHER
            changed = True
            root = run.root
            answer = span.tool_result or _answer_in(span.tool_args)
            if root is not None and answer:
                if root.hints is None:
                    root.hints = RunHints()
                if root.hints.final_answer is None:
                    root.hints.final_answer = answer
    if changed:
        run.forget_views()  # answer tools left the steps


def _answer_in(args: str | None) -> str | None:
    """The answer an answer tool's arguments hand over: its one argument (``answer=...`` or positional)."""
    if not args:
        return None
    value = tool_values.canonical(parsed_value(args))
    if isinstance(value, dict):
        if set(value) >= {"args", "kwargs"}:  # a Python call's record with positional arguments
            positional, named = value.get("args"), value.get("kwargs")
            value = positional[0] if isinstance(positional, list) and len(positional) == 1 and not named else named
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.values()))
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _from_conversation(span: Span, exchange: tuple[str | None, str | None, str | None]) -> None:
    """Arguments and result a tool span lacks, from the model calls that asked for and read it."""
    args_hash, result_hash, result = exchange
    if span.args_hash is None and args_hash is not None:
        span.args_hash = args_hash
        _note(span, "args_hash", "arguments read from the conversation")
    if span.result_hash is None and result_hash is not None:
        span.result_hash = result_hash
        _note(span, "result_hash", "result read from the conversation")
        if span.tool_result is None:
            span.tool_result = result
        if not span.error:
            _failed(span, failure_in(result))


def _termination(run: Run, hints: RunHints, config: HintsConfig) -> None:
    if hints.termination_reason is not None:
        return
    found = _stopped_by_limit(run, hints, config)
    if found is not None:
        hints.termination_reason, where = found
        _note(hints, "termination_reason", f"stopped by a limit: {where}")


def _rejected_by_check(agent: Span, config: HintsConfig) -> None:
    """The framework's check of the agent's answer (a guardrail) rejected every attempt, in its error's words."""
    if agent.hints is not None and agent.hints.rejected_by_check is not None:
        return
    said = limits.limit_in([agent.status_message, agent.error_type], config.guardrail_patterns)
    if said is not None:
        if agent.hints is None:
            agent.hints = RunHints()
        agent.hints.rejected_by_check = said
        _note(agent.hints, "rejected_by_check", "the framework's guardrail gave up: its agent span's error says so")


def _stopped_by_limit(run: Run, hints: RunHints, config: HintsConfig) -> tuple[str, str] | None:
    """(termination reason, how it shows) when a limit stopped the run, else ``None``."""
    agents = run.agent_spans + run.wrappers  # a team's limit error may sit on the graph or workflow around it
    errors = [t for s in agents for t in (s.error_type, s.status_message, *s.finish_reasons)]
    if (said := limits.limit_in(errors, config.limit_patterns)) is not None:
        return "max_steps", f"its agent span's error or finish reason says so ({said!r})"
    if (said := limits.limit_in(errors, config.timeout_patterns)) is not None:
        return "timeout", f"its agent span's error says its time limit ran out ({said!r})"
    answers = dict.fromkeys([hints.final_answer, run.root.output_text if run.root else None])
    if (said := limits.limit_in(list(answers), config.limit_answer_patterns, limits.ANSWER_CHARS)) is not None:
        return "max_steps", f"its final answer says so ({said!r})"
    # A graceful limit (a forced final answer) is a run past its end only when the agent had gone on:
    # a budget of one turn that asks for the answer after it says nothing of the agent.
    went_on = _turns_before_last(run) >= MIN_TURNS_BEFORE_LIMIT  # (asked first: the prompt is then not read)
    forced = limits.limit_in([_last_prompt(run)], config.limit_answer_patterns, limits.ANSWER_CHARS) if went_on else None
    if went_on and (forced is not None or _tools_withdrawn(run)):
        return "max_steps", (f"the prompt of its last model call forces a final answer ({forced!r})" if forced is not None
                             else "its last model call was sent without the tools its agent was still asking for")
    if _ended_mid_turn(run, hints):
        return "max_steps", "it ended on a model turn that asked for tools, with no answer after it (a limit that stops quietly)"
    if (cut := _answer_cut_off(run)) is not None:
        return "max_tokens", f"its last model call stopped at the model's output token limit (finish reason {cut!r})"
    return None


# Turns the last model call's agent must have taken before it for a forced final answer to mean a limit.
MIN_TURNS_BEFORE_LIMIT = 2
# Finish reasons of a model turn the model's output token limit cut off (OpenAI, Anthropic, Gemini, Bedrock).
OUTPUT_LIMIT_FINISHES = frozenset({"length", "max_tokens", "max_output_tokens"})


def _turns_before_last(run: Run) -> int:
    """How many model calls the agent of the run's last model call made before it."""
    calls = run.llm_calls
    if len(calls) < 2:
        return 0
    agent = _agent_id(run, calls[-1])
    return sum(1 for c in calls[:-1] if _agent_id(run, c) == agent)


def _agent_id(run: Run, span: Span) -> str | None:
    agent = run.agent_of(span)
    return agent.span_id if agent is not None else None


def _answer_cut_off(run: Run) -> str | None:
    """The finish reason of the run's last step when it is a model turn the output token limit
    cut off (the answer stops mid-sentence), else ``None``."""
    steps = run.steps
    last = steps[-1] if steps else None
    if last is None or last.role is not Role.LLM or last.requested_tools:
        return None
    return next((r for r in last.finish_reasons if r.lower() in OUTPUT_LIMIT_FINISHES), None)


def _claim(run: Run, hints: RunHints, config: HintsConfig) -> None:
    if hints.claimed_success is not None:
        return
    if hints.termination_reason in ("max_steps", "timeout", "max_tokens", "cancelled"):
        return
    # The model's last reply first: an agent span's output may be a dump of the whole state
    # (a graph's), whose tool results would read as claims of their own.
    answers = dict.fromkeys((_last_reply(run), hints.final_answer, run.root.output_text if run.root else None))
    found = next((c for a in answers if (c := claims.claim_in(a, config.success_patterns, config.failure_patterns))), None)
    if found is not None:
        hints.claimed_success = found[0]
        _note(hints, "claimed_success",
              f"the final answer reads as {'a claim of success' if found[0] else 'saying the task was not done'}")


def _tools_withdrawn(run: Run) -> bool:
    """The framework took the tools away for the last model call while its agent was still
    calling them: how several frameworks force a final answer at their limit. Only
    the same agent's previous call counts: an agent that never had tools (one handed the run
    to, a code-writing agent, which writes code instead) was not stopped by sending it none."""
    calls = run.llm_calls
    if len(calls) < 2 or calls[-1].tools_offered is not False:
        return False
    agent = _agent_id(run, calls[-1])
    before = next((c for c in reversed(calls[:-1]) if _agent_id(run, c) == agent), None)
    return before is not None and before.tools_offered is True and bool(before.requested_tools)


def _ended_mid_turn(run: Run, hints: RunHints) -> bool:
    """The run stopped while its agents were still working, and nothing failed or ended it otherwise:
    its last handoff went to an agent that never acted, or its last model call asked for tools and no
    model call came after to answer (nor did the run record an answer). How a limit that raises
    nothing looks (a team's ``max_turns``, a Swarm's handoff cap, a step count that just stops the loop)."""
    calls = run.llm_calls
    if run.completion not in ("root_ended", "offline") or hints.claimed_success is not None or not calls \
            or any(s.error for s in run.agent_spans):
        return False
    last = calls[-1]
    # A lone model call is no loop a limit could have cut: a fragment of a run (a turn that a
    # framework's runtime traced on its own) or a one-shot tool use ends the same way.
    if len(calls) > 1 and not hints.final_answer and (last.requested_tools or _asked_for_tools(last)) \
            and not _answered(run, last) \
            and all(s.role is Role.TOOL and not s.error for s in run.steps if s.start_ns > last.start_ns):
        return True
    if len(run.agent_spans) < 2 or not any(map(team.is_handoff, run.tool_calls)):
        return False
    handoffs = team.team_of(run).handoffs
    if not handoffs or handoffs[-1].kind != "transfer" or not handoffs[-1].target:
        return False
    received = handoffs[-1]
    return not any(s.start_ns > received.start_ns and (a := run.agent_of(s)) is not None
                   and team.same_agent(a.agent_name, received.target) for s in calls)


# Finish reasons of a model turn that ended by asking for tools (OpenAI, Anthropic, Gemini; frameworks add
# their own): readable with content capture off, when the requested tool names are not.
TOOL_CALL_FINISHES = frozenset({"tool_calls", "tool_use", "function_call", "tool_call"})


@functools.cache
def tool_call_finishes() -> frozenset[str]:
    return TOOL_CALL_FINISHES | registry().tool_call_finishes


on_reload(tool_call_finishes.cache_clear)


def _answered(run: Run, call: Span) -> bool:
    """Whether the tools ``call`` asked for are the run's answer: answer tools only (a framework's
    output tools, ``final_answer``), or, with the names not captured, a call offered
    output tools that no tool call followed (its other tools would have run)."""
    if call.requested_tools:
        return all(_is_answer_tool(name, call.answer_tools) for name in call.requested_tools)
    return bool(call.answer_tools) and not any(s.role is Role.TOOL and s.start_ns > call.start_ns for s in run.steps)


def _is_answer_tool(name: str, offered: tuple[str, ...]) -> bool:
    return name in offered or name.lower() in final_answer_tools() or name.startswith(registry().answer_tool_prefixes)


def _asked_for_tools(call: Span) -> bool:
    return not tool_call_finishes().isdisjoint(call.finish_reasons)


def _last_prompt(run: Run) -> str | None:
    """The last user message the run's last model call sent (rendered ``role: text`` lines)."""
    calls = run.llm_calls
    text = calls[-1].input_text if calls else None
    if not text:
        return None
    head, sep, tail = text.rpartition("\nuser: ")
    return tail if sep else (text[6:] if text.startswith("user: ") else None)


def _last_reply(run: Run) -> str | None:
    """The model's last words, when the run has no agent-level answer and ends on a reply."""
    steps = run.steps
    last = steps[-1] if steps else None
    if last is not None and last.role is Role.LLM and not last.requested_tools:
        return last.output_text
    return None


def qualify(findings: Iterable[Finding], run: Run) -> list[Finding]:
    """The findings, each that rests on a derived hint with lower confidence and a note saying so."""
    run_derived = run.root.hints.derived if run.root is not None and run.root.hints is not None else None
    if run.shortcuts and not run_derived and not any(map(_DERIVED, run.spans)):
        return list(findings)  # nothing in the run was derived (told in C): nothing to qualify
    run_hints = mode_run_hints()  # run hints each mode's rule reads (besides its evidence spans' fields)
    by_id = run.spans_by_id
    out = []
    for f in findings:
        notes: dict[str, None] = {}
        for sid in f.evidence_span_ids:
            span = by_id.get(sid)
            if span is not None and span.derived and span.role is not Role.AGENT:
                for how in span.derived.values():
                    notes.setdefault(f"{span.tool_name or span.name}: {how}", None)
        if run_derived:
            for field in run_hints.get(f.mode, ()):
                if field in run_derived:
                    notes.setdefault(run_derived[field], None)
        if notes:
            shown = list(notes)[:NOTES_CAP]
            f = dataclasses.replace(f, confidence=round(f.confidence * DERIVED_CONFIDENCE, 3),
                                    explanation=f"{f.explanation} (derived hints: {'; '.join(shown)})")
        out.append(f)
    return out

