"""Chat messages in the GenAI semantic-convention shape (``gen_ai.input/output.messages``).

Input is the OpenAI chat format that litellm takes and returns (dicts or pydantic objects).
Each text part is trimmed to a share of the content cap, so the attribute stays valid JSON.
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel.instrumentation.content import cap_text
from mast_otel.instrumentation.settings import SETTINGS

_MIN_PART_CHARS = 256
_PAYLOAD_KEYS = ("content", "arguments", "response")


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for mappings, ``obj.name`` otherwise.

    Pydantic "extra" fields (litellm's ``usage`` and tool-call ``function``) are read from the
    model's extras directly: ``getattr`` finds them only through pydantic's slow ``__getattr__``.
    """
    if type(obj) is dict or isinstance(obj, dict):
        return obj.get(name, default)
    extra = getattr(obj, "__pydantic_extra__", None)
    if extra and name in extra:
        return extra[name]
    return getattr(obj, name, default)


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts = []
    for item in content if isinstance(content, list) else [content]:
        kind = field(item, "type", "text")
        if kind == "text":
            parts.append({"type": "text", "content": field(item, "text", "") or ""})
        else:  # images, audio, files: the kind only, never the payload
            parts.append({"type": str(kind)})
    return parts


def _tool_call_parts(tool_calls: Any) -> list[dict[str, Any]]:
    parts = []
    for call in tool_calls or ():
        function = field(call, "function")
        parts.append({
            "type": "tool_call",
            "id": field(call, "id"),
            "name": field(function, "name"),
            "arguments": _json_or_text(field(function, "arguments")),
        })
    return parts


def _message(message: Any) -> dict[str, Any]:
    role = field(message, "role") or "user"
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": field(message, "tool_call_id"),
                  "response": field(message, "content")}]
    else:
        parts = _content_parts(field(message, "content")) + _tool_call_parts(field(message, "tool_calls"))
    return {"role": role, "parts": parts}


def requested_tool_names(choices: Any) -> list[str]:
    """Names of the tools a chat response's choices ask to call, in order."""
    names = []
    for choice in choices:
        for call in field(field(choice, "message"), "tool_calls") or ():
            name = field(field(call, "function"), "name")
            if name:
                names.append(str(name))
    return names


def input_messages(messages: Any) -> list[dict[str, Any]]:
    return [_message(m) for m in messages or ()]


def output_messages(choices: Any) -> list[dict[str, Any]]:
    out = []
    for choice in choices:
        message = _message(field(choice, "message") or {})
        message["role"] = "assistant"
        message["finish_reason"] = field(choice, "finish_reason") or "stop"
        out.append(message)
    return out


def messages_attribute(messages: list[dict[str, Any]]) -> str:
    """JSON of ``messages`` with every text, argument and tool result trimmed to a share of the cap."""
    slots = [(part, key) for m in messages for part in m["parts"] for key in _PAYLOAD_KEYS if part.get(key) is not None]
    share = max(_MIN_PART_CHARS, SETTINGS.max_content_chars // max(1, len(slots)))
    for part, key in slots:
        value = part[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > share:  # structured values too large to keep become trimmed text
            part[key] = cap_text(text, share)
    return json.dumps(messages, ensure_ascii=False, default=str)


def text_messages_attribute(role: str, text: str) -> str:
    """One plain text message as a messages attribute."""
    return messages_attribute([{"role": role, "parts": [{"type": "text", "content": text}]}])
