"""Mastra (through ``@mastra/otel-exporter``): GenAI spans with the run's words in ``mastra.*``.

The ``invoke_agent`` span keeps the request in ``mastra.agent_run.input`` and the answer in
``mastra.agent_run.output`` (a JSON object whose ``text`` is the answer; empty when a step limit
stopped the run), not in GenAI messages. Between the agent and its model calls sit
``model_generation``, ``agent_step`` and ``model_chunk`` spans, which are no steps. Every span
has status OK, even a tool that threw; finish reasons arrive as a JSON string.
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel.processors.frameworks.table import Framework

AGENT_INPUT = "mastra.agent_run.input"
AGENT_OUTPUT = "mastra.agent_run.output"


def answer_of(output: Any) -> str | None:
    """The answer text of an ``agent_run.output`` value (its ``text``), ``None`` when it has none."""
    if not isinstance(output, str):
        return None
    try:
        parsed = json.loads(output)
    except ValueError:
        return output or None
    text = parsed.get("text") if isinstance(parsed, dict) else None
    return text if isinstance(text, str) and text else None


FRAMEWORK = Framework(
    name="mastra",
    spellings=("Mastra",),
    agent_task_keys=(AGENT_INPUT,),
    agent_answers=((AGENT_OUTPUT, answer_of),),
)
