"""How a run ended, from GenAI spans as frameworks write them: which endings are a limit (FM-1.5),
which a give-up after an error (FM-3.1), and the shapes that look like one and are not.

Each run is built from span attributes through the processor's own normalizer, as a trace file
or an OTLP request would be read; each false-alarm shape has its counterpart that must still be found.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.hints import limits
from mast_otel.processors.ingest.normalize import normalize_into
from mast_otel.processors.model import Run, Span
from mast_otel.wire.claims import DEFAULT_FAILURE_PATTERNS

TRACE = "cd" * 16
ROOT = "01" * 8


class _Trace:
    """Spans appended in start order, each normalized from its attributes."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.clock = 0

    def add(self, name: str, attrs: dict, parent: str | None = ROOT, *, status: str | None = None) -> Span:
        self.clock += 10
        span = Span(TRACE, f"{len(self.spans) + 1:016x}", parent, name, self.clock, self.clock + 5)
        if status is not None:
            span.error, span.status_message = True, status
        assert normalize_into(span, name, attrs)
        self.spans.append(span)
        return span

    def agent(self, name: str, parent: str | None = None, **attrs: str) -> Span:
        return self.add(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs}, parent)

    def chat(self, parent: str = ROOT, *, asks: tuple[str, ...] = (), tools: tuple[str, ...] = (), content: bool = True,
             prompt: str = "go on", reply: str = "", finish: str | None = None, output_tools: tuple[str, ...] | None = None) -> Span:
        attrs: dict = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                       "gen_ai.response.finish_reasons": [finish or ("tool_call" if asks else "stop")]}
        if output_tools is not None:  # Pydantic AI writes it with content capture off too
            attrs["model_request_parameters"] = json.dumps({
                "function_tools": [{"name": t} for t in tools], "output_tools": [{"name": t, "kind": "output"} for t in output_tools]})
        if content:
            attrs["gen_ai.input.messages"] = json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}])
            parts = [{"type": "tool_call", "id": f"c{self.clock}", "name": t, "arguments": {}} for t in asks]
            if reply:
                parts.append({"type": "text", "content": reply})
            attrs["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts}])
            if tools:
                attrs["gen_ai.tool.definitions"] = json.dumps([{"type": "function", "name": t} for t in tools])
        return self.add("chat gpt-4o", attrs, parent)

    def tool(self, name: str, parent: str = ROOT, *, result: str = "ok", error: str | None = None) -> Span:
        return self.add(f"execute_tool {name}", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                                 "gen_ai.tool.call.result": result}, parent, status=error)

    def findings(self) -> dict[str, str]:
        run = Run.from_spans(TRACE, self.spans)
        return {f.mode: f.explanation for f in rule_findings(run)}


# --- a model call sent without tools ------------------------------------------------------------


def test_an_agent_handed_the_run_that_never_had_tools_was_not_stopped_by_a_limit():
    """The coordinator hands over to a writer that has no tools (or a smolagents CodeAgent, which never
    sends any): the writer's call "without the tools" is how it always works, not a forced answer."""
    t = _Trace()
    t.agent("coordinator")
    for _ in range(3):
        t.chat(asks=("get_logs",), tools=("get_logs", "transfer_to_writer"))
        t.tool("get_logs")
    t.chat(asks=("transfer_to_writer",), tools=("get_logs", "transfer_to_writer"))
    t.tool("transfer_to_writer", result="handed over")
    writer = t.agent("writer", parent=ROOT)
    t.chat(writer.span_id, reply="Here is the incident summary.", prompt="Write the summary.")
    assert "FM-1.5" not in t.findings()


def test_an_agent_whose_own_tools_were_withdrawn_after_it_kept_calling_them_was_stopped():
    t = _Trace()
    t.agent("coordinator")
    for _ in range(3):
        t.chat(asks=("get_logs",), tools=("get_logs",))
        t.tool("get_logs")
    t.chat(reply="The logs show a crash loop.")  # the framework's last call: no tools offered
    assert "was stopped by max steps" in t.findings()["FM-1.5"]


