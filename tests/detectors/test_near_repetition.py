"""FM-1.3 on near-identical calls: the same request in other words, learning nothing new; and the near misses."""

from __future__ import annotations

import json

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.detectors import diagnose
from mast_otel.processors.detectors.near_repeats import request_of, sameness


def _call(rb, parent, tool, args, result, kind="read"):
    span = rb.tool(parent, tool, args, None, kind=kind, tool_args=json.dumps(args))
    if result is not None:
        span.tool_result, span.result_hash = result, stable_hash(result)
    return span


def _loops(run):
    return [f for f in diagnose(run) if f.mode == "FM-1.3"]


def test_the_same_search_in_other_case_punctuation_and_word_order_is_a_loop(rb):
    a = rb.agent()
    calls = [_call(rb, a, "web_search", {"query": q}, "1. Paris - Wikipedia ...")
             for q in ("capital of France", "Capital of France?", "france, capital of")]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "3 times" in f.explanation and "word order" in f.explanation


def test_page_down_with_empty_values_written_differently_is_a_loop(rb):
    a = rb.agent()
    calls = [_call(rb, a, "page_down", args, "Viewport position: Showing page 4 of 4.")
             for args in ({"": ""}, {"": {}}, {"": ""}, {"": {}})]
    [f] = _loops(rb.run())
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "empty value" in f.explanation and "4 times" in f.explanation


def test_reworded_questions_about_the_same_file_that_learn_nothing_new_are_a_loop(rb):
    a = rb.agent()
    for question in ("What is the total amount on the invoice?", "What is the invoice total amount?",
                     "What total is due on the invoice?"):
        _call(rb, a, "inspect_file_as_text", {"file_path": "data/invoice.pdf", "question": question},
              "The file could not be parsed.")
    [f] = _loops(rb.run())
    assert "reworded" in f.explanation and "nothing new" in f.explanation


def test_reworded_searches_that_return_nothing_are_a_loop(rb):
    a = rb.agent()
    for q in ("1928 Olympics smallest team country", "country with smallest team 1928 Olympics",
              "smallest team at the 1928 summer Olympics"):
        _call(rb, a, "web_search", {"query": q}, None)
    [f] = _loops(rb.run())
    assert "returned nothing" in f.explanation


def test_a_query_refined_after_an_empty_result_that_then_finds_something_is_fine(rb):
    a = rb.agent()
    _call(rb, a, "web_search", {"query": "1928 Olympics smallest team"}, None)
    _call(rb, a, "web_search", {"query": "smallest team 1928 Olympics country"}, None)
    _call(rb, a, "web_search", {"query": "1928 Summer Olympics smallest team by athletes"}, "Cuba sent 1 athlete")
    _call(rb, a, "visit_page", {"url": "https://en.wikipedia.org/wiki/1928_Summer_Olympics"}, "page text")
    assert _loops(rb.run()) == []


def test_a_tool_run_again_after_a_write_changed_the_data_is_fine(rb):
    a = rb.agent()
    _call(rb, a, "get_pods", {"namespace": "shop"}, "checkout: CrashLoopBackOff")
    _call(rb, a, "get_pods", {"namespace": "Shop "}, "checkout: CrashLoopBackOff")
    _call(rb, a, "restart_deployment", {"deployment": "checkout"}, "restarted", kind="write")
    _call(rb, a, "get_pods", {"namespace": "shop"}, "checkout: CrashLoopBackOff")
    assert _loops(rb.run()) == []


def test_different_requests_and_changing_results_are_fine(rb):
    a = rb.agent()
    for pod in ("checkout-1", "payments-2", "cart-3"):
        _call(rb, a, "get_logs", {"pod": pod, "since_minutes": 5}, "no log lines")
    for i in range(3):
        _call(rb, a, "page_down", {"": ""}, f"Viewport position: Showing page {i + 1} of 4.")
    assert _loops(rb.run()) == []


def test_identical_arguments_stay_the_exact_rules_finding(rb):
    a = rb.agent()
    for _ in range(4):
        _call(rb, a, "web_search", {"query": "capital of France"}, "Paris")
    [f] = _loops(rb.run())
    assert "same arguments" in f.explanation


def test_sameness_of_requests():
    same = request_of('{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"": ""}}')
    assert sameness(same, request_of('{"": {}}')) == "same"
    assert sameness(request_of('{"q": "a b c d"}'), request_of('{"q": "x y z d"}')) is None
    assert sameness(request_of('{"q": "a b", "n": 1}'), request_of('{"q": "a b", "n": 2}')) is None
    assert sameness(request_of('{"url": "https://en.wikipedia.org/wiki/A"}'),
                    request_of('{"url": "https://en.wikipedia.org/wiki/B"}')) is None
    assert sameness(request_of('{"url": "https://EN.wikipedia.org/wiki/A"}'),
                    request_of('{"url": "https://en.wikipedia.org/wiki/A/"}')) == "same"
