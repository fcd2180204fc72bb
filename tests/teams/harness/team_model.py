"""The stub model for team runs: each agent's calls are answered from that agent's own script.

Who is asking is read from the ``[role: NAME]`` marker in the request's system prompt (the
agent's own instructions; frameworks without a system role send it as the first message). The
scripts are in delegation form (see ``scenarios``); ``Delegate`` actions become the framework's
own delegation tool call through the recorder's ``delegate`` function, and with
``topology="transfer"`` a worker's report is handed back by a transfer to the coordinator (the
report rides along as the message text) instead of being its final answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tests.frameworks.harness.stub_model import Action as ModelAction
from tests.frameworks.harness.stub_model import Answer, Call, Script, StubModel

from .scenarios import COORDINATOR, Delegate, TeamScenario

_MARKER = re.compile(r"\[role: (\w+)\]")

# (from agent, to agent, message) -> the framework's delegation or transfer tool call
Delegation = Callable[[str, str, str], Call]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return ""


def asking_agent(body: dict[str, Any]) -> str | None:
    """The agent a chat-completions request comes from: the marker in its system prompt, else in its first message."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = [m for m in messages if m.get("role") in ("system", "developer")]
    for message in system or messages[:1]:
        found = _MARKER.search(_text(message.get("content")))
        if found:
            return found.group(1)
    return None


@dataclass
class TeamStubModel(StubModel):
    """``with TeamStubModel(delegate=..., topology=...) as stub: stub.load_team(scenario)``."""

    delegate: Delegation | None = None
    topology: str = "delegation"  # "delegation": a worker's answer returns to its caller; "transfer": it hands back
    asked_by: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._team: dict[str, Script] = {}

    def load_team(self, scenario: TeamScenario) -> None:
        with self._lock:
            self._team = {agent: Script(list(actions)) for agent, actions in scenario.scripts.items()}
            self.requests.clear()
            self.asked_by.clear()

    def next_action(self, body: dict[str, Any]) -> ModelAction:
        agent = asking_agent(body)
        self.asked_by.append(agent)
        script = self._team.get(agent or "")
        if script is None:
            return Answer("Done.")
        action = script.next()
        if isinstance(action, Delegate):
            return self._delegation(agent or "", action.target, action.message, say=None)
        if isinstance(action, Answer) and self.topology == "transfer" and agent != COORDINATOR:
            return self._delegation(agent or "", COORDINATOR, action.text, say=action.text)
        return action

    def _delegation(self, source: str, target: str, message: str, say: str | None) -> Call:
        if self.delegate is None:
            raise RuntimeError("TeamStubModel needs the recorder's delegate function")
        call = self.delegate(source, target, message)
        return Call(call.tool, call.arguments, say=say if say is not None else call.say)
