"""A run's diagnosis reads each final answer, report and error for a limit or a claim once, and
each tool result for a failure once, however many detectors and hints ask (on the shortcuts path;
the plain path reads them every time, with the same answers: tests/detectors/test_fast_paths.py
compares the two on every recorded corpus)."""

from __future__ import annotations

import collections
import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.wire import claims as wire_claims
from mast_otel.processors.detectors import diagnose
from mast_otel.processors.hints import claims, derive_hints, limits
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.tools import content_memo
from mast_otel.processors.tools.content_memo import remembering
from mast_otel.processors.model import Run
from mast_otel.processors.tools import values
from tests.corpora import corpus_files

_PHRASES = st.sampled_from(["Max iterations of 8 reached", "MaxTurnsExceeded", "ran out of steps", "limit_turns",
                            "The incident is resolved.", "I could not restart it", "gave up", "error", "ok", "",
                            "Agent stopped due to iteration limit or time limit.", "recursion limit of 25 reached"])
_TEXTS = st.one_of(_PHRASES, st.lists(_PHRASES | st.text(max_size=20), max_size=4).map(" ".join))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | _TEXTS, min_size=1, max_size=6), st.sampled_from([limits.ERROR_CHARS, limits.ANSWER_CHARS, 5]))
def test_limits_and_claims_read_with_a_memo_are_the_plain_readings(texts, chars):
    patterns = [limits.default_limit_patterns(), limits.default_limit_answer_patterns(), limits.default_timeout_patterns()]
    plain = ([limits.limit_in(texts, p, chars) for p in patterns], [claims.claim_in(t) for t in texts])
    with remembering():
        for _ in range(2):
            assert ([limits.limit_in(texts, p, chars) for p in patterns], [claims.claim_in(t) for t in texts]) == plain
    assert plain[1] == [wire_claims.claim_in(t) for t in texts]


_CLAIM_WORDS = st.sampled_from(["could not", "Couldn't", "CANNOT", "unable to", "failed", "FAILURE", "Error", "not yet resolved",
                                 "resolved", "Fixed", "is now healthy", "are back up", "task is done", "wasn't able", "gave up",
                                 "up", "is", "not", "\n", "-", "ſ", "é", "K"])
_CLAIM_TEXTS = st.lists(_CLAIM_WORDS | st.text(max_size=8), max_size=8).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(_CLAIM_TEXTS, st.booleans())
def test_a_claim_read_with_a_memo_skips_the_failure_search_only_where_it_finds_nothing(text, long):
    """On the shortcuts path an ASCII text without any word the failure patterns need is not searched
    for them: the reading is the plain one, at the start of a text and past what ``claim_in`` reads."""
    text = ("All good. " * 300 + text) if long else text
    plain = wire_claims.claim_in(text)
    with remembering():
        assert claims.claim_in(text) == plain
    custom = ([r"\bok\b"], [r"^\s*(nope|no way)\b"])
    with remembering():
        assert claims.claim_in(text, *custom) == wire_claims.claim_in(text, *custom)


def _reads(monkeypatch, runs: list[Run], *, shortcuts: bool) -> collections.Counter:
    """How often each (reader, text) was read while the runs were diagnosed, the service's way."""
    counted: collections.Counter = collections.Counter()
    real_claim, real_phrase, real_error = claims.read_claim, limits._phrase, content_memo.error_in

    def claim(text, success, failure):
        counted[("claim", text)] += 1
        return real_claim(text, success, failure)

    def phrase(compiled, text, chars, needed=None):
        counted[(compiled.pattern, chars, text)] += 1
        return real_phrase(compiled, text, chars, needed)

    def error(value, bare_text=False):
        if isinstance(value, str):
            counted[("error", bare_text, value)] += 1
        return real_error(value, bare_text=bare_text)

    monkeypatch.setattr(claims, "read_claim", claim)
    monkeypatch.setattr(limits, "_phrase", phrase)
    monkeypatch.setattr(content_memo, "error_in", error)
    for run in runs:
        run = copy.deepcopy(run)
        run.shortcuts = shortcuts
        with remembering(shortcuts):  # as the service's rule stage holds it around both
            derive_hints(run)
            diagnose(run, shortcuts=shortcuts)
        counted["runs"] += 1
    monkeypatch.undo()
    return counted


