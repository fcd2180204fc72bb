"""FM-1.3 as people see it on browsing and code agents, each pattern beside its near miss.

Browsing: searches reworded that bring back the same addresses, page views gone round again, a
refused call resent. Code: the same code action reworded, rerun verbatim, or refused before
running the same way. A refined query that finds something new, and pagination that reaches new
content, stay quiet.
"""

from __future__ import annotations

import json

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.detectors import diagnose
from mast_otel.processors.detectors.code_actions import parse_failure, shape_of
from mast_otel.processors.detectors.near_repeats import addresses_in, request_of, sameness


def _call(rb, parent, tool, args, result, *, content=True, **kw):
    span = rb.tool(parent, tool, args, None, kind="read", tool_args=json.dumps(args) if content else None, **kw)
    if result is not None:
        span.result_hash = stable_hash(result)
        if content:
            span.tool_result = result
    return span


def _refused(rb, parent, tool, args, message):
    return _call(rb, parent, tool, args, None, error=True, error_type="TypeError", status_message=message)


def _hits(query, urls):
    lines = [f"Address: google: {query}", f"A Google search for '{query}' found {len(urls)} results:"]
    lines += [f"{i}. [Result {i}]({url})\nSome snippet about it." for i, url in enumerate(urls, 1)]
    return "\n".join(lines)


def _code(rb, parent, code, thought="Thought: let me try this."):
    return rb.llm(parent, output_text=f"{thought}\nCode:\n```py\n{code}\n```")


def _loops(run):
    return [f for f in diagnose(run) if f.mode == "FM-1.3"]


# Browsing agents

URLS = ["https://en.wikipedia.org/wiki/Fafnir", "https://journal.finfar.org/articles/dragons",
        "https://www.jstor.org/stable/123"]


def test_reworded_searches_that_bring_back_the_same_addresses_are_a_loop(rb):
    """The queries share few words, but the engine answered each with the very same hits."""
    a = rb.agent()
    queries = ("Emily Midkiff June 2014 dragon article", "Fafnir journal 2014 Midkiff quoted word",
               "children's literature dragons uncanny Midkiff")
    calls = [_call(rb, a, "web_search", {"query": q}, _hits(q, URLS)) for q in queries]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "same 3 addresses" in f.explanation and "nothing new" in f.explanation


def test_a_refined_query_that_finds_new_addresses_is_fine(rb):
    a = rb.agent()
    _call(rb, a, "web_search", {"query": "Midkiff 2014 dragon article"}, _hits("a", URLS))
    _call(rb, a, "web_search", {"query": "Midkiff dragon article 2014 Fafnir"}, _hits("b", URLS))
    _call(rb, a, "web_search", {"query": "Midkiff Fafnir 2014 dragons quoted"},
          _hits("c", [*URLS[:2], "https://journal.finfar.org/articles/127"]))
    assert _loops(rb.run()) == []


def test_a_tool_call_resent_after_it_refused_the_arguments_is_a_loop(rb):
    """Arguments a tool refused are refused again: resending them once is already a repeat."""
    a = rb.agent()
    message = "TypeError: PageDownTool.forward() got an unexpected keyword argument ''"
    calls = [_refused(rb, a, "page_down", {"": ""}, message) for _ in range(2)]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "refused these arguments" in f.explanation


def test_a_call_retried_once_after_a_timeout_is_fine(rb):
    a = rb.agent()
    for _ in range(2):
        _call(rb, a, "web_search", {"query": "capital of France"}, None, error=True, error_type="TimeoutError",
              status_message="TimeoutError: the search engine did not answer in 10 s")
    assert _loops(rb.run()) == []


def test_arguments_that_ask_for_nothing_are_the_same_whatever_the_field_is_called(rb):
    a = rb.agent()
    message = "TypeError: PageDownTool.forward() got an unexpected keyword argument"
    calls = [_refused(rb, a, "page_down", args, message) for args in ({"arguments": {}}, {"": ""}, {"page_down": ""})]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert sameness(request_of('{"arguments": {}}'), request_of('{"page_down": ""}')) == "same"
    assert sameness(request_of('{"arguments": {}}'), request_of('{"arguments": "page 2"}')) is None