def test_a_forced_final_answer_after_a_single_turn_is_the_budget_not_an_overrun():
    """CrewAI with max_iter=1 asks for the final answer after the agent's one tool turn."""
    forced = "Now it's time you MUST give your absolute best final answer. You'll ignore all previous instructions."

    def run(turns: int) -> dict[str, str]:
        t = _Trace()
        t.agent("researcher")
        for _ in range(turns):
            t.chat(asks=("get_final_answer",), tools=("get_final_answer",))
            t.tool("get_final_answer", result="42")
        t.chat(prompt=forced, reply="42")
        return t.findings()

    assert "FM-1.5" not in run(1)
    assert "forces a final answer" in run(3)["FM-1.5"]


# --- Pydantic AI: the output tool is the answer ------------------------------------------------


def _pydantic_ai_run(*, content: bool, result: bool) -> _Trace:
    """A Pydantic AI run with a structured result: a function tool, then the output tool ``final_result``,
    which Pydantic AI validates and returns without an ``execute_tool`` span."""
    t = _Trace()
    attrs = {"final_result": json.dumps({"city": "Mexico City"})} if content and result else {}
    t.agent("agent", **attrs)
    t.chat(asks=("get_user_country",), tools=("get_user_country", "final_result"), content=content, output_tools=("final_result",))
    t.tool("get_user_country", result="Mexico")
    t.chat(asks=("final_result",), tools=("get_user_country", "final_result"), content=content, output_tools=("final_result",))
    return t


def test_a_pydantic_ai_run_ending_on_its_output_tool_ended_with_its_answer():
    for content, result in ((True, True), (True, False), (False, False)):
        assert "FM-1.5" not in _pydantic_ai_run(content=content, result=result).findings(), (content, result)


def test_a_run_ending_on_a_call_for_tools_that_ran_with_nothing_after_still_reads_as_a_quiet_limit():
    """Without output tools offered, the last turn asked for work that ran, and no answer came."""
    t = _Trace()
    t.agent("assistant")
    for _ in range(3):
        t.chat(asks=("search",), tools=("search",), content=False, output_tools=())
        t.tool("search")
    assert "was stopped by max steps" in t.findings()["FM-1.5"]


# --- limits said in the framework's words, and the model's output limit ------------------------


def test_a_usage_limit_raised_before_the_first_model_call_is_a_limit():
    """Pydantic AI checks token limits before each request: the run can end with no model call at all."""
    t = _Trace()
    t.add("invoke_agent agent", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent"}, None,
          status="UsageLimitExceeded: The next request would exceed the input_tokens_limit of 18 (input_tokens=19).")
    found = t.findings()
    assert "before any model or tool call" in found["FM-1.5"] and "UsageLimitExceeded" in found["FM-1.5"]


def test_a_run_without_steps_or_a_limit_has_no_finding():
    t = _Trace()
    t.add("invoke_agent agent", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent"}, None,
          status="ConnectionError: the provider is unreachable")
    assert t.findings() == {}


def test_a_task_time_limit_is_a_timeout():
    t = _Trace()
    t.add("invoke_agent Researcher", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Researcher"}, None,
          status="TimeoutError: Task 'List 5 ideas.' execution timed out after 1 seconds. "
                 "Consider increasing max_execution_time or optimizing the task.")
    t.chat(asks=("what_amazing_tool",), tools=("what_amazing_tool",))
    t.tool("what_amazing_tool")
    assert "was stopped by timeout" in t.findings()["FM-1.5"]


def test_an_answer_cut_off_at_the_output_token_limit_is_a_limit_and_an_earlier_cut_is_not():
    t = _Trace()
    t.agent("agent")
    t.chat(reply="The capital of France is", finish="length")
    assert "output token limit" in t.findings()["FM-1.5"]
    t = _Trace()
    t.agent("agent")
    t.chat(reply="The capital of", finish="length")
    t.chat(reply="The capital of France is Paris.", finish="stop")
    assert "FM-1.5" not in t.findings()


