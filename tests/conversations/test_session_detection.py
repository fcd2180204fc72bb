"""Session-level detection on sessions built through the real decode and normalize path (see ``turns``)."""

from __future__ import annotations

import pytest

from mast_otel.processors.conversations.diagnose import diagnose_session
from mast_otel.processors.conversations.settings import SessionDetectionConfig

from .turns import SYSTEM, ToolCall, TurnSpec, conversation, session

NAME = "Hi, I am Dana and I am on call for the shop namespace."
STATUS = "Are the checkout pods healthy?"
ASK = "What name did I give you?"
WHERE = "Which namespace am I on call for?"
USER_TURNS = [NAME, STATUS, ASK, WHERE]
ANSWERS = ["Hello Dana.", "checkout-1 is crash looping.", "You are Dana.", "The shop namespace."]
FORGOT = ["Hello Dana.", "checkout-1 is crash looping.", "I don't know your name: you have not told me.",
          "I don't know which namespace you are on call for."]
PODS = ToolCall("get_pods", {"namespace": "shop"}, '{"pods": [{"name": "checkout-1", "status": "CrashLoopBackOff"}]}')
RECOVERED = ToolCall("get_pods", {"namespace": "shop"}, '{"pods": [{"name": "checkout-1", "status": "Running"}]}')


def found(turns, config=None):
    """(mode, anchor turn index, evidence turn indices) of each finding."""
    index = {t.trace_id: i for i, t in enumerate(turns)}
    result = []
    for f in diagnose_session(turns, config):
        assert f.evidence and f.explanation and 0 < f.confidence <= 1
        assert all(e.trace_id in index and e.span_id for e in f.evidence)
        result.append((f.mode, index[f.turn_trace_id], sorted({index[e.trace_id] for e in f.evidence})))
    return result


def with_tokens(specs, tokens, answer_tokens=20):
    for spec, count in zip(specs, tokens):
        spec.input_tokens, spec.answer_tokens = count, answer_tokens
    return specs


# --- FM-1.4 history lost between turns -------------------------------------------------------

def test_history_dropped_with_content_is_found_on_the_first_turn_without_it():
    turns = session(conversation(USER_TURNS, FORGOT, carried=False))
    assert found(turns) == [("FM-1.4", 1, [1, 2, 3])]
    (finding,) = diagnose_session(turns)
    assert "turns 3, 4 says the agent does not have" in finding.explanation
    assert finding.confidence >= 0.9
    for text in USER_TURNS + FORGOT:  # plain words, no message content
        assert text not in finding.explanation


def test_turns_handed_over_out_of_order_are_read_in_the_order_they_started():
    turns = session(conversation(USER_TURNS, FORGOT, carried=False))
    shuffled = [turns[2], turns[0], turns[3], turns[1]]
    assert [(f.mode, f.turn_trace_id) for f in diagnose_session(shuffled)] == [("FM-1.4", turns[1].trace_id)]


def test_history_carried_is_quiet():
    assert found(session(conversation(USER_TURNS, ANSWERS))) == []


def test_history_dropped_without_content_shows_in_input_tokens():
    specs = with_tokens(conversation(USER_TURNS, FORGOT, carried=False), [60, 57, 63, 59])
    assert found(session(specs, content=False)) == [("FM-1.4", 1, [1, 2, 3])]


def test_growing_input_tokens_without_content_are_quiet():
    specs = with_tokens(conversation(USER_TURNS, ANSWERS), [60, 98, 140, 181])
    assert found(session(specs, content=False)) == []


def test_a_context_trimmed_to_a_window_is_quiet():
    """Input tokens plateau once the window is full: far above the opening, so not read as lost."""
    specs = with_tokens(conversation(USER_TURNS + ["And now?", "Anything else?"], ANSWERS + ["Fine.", "No."]),
                        [60, 300, 600, 610, 605, 612])
    assert found(session(specs, content=False)) == []


def test_a_reset_after_the_conversation_grew_is_found_on_that_turn_alone():
    specs = conversation(USER_TURNS, ANSWERS)
    specs[3].messages = [("system", SYSTEM), ("user", WHERE)]  # turn 4 starts over
    assert found(session(specs)) == [("FM-1.4", 3, [3])]


def test_one_turn_without_history_waits_for_a_second_and_keeps_its_turn():
    """Live, the diagnosis is revised as turns arrive: the finding shows with turn 3, anchored on turn 2."""
    turns = session(conversation(USER_TURNS, FORGOT, carried=False))
    assert found(turns[:2]) == []
    assert found(turns[:3]) == [("FM-1.4", 1, [1, 2])]
    assert found(turns) == [("FM-1.4", 1, [1, 2, 3])]
    assert found(turns[:2], SessionDetectionConfig(history_min_flat_turns=1)) == [("FM-1.4", 1, [1])]


def test_history_packed_into_one_message_is_carried():
    """Message counts flat, but each input holds the previous turn's user message: content decides."""
    specs, history = [], ""
    for user, answer in zip(USER_TURNS, ANSWERS):
        specs.append(TurnSpec([("system", SYSTEM), ("user", (history + "\n" if history else "") + user)], answer))
        history += f"Earlier the user said: {user} and you answered: {answer}"
    assert found(session(specs)) == []


