"""Vercel AI SDK: its own ``ai.*`` spans (AI SDK 6 and earlier, AI SDK 7's ``LegacyOpenTelemetry``).

Every span names what it is in ``ai.operationId``: ``ai.generateText`` / ``ai.streamText`` is
one agent run (the tool loop), ``ai.generateText.doGenerate`` / ``ai.streamText.doStream`` one
model call inside it, ``ai.toolCall`` one tool call. The run's name is the user's
``functionId``. Messages are the SDK's own: ``content`` a string or a list of parts
(``text``, ``tool-call`` with ``input``, ``tool-result`` with ``output``). AI SDK 7's default
integration writes GenAI spans instead (``invoke_agent``, ``chat``, ``execute_tool``), with
each loop turn in an ``agent_step`` span, and is read as GenAI.
"""

from __future__ import annotations

OPERATION = "ai.operationId"
FUNCTION_ID = "ai.telemetry.functionId"
# Operation ids by what they stand for; the object and embedding calls are no agent steps.
RUNS = frozenset({"ai.generateText", "ai.streamText"})
MODEL_CALLS = frozenset({"ai.generateText.doGenerate", "ai.streamText.doStream"})
TOOL_CALL = "ai.toolCall"


from mast_otel.processors.frameworks.aisdk import normalize  # noqa: E402  (reads the names above)
from mast_otel.processors.frameworks.table import Dialect, Framework  # noqa: E402

FRAMEWORK = Framework(
    name="aisdk",
    spellings=("AI SDK", "ai-sdk", "ai_sdk", "Vercel"),
    dialect=Dialect(OPERATION, normalize.fill),
    tool_call_finishes=frozenset({"tool-calls"}),  # its finish reason for a turn that asked for tools
    # the app's experimental_telemetry.metadata: the session id where the app puts one there
    session_id_keys=tuple(f"ai.telemetry.metadata.{k}" for k in ("sessionId", "session_id", "conversationId", "threadId")),
)