# --- a tool error the run went on after ------------------------------------------------------


def _worker_error_run(worker_reply: str, final: str) -> _Trace:
    t = _Trace()
    t.agent("manager")
    t.chat(asks=("delegate_work",), tools=("delegate_work",))
    delegation = t.tool("delegate_work", result="see below")
    worker = t.agent("scorer", parent=delegation.span_id)
    t.chat(worker.span_id, asks=("scoring_examples",), tools=("scoring_examples",))
    t.tool("scoring_examples", worker.span_id, result="", error="Error")
    t.chat(worker.span_id, reply=worker_reply, tools=("scoring_examples",))
    t.chat(reply=final, tools=("delegate_work",))
    return t


def test_a_run_that_went_on_after_a_tool_error_did_not_stop_there():
    went_on = _worker_error_run("The title is clear and topical but generic: a solid 3.", "3 out of 5")
    assert "FM-3.1" not in went_on.findings()


def test_a_worker_that_reports_the_error_back_ends_the_run_on_it_when_the_manager_gives_up():
    gave_up = _worker_error_run("The scoring examples tool failed, so I cannot score the title.", "I could not score it.")
    assert "right after an error from tool 'scoring_examples'" in gave_up.findings()["FM-3.1"]


def test_a_manager_that_answers_after_its_workers_failure_report_went_on():
    """The worker reported its tool's failure, and the manager answered the task anyway: the run did
    not stop at the error (whether the answer holds is for other modes and the judge)."""
    reported = _worker_error_run("The scoring examples tool failed.", "3 out of 5")
    assert "FM-3.1" not in reported.findings()


# --- a framework's check that rejected every attempt (FM-1.1) --------------------------------


def _guardrail_run(error: str) -> dict[str, str]:
    t = _Trace()
    t.add("invoke_agent Sports Analyst", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Sports Analyst"},
          None, status=error)
    for _ in range(3):
        t.chat(reply="1. Messi 2. Neymar ...")
    return t.findings()


def test_a_guardrail_that_rejected_every_retry_means_the_answers_kept_breaking_the_task():
    found = _guardrail_run("Agent's guardrail failed validation after 2 retries. Last error: no Brazilian players")
    assert "rejected every attempt" in found["FM-1.1"] and "derived hints" in found["FM-1.1"]


def test_a_guardrail_that_gave_no_second_attempt_or_raised_itself_is_no_finding():
    assert "FM-1.1" not in _guardrail_run("Task failed guardrail validation after 0 retries. Last error: Unexpected error")


# --- a tool's observation the model wrote itself (FM-2.6) --------------------------------------


def test_a_completion_that_writes_its_own_observation_invented_the_tools_result():
    t = _Trace()
    t.agent("data collector")
    t.chat(reply="Thought: I need step1.\nAction: get_data\nAction Input: {\"step\": \"step1\"}\n"
                 "Observation: step1 data\nThought: I now know the final answer\nFinal Answer: done")
    assert "'get_data'" in t.findings()["FM-2.6"]


def test_a_completion_that_stops_at_its_action_or_only_mentions_observations_is_fine():
    t = _Trace()
    t.agent("data collector")
    t.chat(reply="Thought: I need step1.\nAction: get_data\nAction Input: {\"step\": \"step1\"}\nObservation:")
    t.chat(reply="Final Answer: the Observation: field of each report was empty, so no Action: was needed.")
    assert "FM-2.6" not in t.findings()


# --- a tool error seen only in the conversation ---------------------------------------------------


