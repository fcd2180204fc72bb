"""Framework-neutral session scenarios: the user's turns, how the app calls the framework, what should be found.

A session is one conversation of a few user turns; the app calls the framework once per turn, so
every turn is a run (a trace) of its own, tied to the others by the session id. What the model
answers is not scripted here: the stub model (``session_model``) reads each request and answers
from what is in it, so a conversation whose history the framework drops gets a model that does
not know what the user said before, the way a real model would not.

A scenario says:
- the user turns;
- ``history``: whether the app gives the framework the conversation (its thread, session or
  message history) or calls it afresh every turn with only the new message;
- ``model``: how the model treats results already in its input (``reuses``: a question the
  earlier results answer is answered from them; ``looks_up``: it calls the tool again anyway);
- ``changes``: cluster changes applied before given turns (the data a re-run reads has moved on);
- the expected session-level modes and the turns that show them (0-based turn indices).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from tests.frameworks.harness.cluster import Cluster

INSTRUCTIONS = ("You are an SRE assistant for the shop team's Kubernetes cluster. Use the tools to look at the "
                "cluster; answer briefly.")
USER = "Dana"
GREETING = f"Hi, I'm on call for the shop namespace today. My name is {USER}."
STATUS = "Are the checkout pods in namespace shop healthy?"
NAME = "Quick check before I write the handover: what name did I give you?"


@dataclass(frozen=True)
class Expected:
    """One session-level mode the scenario must show, and where."""

    mode: str
    turns: tuple[int, ...]  # every turn that shows it (0-based)
    why: str

    @property
    def turn(self) -> int:
        """The first turn that shows it."""
        return self.turns[0]


@dataclass(frozen=True)
class SessionScenario:
    name: str
    description: str
    user_turns: tuple[str, ...]
    history: bool = True  # the app hands the framework the conversation every turn
    model: str = "reuses"  # "reuses" | "looks_up": what the model does with results already in its input
    expected: tuple[Expected, ...] = ()
    near_miss_of: str | None = None
    changes: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))  # turn -> Cluster change

    def new_cluster(self) -> Cluster:
        return Cluster()

    def before_turn(self, turn: int, cluster: Cluster) -> None:
        """Apply the scenario's change to the cluster before ``turn`` (the world moving between turns)."""
        change = self.changes.get(turn)
        if change == "recovered":
            cluster.healthy = True
        elif change is not None:
            raise ValueError(f"unknown cluster change {change!r}")

    def label(self) -> dict:
        """The scenario's entry in ``labels.json``. Its session-level modes are under ``session_expected``,
        not ``expected``: ``mast-otel eval`` scores each turn as a run of its own, and no turn alone shows them."""
        return {"description": self.description, "turns": len(self.user_turns),
                "history_carried": self.history, "model": self.model, "near_miss_of": self.near_miss_of,
                "session_expected": [{"mode": e.mode, "turn": e.turn, "turns": list(e.turns), "why": e.why}
                                     for e in self.expected]}


SCENARIOS: tuple[SessionScenario, ...] = (
    SessionScenario(
        "history_kept", "the framework carries the conversation: turn 3 asks what turn 1 said and the answer uses it",
        (GREETING, STATUS, NAME, "Thanks. Which namespace did I say I'm on call for?")),
    SessionScenario(
        "history_dropped", "the same conversation, but the app calls the framework without its thread or history: "
        "every request holds only the system prompt and the new message, and the agent says it does not know "
        "what the user gave earlier",
        (GREETING, STATUS, NAME, "Thanks. Which namespace did I say I'm on call for?"), history=False,
        expected=(Expected("FM-1.4", (1, 2, 3), "from turn 2 on the model input holds none of the earlier turns; "
                           "turns 3 and 4 answer that they do not know what turn 1 gave"),)),
    SessionScenario(
        "lookup_repeated", "the history is carried, but every turn the agent calls get_pods(namespace=shop) again "
        "and gets the same result, although the answer is already in its input and nothing changed",
        (STATUS, "How many restarts do those pods have?", "What is the name of the checkout pod?",
         "And which namespace are they in?"), model="looks_up",
        expected=(Expected("FM-1.3", (1, 2, 3), "turns 2-4 repeat turn 1's get_pods call with the same arguments "
                           "and get the same result"),)),
    SessionScenario(
        "user_repeats", "near miss: the user asks to check again on purpose, and the cluster has changed in "
        "between, so the repeated get_pods call reads a different result",
        (STATUS, "I just restarted it from the console. Check again, are they healthy now?",
         "Thanks. What was the status before my restart?"),
        near_miss_of="FM-1.3", changes=MappingProxyType({1: "recovered"})),
)

BY_NAME = {s.name: s for s in SCENARIOS}
