"""The litellm hook: a ``CustomLogger`` that turns litellm calls into ``chat {model}`` spans.

Imported only by :func:`litellm_support.instrument_litellm`, because importing litellm is slow.
litellm calls ``log_pre_api_call`` in the caller's context just before the request goes out
(that is where the call is begun) and reports the outcome later, for sync calls from a
background thread and for async calls from its logging worker.
"""

from __future__ import annotations

import datetime
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from mast_otel.wire import attributes as A
from mast_otel.instrumentation.errors import log_once
from mast_otel.instrumentation.messages import (
    field,
    input_messages,
    messages_attribute,
    output_messages,
    requested_tool_names,
)
from mast_otel.instrumentation.model_calls import begin_model_call, record_model_call, take_model_call, was_recorded
from mast_otel.instrumentation.settings import capture_enabled

# litellm's provider names -> gen_ai.provider.name well-known values (others pass through).
PROVIDER_NAMES = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
}
# litellm call types that are chat-style model calls (and so steps of a run).
_OPERATIONS = {
    "completion": A.OP_CHAT,
    "acompletion": A.OP_CHAT,
    "text_completion": A.OP_TEXT_COMPLETION,
    "atext_completion": A.OP_TEXT_COMPLETION,
}
_REQUEST_PARAMS = {
    "temperature": A.GEN_AI_REQUEST_TEMPERATURE,
    "max_tokens": A.GEN_AI_REQUEST_MAX_TOKENS,
    "max_completion_tokens": A.GEN_AI_REQUEST_MAX_TOKENS,
}


def _ns(moment: Any) -> int | None:
    if isinstance(moment, datetime.datetime):
        return int(moment.timestamp() * 1_000_000) * 1000
    if isinstance(moment, (int, float)):  # seconds since the epoch
        return int(moment * 1e9)
    return None


def request_attributes(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What is known before the call: provider, parameters, message count (and content)."""
    provider = kwargs.get("custom_llm_provider") or field(kwargs.get("litellm_params"), "custom_llm_provider")
    attrs: dict[str, Any] = {}
    if provider:
        attrs[A.GEN_AI_PROVIDER_NAME] = PROVIDER_NAMES.get(provider, provider)
    params = kwargs.get("optional_params") or {}
    for key, attribute in _REQUEST_PARAMS.items():
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[attribute] = value
    messages = kwargs.get("messages")
    if isinstance(messages, list):
        attrs[A.MAST_LLM_INPUT_MESSAGE_COUNT] = len(messages)
        if capture_enabled():
            attrs[A.GEN_AI_INPUT_MESSAGES] = messages_attribute(input_messages(messages))
    return attrs


def response_attributes(response: Any) -> dict[str, Any]:
    """What the response says: model, id, finish reasons, usage, requested tools (and content)."""
    attrs: dict[str, Any] = {}
    for attribute, value in ((A.GEN_AI_RESPONSE_MODEL, field(response, "model")),
                             (A.GEN_AI_RESPONSE_ID, field(response, "id"))):
        if isinstance(value, str) and value:
            attrs[attribute] = value
    choices = field(response, "choices") or ()
    reasons = [str(r) for r in (field(c, "finish_reason") for c in choices) if r]
    if reasons:
        attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
    usage = field(response, "usage")
    if usage is not None:
        for attribute, key in ((A.GEN_AI_USAGE_INPUT_TOKENS, "prompt_tokens"),
                               (A.GEN_AI_USAGE_OUTPUT_TOKENS, "completion_tokens")):
            value = field(usage, key)
            if isinstance(value, int):
                attrs[attribute] = value
    tools = requested_tool_names(choices)
    if tools:
        attrs[A.MAST_LLM_REQUESTED_TOOLS] = tools
    if capture_enabled():
        attrs[A.GEN_AI_OUTPUT_MESSAGES] = messages_attribute(output_messages(choices))
    return attrs


def begin(kwargs: dict[str, Any]) -> None:
    """A litellm call is about to be sent: begin its model call in the current run."""
    operation = _OPERATIONS.get(str(kwargs.get("call_type") or "completion"))
    call_id = kwargs.get("litellm_call_id")
    if operation is None or not call_id:
        return
    model = str(kwargs.get("model") or "unknown")
    begin_model_call(call_id, model, request_attributes(kwargs), operation=operation,
                     start_ns=_ns(kwargs.get("start_time")))


def finish(kwargs: dict[str, Any], response: Any, start_time: Any, end_time: Any,
           error: BaseException | None = None) -> None:
    """litellm reported a call's outcome: write its span."""
    call_id = kwargs.get("litellm_call_id")
    if not call_id:
        return
    call = take_model_call(call_id)
    if call is None and error is not None and not was_recorded(call_id):
        begin(kwargs)  # failed before the request went out: nothing was begun, but the step happened
        call = take_model_call(call_id)
    if call is None:
        return
    record_model_call(
        call,
        start_ns=_ns(start_time),
        end_ns=_ns(end_time) or call.start_ns,
        response_attributes=response_attributes(response) if error is None and response is not None else None,
        error=error,
    )


def _failure(kwargs: dict[str, Any]) -> BaseException:
    exc = kwargs.get("exception")
    return exc if isinstance(exc, BaseException) else RuntimeError(str(exc or "model call failed"))


class MastOtelLiteLLMCallback(CustomLogger):
    """litellm callback; every hook swallows (and logs once) its own errors."""

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        try:
            begin(kwargs)
        except Exception as exc:  # noqa: BLE001 - never break the agent
            log_once("beginning a litellm model-call span", exc)

    def log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        try:
            finish(kwargs, response_obj, start_time, end_time)
        except Exception as exc:  # noqa: BLE001
            log_once("recording a litellm model-call span", exc)

    def log_failure_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        try:
            finish(kwargs, response_obj, start_time, end_time, _failure(kwargs))
        except Exception as exc:  # noqa: BLE001
            log_once("recording a failed litellm model-call span", exc)

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self.log_success_event(kwargs, response_obj, start_time, end_time)

    async def async_log_failure_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self.log_failure_event(kwargs, response_obj, start_time, end_time)