def _conversation_only_run(result: str, reply: str) -> _Trace:
    """OpenLLMetry over CrewAI's native tool calls: two model calls and no tool span; the tool's
    result is only the tool message in the second call's prompt."""
    t = _Trace()
    t.agent("base_agent")
    t.add("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                          "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Use the tool"}]}]),
                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                              {"type": "tool_call", "id": "call_1", "name": "error_tool", "arguments": {}}]}])})
    t.add("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                          "gen_ai.input.messages": json.dumps([
                              {"role": "user", "parts": [{"type": "text", "content": "Use the tool"}]},
                              {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "error_tool", "arguments": {}}]},
                              {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}]}]),
                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": reply}]}])})
    return t


def test_a_run_that_ends_right_after_a_tool_error_only_its_prompt_shows_stopped_there():
    found = _conversation_only_run("Error executing tool: Simulated tool error", "Error executing tool: Simulated tool error").findings()
    assert "'error_tool'" in found["FM-3.1"] and "conversation" in found["FM-3.1"]
    assert "FM-3.1" not in _conversation_only_run("42", "The answer is 42.").findings()


_LIMIT_WORDS = ["ran out of steps", "Ran Out Of Turns", "need more steps", "needs more steps", "MUST give your absolute best final answer",
                "tool call limit exceeded", "model call limits reached", "Agent stopped due to iteration limit",
                "it got stuck and failed to do so", "Based on the above, please provide an answer to the following user task",
                "max_execution_time", "guardrail", "ran out of ſteps", "tool call limit reached", "stopped", "limit", "\n",
                "MaxIterationsExceeded", "GraphRecursionError", "limit_turns", "max_steps", "recursion_limit", "TurnLimit",
                "Max iterations of 8 reached", "maximum steps exceeded", "step limit of 3", "UsageLimitExceeded", "(x|y)",
                "could not", "Not resolved", " - failed", "ERROR", "wasn't able", "giving up"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LIMIT_WORDS) | st.text(max_size=12), max_size=6).map(" ".join),
       st.sampled_from([limits.ANSWER_CHARS, limits.ERROR_CHARS, 12]),
       st.sampled_from(["answer", "timeout", "guardrail", "limit", "custom", "claim failure"]))
def test_texts_without_any_needed_word_are_not_searched_and_read_as_the_search_reads_them(text, chars, which):
    """The words a match needs (``limits.needed_words``) skip the search only where it finds nothing."""
    patterns = {"answer": limits.default_limit_answer_patterns(), "timeout": limits.default_timeout_patterns(),
                "guardrail": limits.default_guardrail_patterns(), "limit": limits.default_limit_patterns(),
                "custom": [r"\bout of (steps|turns)\b|^stopped\b", r"limits? (hit|reached)", r"a[b-d]+e\.f{2}"],
                "claim failure": list(DEFAULT_FAILURE_PATTERNS)}[which]
    compiled = limits._compiled(tuple(patterns))
    assert limits._phrase(compiled, text, chars, limits.needed_words(tuple(patterns))) == limits._phrase(compiled, text, chars)


def test_the_words_a_limit_pattern_needs_are_its_plain_runs_outside_groups():
    assert limits.needed_words((r"\bran out of (steps|turns)\b", r"^(model|tool) call limits? (exceeded|reached)\b")) == \
        ("ran out of ", " call limit")
    assert limits.needed_words((r"\bneed(s)? more steps\b|^Based on\b",)) == (" more steps", "based on")
    assert limits.needed_words((r"\b(MaxIterations\w*|TurnLimit\w*)\b",)) == ("maxiterations", "turnlimit")  # the group's
    assert limits.needed_words((r"^(limit_(turns|steps)|(turn|step)_limit)$",)) == ("limit_", "_limit")
    assert limits.needed_words((r"\b(ab|cd)?xy\b",)) is None and limits.needed_words((r"(ab|c)",)) is None  # nothing sure: always searched
    assert limits.needed_words((r"^\W*(failed|error)\b", r"^\s+(gave up)$")) == ("failed", "error", "gave up")  # after separators
    assert limits.needed_words((r"(?i)ran out",)) is None and limits.needed_words(("épuisé",)) is None
