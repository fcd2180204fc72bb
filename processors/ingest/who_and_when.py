"""Who&When failure-attribution logs (one JSON object per run) turned into runs.

The format (Who&When, "Which Agent Causes Task Failures and When?", ICML 2025), in its two
published shapes::

    {"question": "...", "history": [{"content": "...", "role": "assistant|user", "name": "Agent"}, ...],
     "mistake_agent": "Agent", "mistake_step": "3", "mistake_reason": "...", "is_correct": false, ...}
    {"question": "...", "history": [{"content": "...", "role": "Orchestrator (-> WebSurfer)"}, ...],
     "mistake_agent": "Orchestrator", "mistake_step": "3", ...}

Each entry of ``history`` is one step, in order (``mistake_step`` indexes it). The first shape
(AG2 group chats) names the speaker in ``name``; ``role`` is the chat API's there, and AG2 sends
other agents' turns as ``user``, so an entry is human only when it names no agent, or names a
human. The second (Magentic-One) has no ``name``: ``role`` is the speaker, with an annotation
in brackets that is not part of the agent's name (``Orchestrator (thought)`` is the
Orchestrator, as ``mistake_agent`` names it), and ``human`` is the user. An annotation
``(-> Agent)`` is the speaker handing Agent its next instruction: that entry becomes a
``handoff`` tool call whose arguments name the target, answered at once, so no later tool
result pairs with it. An entry whose content is a code executor's report (``exitcode: N ...``)
is the result of running the code in the entry before it: that entry becomes the tool call
(kept at its own step index) and the result is the calling agent's, so a failed execution is
the step and agent of the code that failed. The run becomes a step-list run (step ``i`` keeps
step index ``i``) labelled ``{"attribution": {"agent", "step"}, "outcome": "failure"}`` when
the labels are present.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mast_otel.processors.ingest.transcripts import HUMAN_NAMES, StepListError, run_from_record
from mast_otel.processors.model import Run

_EXECUTOR_REPORT = "exitcode:"
HANDOFF_TOOL = "handoff"
_ANNOTATED = re.compile(r"^(?P<agent>[^()]*?)\s*\((?P<note>[^()]*)\)$")
_HANDOFF = re.compile(r"^->\s*(?P<target>\S.*?)$")


def is_who_and_when(obj: Any) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("history"), list) and "steps" not in obj
            and ("mistake_agent" in obj or "question" in obj))


def _role(entry: dict) -> tuple[str, str]:
    """``role`` split into speaker and annotation: ``Orchestrator (-> WebSurfer)`` -> ``Orchestrator``, ``-> WebSurfer``."""
    role = str(entry.get("role") or "").strip()
    annotated = _ANNOTATED.match(role)
    return (annotated["agent"], annotated["note"].strip()) if annotated else (role, "")


def speaker(entry: dict) -> str | None:
    """The agent that wrote an entry, by its bare name; ``None`` for a human."""
    name = entry.get("name")
    if name:
        return None if str(name).lower() in HUMAN_NAMES else str(name)
    agent = _role(entry)[0]
    return None if agent.lower() in HUMAN_NAMES else agent or "agent"


def handoff_target(entry: dict) -> str | None:
    """The agent an entry hands its instruction to (``role`` annotated ``(-> Agent)``), if any."""
    if entry.get("name"):
        return None  # the role is the chat API's, not an annotated speaker
    handoff = _HANDOFF.match(_role(entry)[1])
    return handoff["target"] if handoff else None


def steplist_record(obj: dict) -> dict:
    """The run as a generic step-list record (see ``steplist``)."""
    steps: list[dict] = []
    for i, entry in enumerate(obj["history"]):
        if not isinstance(entry, dict):
            raise StepListError(f"history entry {i}: expected an object")
        content = entry.get("content")
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        agent = speaker(entry)
        step = {"agent": agent or "user", "content": text, "metadata": {"step_index": i},
                "kind": "tool_result" if text.lstrip().startswith(_EXECUTOR_REPORT) else "message"}
        target = handoff_target(entry) if agent is not None else None
        if step["kind"] == "tool_result":
            step["tool"] = "code_execution"
            before = steps[-1] if steps else None
            if before is not None and before["kind"] == "message" and before.get("role") != "user":
                # the executor ran the code the previous agent wrote: that message was the call
                before.update(kind="tool_call", tool="code_execution", arguments=before["content"])
                step["agent"] = before["agent"]
        elif target is not None:
            call_id = f"handoff:{i}"
            step.update(kind="tool_call", tool=HANDOFF_TOOL, tool_kind="handoff", tool_call_id=call_id,
                        arguments=json.dumps({"to": target, "instruction": text}))
            steps.append(step)
            step = {"agent": step["agent"], "kind": "tool_result", "tool_call_id": call_id, "content": target,
                    "metadata": {"step_index": i}}
        if agent is None:
            step["role"] = "user"
        steps.append(step)
    meta: dict[str, Any] = {"task": obj.get("question") if isinstance(obj.get("question"), str) else None}
    if obj.get("question_ID") is not None:
        meta["trace_id"] = str(obj["question_ID"])
    if "is_correct" in obj:
        meta["success"] = bool(obj["is_correct"])
    elif "mistake_agent" in obj:
        meta["success"] = False
    return {"steps": steps, "metadata": meta}


def attribution_label(obj: dict) -> dict | None:
    if "mistake_agent" not in obj:
        return None
    try:
        step = int(obj["mistake_step"])
    except (KeyError, TypeError, ValueError):
        raise StepListError(f"mistake_step must be a step number, got {obj.get('mistake_step')!r}") from None
    return {"agent": str(obj["mistake_agent"]), "step": step}


def run_from_who_and_when(obj: dict, n: int = 0) -> Run:
    run = run_from_record(steplist_record(obj), n)
    label = attribution_label(obj)
    if label is not None:
        run.labels = {"attribution": label, "outcome": "failure", "group": "who-and-when",
                      "order": str(obj.get("question_ID", n)),
                      "history": [speaker(e) if isinstance(e, dict) else None for e in obj["history"]]}
    return run
