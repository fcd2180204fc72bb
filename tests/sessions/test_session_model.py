"""The session stub model answers from what each request holds, over real HTTP, whatever scenario is playing."""

from __future__ import annotations

import json
import urllib.request

from tests.sessions.harness.scenarios import GREETING, NAME, STATUS
from tests.sessions.harness.session_model import SessionStubModel

SYSTEM = {"role": "system", "content": "You are an SRE assistant."}
TOOLS = [{"type": "function", "function": {"name": "get_pods", "parameters": {"type": "object"}}}]
PODS = json.dumps({"namespace": "shop", "pods": [{"name": "checkout-7d9f", "status": "CrashLoopBackOff", "restarts": 14}]})


def _ask(stub: SessionStubModel, messages: list[dict]) -> dict:
    body = json.dumps({"model": "gpt-4o-mini", "messages": [SYSTEM, *messages], "tools": TOOLS}).encode()
    request = urllib.request.Request(f"{stub.base_url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _text(reply: dict) -> str:
    return reply["choices"][0]["message"]["content"] or ""


def _lookup(reply: dict) -> list[tuple[str, dict]]:
    calls = reply["choices"][0]["message"].get("tool_calls") or []
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


def _turn(question: str, answer: str) -> list[dict]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def _looked_up(question: str) -> list[dict]:
    """A turn in which the model called get_pods and answered from its result."""
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_pods", "arguments": '{"namespace": "shop"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": PODS},
            {"role": "assistant", "content": "checkout-7d9f is CrashLoopBackOff."}]


def test_what_the_user_said_earlier_is_answered_only_when_the_request_holds_it():
    with SessionStubModel() as stub:
        remembered = _ask(stub, [*_turn(GREETING, "Nice to meet you."), {"role": "user", "content": NAME}])
        forgotten = _ask(stub, [{"role": "user", "content": NAME}])
    assert "Dana" in _text(remembered)
    assert "don't know" in _text(forgotten) and "Dana" not in _text(forgotten)


def test_input_tokens_count_what_the_request_holds():
    with SessionStubModel() as stub:
        short = _ask(stub, [{"role": "user", "content": NAME}])["usage"]["prompt_tokens"]
        long = _ask(stub, [*_turn(GREETING, "Nice to meet you."), {"role": "user", "content": NAME}])["usage"]["prompt_tokens"]
    assert long > short > 0


def test_a_cluster_question_is_looked_up_unless_the_result_is_already_there_and_nothing_asks_for_fresh_data():
    with SessionStubModel() as stub:
        first = _ask(stub, [{"role": "user", "content": STATUS}])
        again = [*_looked_up(STATUS), {"role": "user", "content": "How many restarts do those pods have?"}]
        reused = _ask(stub, again)
        fresh = _ask(stub, [*_looked_up(STATUS), {"role": "user", "content": "Check again, are they healthy now?"}])
        stub.model = "looks_up"
        relooked = _ask(stub, again)
    assert _lookup(first) == [("get_pods", {"namespace": "shop"})]
    assert not _lookup(reused) and "14 restarts" in _text(reused)
    assert _lookup(fresh) == [("get_pods", {"namespace": "shop"})]
    assert _lookup(relooked) == [("get_pods", {"namespace": "shop"})]


def test_a_result_that_came_back_this_turn_is_answered_from():
    with SessionStubModel() as stub:
        reply = _ask(stub, _looked_up(STATUS)[:3])
    assert not _lookup(reply) and "CrashLoopBackOff" in _text(reply) and "not healthy" in _text(reply)