def test_going_round_a_page_showing_views_already_seen_is_a_loop(rb):
    """visit_page, then up and down between the same two views: nothing new after the second view
    (no one call three times, which would be the exact rule's)."""
    a = rb.agent()
    first, second = "Viewport position: Showing page 1 of 3.\nIntro", "Viewport position: Showing page 2 of 3.\nBody"
    _call(rb, a, "visit_page", {"url": "https://example.org/a"}, first)
    _call(rb, a, "page_down", {}, second)
    circling = [_call(rb, a, name, {}, view) for name, view in
                (("page_up", first), ("page_down", second), ("page_up", first))]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in circling)
    assert "already seen" in f.explanation and "'page_up'" in f.explanation


def test_a_page_cycle_is_seen_with_content_off(rb):
    """Result hashes alone tell a view seen before."""
    a = rb.agent()
    views = ["v1", "v2", "v1", "v2", "v1"]
    for i, view in enumerate(views):
        _call(rb, a, "page_down" if i % 2 else "page_up", {}, view, content=False)
    [f] = _loops(rb.run())
    assert len(f.evidence_span_ids) == 3


def test_pagination_that_reaches_new_content_is_fine(rb):
    a = rb.agent()
    _call(rb, a, "visit_page", {"url": "https://example.org/a"}, "Viewport position: Showing page 1 of 5.")
    for page in range(2, 6):
        _call(rb, a, "page_down", {}, f"Viewport position: Showing page {page} of 5.")
    _call(rb, a, "find_on_page_ctrl_f", {"search_string": "dragon"}, "Viewport position: Showing page 3 of 5.")
    _call(rb, a, "find_next", {}, "Viewport position: Showing page 4 of 5.\ndragon again")
    assert _loops(rb.run()) == []


# Code agents

ASK = 'task = (\n    "{0}"\n)\nprint(task)'
ASKS = ("Please find the official 2011 Bulgarian census figures for tertiary education by gender and give both numbers",
        "Could you retrieve the official figures from the 2011 Bulgarian census for tertiary education by gender?",
        "Dear team member, please retrieve the official 2011 Bulgarian census numbers for tertiary education by "
        "gender, the exact counts")


def test_the_same_code_reworded_with_nothing_new_in_between_is_a_loop(rb):
    a = rb.agent(name="manager")
    calls = [_code(rb, a, ASK.format(text)) for text in ASKS]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "wording of its texts" in f.explanation and "3 times" in f.explanation


def test_the_same_code_reworded_while_its_tool_finds_new_things_is_fine(rb):
    a = rb.agent(name="manager")
    for i, text in enumerate(ASKS):
        _code(rb, a, ASK.format(text).replace("print(task)", "print(search_agent(task=task))"))
        _call(rb, a, "search_agent", {"task": text}, f"found figure {i}")
    assert _loops(rb.run()) == []


def test_code_rerun_verbatim_is_a_loop_and_different_code_is_not(rb):
    a = rb.agent(name="coder")
    rerun = "term = 1 + np.sqrt(hb / ghi)\nprint(term)"
    calls = [_code(rb, a, rerun, thought) for thought in ("Thought: compute it.", "Thought: try again.")]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)

    b = rb.agent(name="other")
    _code(rb, b, "import numpy as np\nterm = 1 + np.sqrt(hb / ghi)\nprint(term)")
    _code(rb, b, "print(term * 2)")
    assert len(_loops(rb.run())) == 1


def test_code_refused_before_running_the_same_way_is_a_loop(rb):
    """The same construct (a patch with triple quotes inside a triple-quoted string) refused twice."""
    a = rb.agent(name="coder")
    calls = [_code(rb, a, f'patch = """--- a/x.py\n@@ -{n} @@\n    """doc"""\n+    return 0\n"""\nprint(patch)')
             for n in (32, 33)]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "refused before running" in f.explanation


def test_code_refused_in_two_different_ways_is_fine(rb):
    a = rb.agent(name="coder")
    _code(rb, a, 'print("unterminated)')
    _code(rb, a, "def f(:\n    pass")
    assert _loops(rb.run()) == []


def test_what_is_compared():
    assert shape_of('x = ("a b " "c d")  # note\nprint(x)') == shape_of("x = ('a b c d')\nprint(x)")
    assert shape_of("print(tree[:20])").skeleton != shape_of("print(tree[20:40])").skeleton
    assert parse_failure("x = 1") is None
    assert parse_failure('x = """abc').startswith("unterminated triple-quoted string literal")
    assert addresses_in("see [a](https://a.org/x). and https://b.org/y,") == {"https://a.org/x", "https://b.org/y"}
