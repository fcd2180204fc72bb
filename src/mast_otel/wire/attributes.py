"""The wire vocabulary: every attribute name mast-otel writes or reads.

The instrumentation writes these names; the processor's normalizers read them. Names under
``gen_ai.*`` follow the OpenTelemetry GenAI semantic conventions (v1.41, "Development");
``mast.*`` are mast-otel's own hints (see docs/conventions.md). Deprecated GenAI names are listed so
the processor can accept them on ingest.
"""

from __future__ import annotations

# --- OpenTelemetry GenAI (current) -------------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_OUTPUT_TYPE = "gen_ai.output.type"
ERROR_TYPE = "error.type"

# --- OpenTelemetry GenAI (deprecated; accepted on ingest only) ---------------------------
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"
GEN_AI_PROMPT = "gen_ai.prompt"
GEN_AI_COMPLETION = "gen_ai.completion"

# gen_ai.operation.name values
OP_INVOKE_AGENT = "invoke_agent"
OP_CREATE_AGENT = "create_agent"
OP_CHAT = "chat"
OP_TEXT_COMPLETION = "text_completion"
OP_GENERATE_CONTENT = "generate_content"
OP_EMBEDDINGS = "embeddings"
OP_EXECUTE_TOOL = "execute_tool"

# Opt-in switch for message content (the GenAI instrumentations' shared variable).
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# --- mast.* hints (all optional) ---------------------------------------------------------
MAST_TASK_MAX_STEPS = "mast.task.max_steps"
MAST_TASK_AMBIGUOUS = "mast.task.ambiguous"
MAST_TASK_CONSTRAINTS = "mast.task.constraints"
MAST_AGENT_ROLE = "mast.agent.role"
MAST_AGENT_ALLOWED_TOOLS = "mast.agent.allowed_tools"
MAST_STEP_INDEX = "mast.step.index"
MAST_LLM_INPUT_MESSAGE_COUNT = "mast.llm.input_message_count"
MAST_LLM_REQUESTED_TOOLS = "mast.llm.requested_tools"
MAST_TOOL_KIND = "mast.tool.kind"
MAST_TOOL_ARGS_HASH = "mast.tool.args_hash"
MAST_TOOL_RESULT_HASH = "mast.tool.result_hash"
MAST_TOOL_VERIFICATION_PASSED = "mast.tool.verification.passed"
MAST_RUN_TERMINATION_REASON = "mast.run.termination_reason"
MAST_RUN_CLAIMED_SUCCESS = "mast.run.claimed_success"
MAST_RUN_OUTCOME = "mast.run.outcome"
MAST_RUN_SCORE = "mast.run.score"
MAST_RUN_FINAL_ANSWER = "mast.run.final_answer"

TOOL_KINDS = ("read", "write", "verify", "clarify", "handoff", "other")
TERMINATION_REASONS = ("final_answer", "max_steps", "timeout", "error", "cancelled", "handoff")
OUTCOMES = ("success", "failure", "unknown")

# --- What the processor attaches (its output vocabulary) ---------------------------------
MAST_FAILURE_MODES = "mast.failure_modes"
MAST_FAILURE_MODE_COUNT = "mast.failure_mode_count"
MAST_FATAL = "mast.fatal"
MAST_DIAGNOSIS_SOURCES = "mast.diagnosis.sources"
MAST_EVIDENCE_SPAN_IDS = "mast.evidence.span_ids"
MAST_ATTRIBUTION_AGENT = "mast.attribution.agent"
MAST_ATTRIBUTION_STEP_SPAN_ID = "mast.attribution.step_span_id"
MAST_ATTRIBUTION_SOURCE = "mast.attribution.source"
MAST_JUDGE_PROMPT_VERSION = "mast.judge.prompt_version"
EVENT_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"

# --- Guard interventions (agent-side guards write them, the processor counts them) --------
EVENT_GUARD_INTERVENTION = "mast.guard.intervention"
MAST_GUARD_NAME = "mast.guard.name"  # loop | budget | verification | clarify_or_read_only
MAST_GUARD_MODE = "mast.guard.mode"  # observe | enforce
MAST_GUARD_ACTION = "mast.guard.action"  # recorded | blocked | stopped | refused_finish
MAST_FAILURE_MODE = "mast.failure_mode"  # the mode the intervention is about
# The GenAI guardrail conventions' (Development) free-text reason for a guardrail's verdict.
GEN_AI_GUARDRAIL_VERDICT_REASON = "gen_ai.guardrail.verdict.reason"
GUARD_NAMES = ("loop", "budget", "verification", "clarify_or_read_only")
GUARD_MODES = ("observe", "enforce")
GUARD_ACTIONS = ("recorded", "blocked", "stopped", "refused_finish")
