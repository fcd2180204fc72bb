"""The stub model for conversations: it answers from what the request holds, like a model reading its input.

Nothing here knows which scenario is playing. Each request is read as a model would read it: the
last user message is the question; what came after it in the request (tool calls and their
results) is the work of the current turn; everything before it is the conversation so far, as
much of it as the framework sent. So:

- a question about what the user said earlier ("what name did I give you?") is answered from the
  earlier user messages in the input, and when they are not there the model says it does not know;
- a question about the cluster is answered from a ``get_pods`` result already in the input when
  the model ``reuses`` results and the user does not ask for fresh data ("again", "now"); otherwise
  the model calls ``get_pods`` and answers from its result once it comes back;
- a model that ``looks_up`` calls the tool for every cluster question, whatever its input holds.

Token usage is counted from the request's size, so a conversation that carries its history shows
input tokens that grow from turn to turn, and one that drops it shows them flat.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tests.frameworks.harness.stub_model import Action, Answer, Call, StubModel

_NAME_GIVEN = re.compile(r"\bmy name is (\w+)", re.IGNORECASE)
_ON_CALL_FOR = re.compile(r"\bon call for the (\w+) namespace", re.IGNORECASE)
_NAMESPACE = re.compile(r"\bin namespace (\w+)", re.IGNORECASE)
_FRESH = re.compile(r"\b(again|now|latest|currently|still)\b", re.IGNORECASE)
_FIELD = r"""["']{key}["']\s*:\s*["']?([\w.-]+)"""


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(text_of(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


@dataclass(frozen=True)
class PodsResult:
    """What a ``get_pods`` result said, read from the tool message's text (JSON or a Python repr)."""

    namespace: str
    pod: str
    status: str
    restarts: str

    @classmethod
    def read(cls, text: str) -> PodsResult | None:
        found = {key: re.search(_FIELD.format(key=key), text) for key in ("namespace", "name", "status", "restarts")}
        if not all(found.values()):
            return None
        return cls(*(m.group(1) for m in found.values()))  # type: ignore[union-attr]


@dataclass(frozen=True)
class Request:
    """One chat-completions request as the model sees it."""

    question: str  # the last user message
    earlier_user: tuple[str, ...]  # the user messages before it, as far as the request holds them
    earlier_pods: tuple[PodsResult, ...]  # get_pods results before the question
    this_turn_pods: tuple[PodsResult, ...]  # get_pods results after the question (this turn's own calls)
    offers_get_pods: bool

    @classmethod
    def read(cls, body: dict[str, Any]) -> Request:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        last = users[-1] if users else -1
        calls: dict[str, str] = {}  # tool call id -> tool name
        for message in messages:
            for call in message.get("tool_calls") or []:
                calls[call.get("id", "")] = (call.get("function") or {}).get("name", "")
        pods: list[tuple[int, PodsResult]] = []
        for i, message in enumerate(messages):
            if message.get("role") == "tool" and calls.get(message.get("tool_call_id", ""), "get_pods") == "get_pods":
                result = PodsResult.read(text_of(message.get("content")))
                if result is not None:
                    pods.append((i, result))
        tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        return cls(
            question=text_of(messages[last].get("content")) if users else "",
            earlier_user=tuple(text_of(messages[i].get("content")) for i in users[:-1]),
            earlier_pods=tuple(r for i, r in pods if i < last),
            this_turn_pods=tuple(r for i, r in pods if i > last),
            offers_get_pods="get_pods" in tools,
        )

    def recalled(self, pattern: re.Pattern[str]) -> str | None:
        """What an earlier user message said, by ``pattern``'s group (the latest one that matches)."""
        for text in reversed(self.earlier_user):
            found = pattern.search(text)
            if found:
                return found.group(1)
        return None

    def namespace(self) -> str | None:
        """The namespace the question is about: named in it, else in an earlier user message, else in a result."""
        named = _NAMESPACE.search(self.question)
        if named:
            return named.group(1)
        said = self.recalled(_ON_CALL_FOR) or self.recalled(_NAMESPACE)
        if said:
            return said
        results = self.this_turn_pods or self.earlier_pods
        return results[-1].namespace if results else None


def respond(request: Request, model: str) -> Action:
    """What the model does with this request (``model``: ``reuses`` or ``looks_up`` results already in its input)."""
    question = request.question
    lowered = question.lower()
    if _NAME_GIVEN.search(question):  # an introduction
        name = _NAME_GIVEN.search(question).group(1)  # type: ignore[union-attr]
        where = _ON_CALL_FOR.search(question)
        return Answer(f"Nice to meet you, {name}." + (f" Ask me anything about the {where.group(1)} namespace." if where else ""))
    if "did i" in lowered:  # a question about what the user said before
        if "namespace" in lowered:
            said = request.recalled(_ON_CALL_FOR)
            return Answer(f"You said you are on call for the {said} namespace." if said else
                          "I don't know which namespace you are on call for: you have not told me.")
        if re.search(r"\bname\b", lowered):
            name = request.recalled(_NAME_GIVEN)
            return Answer(f"You told me your name is {name}." if name else
                          "I don't know your name: you have not told me in this conversation.")
        return Answer("I don't have that in our conversation.")
    if not any(word in lowered for word in ("pod", "healthy", "restart", "status", "namespace")):
        return Answer("I can help with the cluster's pods: ask me about them.")
    if request.this_turn_pods:  # this turn's lookup came back: answer from it
        return Answer(_about_pods(lowered, request.this_turn_pods[-1], request.earlier_pods))
    fresh = bool(_FRESH.search(question))
    if request.earlier_pods and model == "reuses" and (not fresh or "before" in lowered):
        return Answer(_about_pods(lowered, request.earlier_pods[-1], request.earlier_pods))
    namespace = request.namespace()
    if namespace is None:
        return Answer("Which namespace are the pods in?")
    if not request.offers_get_pods:
        return Answer("I cannot look at the cluster from here.")
    return Call("get_pods", {"namespace": namespace})


def _about_pods(question: str, latest: PodsResult, earlier: tuple[PodsResult, ...]) -> str:
    if "before" in question and earlier:
        return f"Before that, {earlier[0].pod} was {earlier[0].status}."
    if "how many restart" in question:
        return f"{latest.pod} has {latest.restarts} restarts."
    if "name of" in question:
        return f"The checkout pod is {latest.pod}."
    if "which namespace" in question:
        return f"They are in namespace {latest.namespace}."
    healthy = latest.status == "Running"
    return (f"{latest.pod} in namespace {latest.namespace} is {latest.status} ({latest.restarts} restarts): "
            + ("it is healthy." if healthy else "it is not healthy."))


class SessionStubModel(StubModel):
    """``with SessionStubModel() as stub: stub.model = "reuses"; ... base_url=stub.base_url``."""

    model: str = "reuses"

    def next_action(self, body: dict[str, Any]) -> Action:
        return respond(Request.read(body), self.model)

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        prompt = max(1, len(json.dumps(body.get("messages") or [])) // 4)
        return {"prompt_tokens": prompt, "completion_tokens": 18, "total_tokens": prompt + 18}
