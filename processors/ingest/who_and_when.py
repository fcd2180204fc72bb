"""Who&When failure-attribution logs (one JSON object per run) turned into runs.

The format (Who&When, "Which Agent Causes Task Failures and When?", ICML 2025)::

    {"question": "...", "history": [{"content": "...", "role": "assistant|user", "name": "Agent"}, ...],
     "mistake_agent": "Agent", "mistake_step": "3", "mistake_reason": "...", "is_correct": false, ...}

Each entry of ``history`` is one step, in order (``mistake_step`` indexes it). ``role`` is the
chat API's, not the speaker's kind: AG2 group chats send other agents' turns as ``user``, so
an entry is human only when it names no agent, or names a human. An entry whose content is a
code executor's report (``exitcode: N ...``) is the result of running the code in the entry
before it: that entry becomes the tool call (kept at its own step index) and the result is
the calling agent's, so a failed execution is the step and agent of the code that failed. The run becomes
a step-list run (step ``i`` keeps step index ``i``) labelled ``{"attribution": {"agent",
"step"}, "outcome": "failure"}`` when the labels are present.
"""

from __future__ import annotations

from typing import Any

from mast_otel.processors.ingest.transcripts import HUMAN_NAMES, StepListError, run_from_record
from mast_otel.processors.model import Run

_EXECUTOR_REPORT = "exitcode:"


def is_who_and_when(obj: Any) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("history"), list) and "steps" not in obj
            and ("mistake_agent" in obj or "question" in obj))


def is_human(entry: dict) -> bool:
    name = entry.get("name")
    return (not name and str(entry.get("role", "")).lower() == "user") or str(name or "").lower() in HUMAN_NAMES


def steplist_record(obj: dict) -> dict:
    """The run as a generic step-list record (see ``steplist``)."""
    steps = []
    for i, entry in enumerate(obj["history"]):
        if not isinstance(entry, dict):
            raise StepListError(f"history entry {i}: expected an object")
        content = entry.get("content")
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        human = is_human(entry)
        step = {"agent": "user" if human else str(entry.get("name") or entry.get("role") or "agent"),
                "content": text, "metadata": {"step_index": i},
                "kind": "tool_result" if text.lstrip().startswith(_EXECUTOR_REPORT) else "message"}
        if step["kind"] == "tool_result":
            step["tool"] = "code_execution"
            before = steps[-1] if steps else None
            if before is not None and before["kind"] == "message" and before.get("role") != "user":
                # the executor ran the code the previous agent wrote: that message was the call
                before.update(kind="tool_call", tool="code_execution", arguments=before["content"])
                step["agent"] = before["agent"]
        if human:
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
        step = int(obj.get("mistake_step"))
    except (TypeError, ValueError):
        raise StepListError(f"mistake_step must be a step number, got {obj.get('mistake_step')!r}") from None
    return {"agent": str(obj["mistake_agent"]), "step": step}


def run_from_who_and_when(obj: dict, n: int = 0) -> Run:
    run = run_from_record(steplist_record(obj), n)
    label = attribution_label(obj)
    if label is not None:
        run.labels = {"attribution": label, "outcome": "failure", "group": "who-and-when",
                      "order": str(obj.get("question_ID", n)), "history": [_speaker(e) for e in obj["history"]]}
    return run


def _speaker(entry: Any) -> str | None:
    """Who wrote a history entry (``None`` for a human), for the attribution baselines."""
    if not isinstance(entry, dict) or is_human(entry):
        return None
    return str(entry.get("name") or entry.get("role") or "agent")