@pytest.mark.parametrize("content", [True, False])
def test_a_router_that_sees_only_the_new_message_is_no_loss_when_its_agent_gets_the_conversation(content):
    specs = with_tokens(conversation(USER_TURNS, ANSWERS), [60, 98, 140, 181])
    for spec in specs:
        spec.router = True
    assert found(session(specs, content=content)) == []
    dropped = with_tokens(conversation(USER_TURNS, FORGOT, carried=False), [60, 57, 63, 59])
    for spec in dropped:
        spec.router = True
    turns = session(dropped, content=content)
    assert found(turns) == [("FM-1.4", 1, [1, 2, 3])]
    (finding,) = diagnose_session(turns)
    assert len(finding.evidence) >= 6  # both agents' first calls on each turn


# --- FM-1.3 the same call repeated turn after turn ------------------------------------------

def lookups(results, user_turns=None):
    users = user_turns or [STATUS, "How many restarts?", "What is the pod called?", "Which namespace?"]
    specs = conversation(users[: len(results)], ANSWERS[: len(results)])
    for spec, result in zip(specs, results):
        spec.tools = [result]
    return specs


def test_a_lookup_repeated_each_turn_for_the_same_result_is_found_on_the_first_repeat():
    turns = session(lookups([PODS, PODS, PODS, PODS]))
    assert found(turns) == [("FM-1.3", 1, [1, 2, 3])]
    assert found(turns[:2]) == []  # one repeat is not yet turn after turn
    assert found(turns[:3]) == [("FM-1.3", 1, [1, 2])]


def test_a_lookup_whose_result_changed_is_quiet():
    assert found(session(lookups([PODS, RECOVERED, PODS, RECOVERED]))) == []


def test_a_user_who_asks_to_check_again_is_quiet():
    users = [STATUS, "I restarted it. Check again please?", "Can you look again, is it still fine?", "Once more: recheck."]
    assert found(session(lookups([PODS, PODS, PODS, PODS], users))) == []


def test_a_user_who_repeats_the_question_is_quiet():
    assert found(session(lookups([PODS, PODS, PODS], [STATUS, STATUS, STATUS]))) == []


def test_repeats_need_the_hashes_so_no_content_is_quiet():
    assert found(session(lookups([PODS, PODS, PODS, PODS]), content=False)) == []


def test_repeats_without_content_are_found_from_the_instrumentation_hashes():
    hashed = ToolCall(PODS.name, PODS.args, PODS.result, hashed=True)
    turns = session(lookups([hashed, hashed, hashed]), content=False)
    assert found(turns) == [("FM-1.3", 1, [1, 2])]


def test_the_repeat_threshold_is_the_config():
    turns = session(lookups([PODS, PODS]))
    assert found(turns, SessionDetectionConfig(repeat_min_turns=2)) == [("FM-1.3", 1, [1])]


# --- FM-3.3 a claim against an earlier turn's failed check ----------------------------------

CHECK_FAILED = ToolCall("run_tests", {"suite": "unit"}, "2 failed", kind="verify", passed=False)
CHECK_PASSED = ToolCall("run_tests", {"suite": "unit"}, "all passed", kind="verify", passed=True)
CLAIM = {"mast.run.claimed_success": True}


def checks(second_tools, second_answer="Yes, the tests are all good."):
    specs = conversation(["Run the unit tests.", "Is it all good now?"], ["Two tests fail.", second_answer])
    specs[0].tools = [CHECK_FAILED]
    specs[1].tools, specs[1].root = second_tools, CLAIM
    return specs


def test_a_claim_after_an_earlier_failed_check_is_found_on_the_claiming_turn():
    assert found(session(checks([]))) == [("FM-3.3", 1, [0, 1])]


def test_a_claim_backed_by_a_new_check_is_quiet():
    assert found(session(checks([CHECK_PASSED]))) == []


def test_a_claim_about_something_else_is_quiet():
    assert found(session(checks([], "Done: the summary is written."))) == []


def test_contradicted_checks_can_be_switched_off():
    assert found(session(checks([])), SessionDetectionConfig(contradicted_checks=False)) == []


def test_a_single_turn_is_no_session_finding():
    assert found(session(conversation([NAME], ["Hello."]))) == []


def test_bad_patterns_are_refused_with_the_field_named():
    with pytest.raises(ValueError, match="not_known_patterns"):
        SessionDetectionConfig(not_known_patterns=["(unclosed"])


# --- FM-1.4 the agent asks again what the user already answered -----------------------------

QUESTION = "Which namespace should I look at?"


def test_the_same_question_asked_again_after_the_user_answered_is_found_on_the_asking_turn():
    specs = conversation(["Are the pods healthy?", "The shop namespace.", "And the restarts?"],
                         [QUESTION, "checkout-1 is crash looping.", QUESTION])
    assert found(session(specs)) == [("FM-1.4", 2, [0, 2])]


def test_a_clarification_tool_asked_again_is_found_without_content():
    ask = ToolCall("ask_user", {"question": "namespace"}, "shop", kind="clarify", hashed=True)
    specs = with_tokens(conversation(["Are the pods healthy?", "Thanks. And the restarts?"], ["Fine.", "Three."]), [60, 110])
    specs[0].tools, specs[1].tools = [ask], [ask]
    assert found(session(specs, content=False)) == [("FM-1.4", 1, [0, 1])]


def test_a_different_question_is_quiet():
    specs = conversation(["Are the pods healthy?", "The shop namespace.", "And the restarts?"],
                         [QUESTION, "checkout-1 is crash looping.", "Since when should I count the restarts?"])
    assert found(session(specs)) == []


def test_a_question_on_a_turn_that_lost_the_history_is_left_to_that_finding():
    specs = conversation(["Are the pods healthy?", "The shop namespace.", "And the restarts?"],
                         [QUESTION, QUESTION, QUESTION], carried=False)
    assert [mode for mode, _, _ in found(session(specs))] == ["FM-1.4"]