def test_each_text_is_read_once_per_run_on_the_shortcuts_path_and_again_on_the_plain_one(monkeypatch):
    runs = [r for path in corpus_files() for r in load_runs([path]) if r.steps]
    fast, plain = collections.Counter(), collections.Counter()
    for run in runs:  # per run: a memo lives with one run's diagnosis
        once = _reads(monkeypatch, [run], shortcuts=True)
        again = _reads(monkeypatch, [run], shortcuts=False)
        assert max(once.values()) == 1, run.trace_id
        fast.update(once), plain.update(again)
    assert fast["runs"] == plain["runs"] > 300
    assert sum(plain.values()) > sum(fast.values()) * 1.1  # the plain path reads the same texts again
    assert values.error_in is content_memo.error_in  # (nothing left patched)


def test_a_checks_result_is_parsed_once_for_its_verdict_and_its_failure(monkeypatch):
    """A check's result printed as a Python literal (the slow parse: ``ast``, or on the shortcuts path
    respelled as JSON) is read for the check's verdict and for a failure: parsed once on the shortcuts
    path, once per reading on the plain one."""
    import ast

    from mast_otel.processors.model import Role, Span
    from mast_otel.processors.tools import values

    result = "{'status': 'passed', 'checks': ['pods', 'ingress'], 'note': None}"
    spans = [Span("t", "a", None, "invoke_agent sre", 1, 10, role=Role.AGENT, agent_name="sre"),
             Span("t", "v", "a", "execute_tool verify_rollout", 2, 3, role=Role.TOOL, tool_name="verify_rollout",
                  tool_kind="verify", tool_result=result)]
    parses = collections.Counter()
    real = ast.literal_eval

    def literal_eval(text):
        parses[text] += 1
        return real(text)

    def respelled_value(text, real=values.respelled_value):
        parses[text] += 1
        return real(text)

    monkeypatch.setattr(ast, "literal_eval", literal_eval)
    monkeypatch.setattr(values, "respelled_value", respelled_value)  # (this text is spelled like JSON: no ast after it)
    for shortcuts in (True, False):
        run = Run.from_spans("t", copy.deepcopy(spans), shortcuts=shortcuts)
        parses.clear()
        derive_hints(run)
        assert run.tool_calls[0].verification_passed is True
        assert parses[result] == (1 if shortcuts else 2)


def test_a_tool_result_read_as_it_arrived_is_not_read_again_while_it_is_the_same_text(monkeypatch):
    """Normalization keeps the failure reading of a tool's result with its step (``Span.result_reading``,
    shortcuts path only): hint derivation takes it while the result is that same text, reads anew
    once it is another, and reads every time on the plain path."""
    from mast_otel.processors.model import Role, Span

    result = "{'status': 'ok', 'pods': ['web-1']}"  # a Python literal: the slow parse
    spans = [Span("t", "a", None, "invoke_agent sre", 1, 10, role=Role.AGENT, agent_name="sre"),
             Span("t", "w", "a", "execute_tool restart", 2, 3, role=Role.TOOL, tool_name="restart",
                  tool_kind="write", tool_result=result, result_reading=(result, None))]
    reads = collections.Counter()
    real = content_memo.error_in

    def error(value, bare_text=False):
        reads[value if isinstance(value, str) else "parsed"] += 1
        return real(value, bare_text=bare_text)

    monkeypatch.setattr(content_memo, "error_in", error)
    for shortcuts, read in ((True, 0), (False, 1)):
        run = Run.from_spans("t", copy.deepcopy(spans), shortcuts=shortcuts)
        reads.clear()
        derive_hints(run)
        assert sum(reads.values()) == read and not run.tool_calls[0].error
    changed = copy.deepcopy(spans)
    changed[1].tool_result = "Error: restart refused"  # no longer the text that was read
    run = Run.from_spans("t", changed)
    derive_hints(run)
    assert run.tool_calls[0].error and run.tool_calls[0].error_type == "returned_error"
