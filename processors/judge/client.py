"""The one call out to the judge model, through litellm, so any litellm model string works.

Structured output is requested the strongest way the model supports: a JSON schema
(``response_format``) where litellm knows the model accepts one, else JSON mode with the
schema spelled out in the prompt, or a forced tool call (``output_mode: tool``). Rate limits,
5xx answers, connection failures and timeouts are retried with exponential backoff and
jitter; an answer that fails validation, cites unknown steps or was cut off is retried once
with the problem stated, then reported as ``invalid_output``. The API key is passed to
litellm only; it never appears in logs, errors or metrics.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Collection

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge import prompt
from mast_otel.processors.judge.schema import SCHEMA_NAME, Assessment, InvalidJudgeOutput, json_schema, parse_assessment

log = logging.getLogger(__name__)

TOOL_NAME = "report_failure_modes"
MAX_RETRY_AFTER_SECONDS = 30.0

# Request outcomes, the ``status`` label of mast_judge_requests_total.
OK = "ok"
CACHED = "cached"
INVALID_OUTPUT = "invalid_output"
PROVIDER_ERROR = "provider_error"
RATE_LIMITED = "rate_limited"
TIMEOUT = "timeout"
OVER_BUDGET = "over_budget"
CIRCUIT_OPEN = "circuit_open"
QUEUE_FULL = "queue_full"
NO_CONTENT = "no_content"
PROVIDER_FAILURES = frozenset({PROVIDER_ERROR, RATE_LIMITED, TIMEOUT})


class JudgeError(Exception):
    """A run the judge could not assess; ``status`` says why (never a diagnosis)."""

    def __init__(self, status: str, message: str, *, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost_usd = cost_usd

    def __repr__(self) -> str:
        return f"JudgeError({self.status!r}, {self.message!r})"


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, response: Any, litellm: Any) -> None:
        usage = getattr(response, "usage", None)
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        try:
            self.cost_usd += float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # models missing from litellm's cost table cost what the user says: 0
            pass


@dataclass(slots=True)
class CallResult:
    assessment: Assessment
    usage: Usage
    attempts: int  # HTTP requests made, retries included


def _litellm() -> Any:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout per provider error
    return litellm


class JudgeClient:
    """Sends one rendered run to the judge model and returns a validated assessment."""

    def __init__(self, config: JudgeConfig, *, sleep: Callable[[float], None] = time.sleep, scrub: Callable[[str], str] = str):
        if not config.model:
            raise ValueError("judge.model is not set: name any litellm model string, e.g. openai/gpt-4o-mini")
        self.config = config
        self.model = config.model
        self._sleep = sleep
        self._scrub = scrub  # applied to provider error text before it is kept anywhere
        self._litellm = _litellm()
        self.output_mode = self._resolve_mode()

    def _resolve_mode(self) -> str:
        mode = self.config.output_mode
        if mode != "auto":
            return mode
        try:
            supported = self._litellm.supports_response_schema(model=self.model)
        except Exception:
            supported = False
        return "json_schema" if supported else "json"

    def missing_credentials(self) -> list[str]:
        """Environment variables litellm says this model needs and that are not set (empty when
        ``judge.api_key`` is configured, or when litellm cannot tell)."""
        if self.config.api_key is not None and self.config.api_key.get_secret_value():
            return []
        try:
            found = self._litellm.validate_environment(model=self.model, api_base=self.config.api_base)
        except Exception:
            return []
        return [] if found.get("keys_in_environment") else [str(k) for k in found.get("missing_keys") or []]

    @property
    def schema_in_prompt(self) -> bool:
        return self.output_mode == "json"

    def estimate_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        try:
            cost_in, cost_out = self._litellm.cost_per_token(
                model=self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )
            return float(cost_in + cost_out)
        except Exception:
            return 0.0

    def _request_kwargs(self) -> dict[str, Any]:
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": cfg.max_output_tokens,
            "timeout": cfg.timeout_seconds,
            "num_retries": 0,  # retries are ours: counted, backed off, circuit-broken
            "max_retries": 0,
            "drop_params": True,
        }
        if cfg.api_base:
            kwargs["api_base"] = cfg.api_base
        if cfg.api_key is not None:
            kwargs["api_key"] = cfg.api_key.get_secret_value()
        if self.output_mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "schema": json_schema(), "strict": True},
            }
        elif self.output_mode == "json":
            kwargs["response_format"] = {"type": "json_object"}
        else:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": TOOL_NAME,
                        "description": "Report the assessment of all 14 failure modes for the run.",
                        "parameters": json_schema(),
                    },
                }
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
            # litellm 1.106 imports its MCP gateway (and the optional ``mcp`` package) for any
            # request with tools unless told to skip it; our one function tool never needs it.
            kwargs["_skip_mcp_handler"] = True
        kwargs.update(cfg.extra_params)
        return kwargs

    def assess(self, run_text: str, step_ids: Collection[str]) -> CallResult:
        """Ask for all 14 modes; one corrective retry on unusable output. Raises :class:`JudgeError`."""
        messages = prompt.messages(run_text, schema_in_prompt=self.schema_in_prompt)
        usage = Usage()
        attempts = 0
        problem = ""
        for validation_try in range(2):
            response, n = self._send(messages, usage)
            attempts += n
            answer, finish = self._answer(response)
            try:
                if finish == "length":
                    raise InvalidJudgeOutput("the answer was cut off at the output token limit; keep rationales short")
                return CallResult(parse_assessment(answer, step_ids), usage, attempts)
            except InvalidJudgeOutput as exc:
                problem = str(exc)
                log.info("judge %s gave an unusable answer (try %d): %s", self.model, validation_try + 1, problem)
                messages = messages + prompt.correction(answer or "", problem)
        raise JudgeError(INVALID_OUTPUT, problem, **_usage_fields(usage))

    def _answer(self, response: Any) -> tuple[str | None, str | None]:
        choice = response.choices[0]
        message = choice.message
        if self.output_mode == "tool":
            calls = getattr(message, "tool_calls", None) or []
            text = calls[0].function.arguments if calls else message.content
        else:
            text = message.content
        return text, getattr(choice, "finish_reason", None)

    def _send(self, messages: list[dict[str, str]], usage: Usage) -> tuple[Any, int]:
        """One completion, retried on transient provider trouble; returns (response, requests made)."""
        litellm = self._litellm
        kwargs = self._request_kwargs()
        for attempt in range(self.config.max_retries + 1):
            try:
                response = litellm.completion(messages=messages, **kwargs)
                usage.add(response, litellm)
                return response, attempt + 1
            except Exception as exc:  # classified below; anything unknown is a provider error
                status, retryable = self._classify(exc)
                message = self._error_text(exc)
                if not retryable or attempt == self.config.max_retries:
                    raise JudgeError(status, message, **_usage_fields(usage)) from None
                delay = self._backoff(attempt, exc)
                log.info("judge %s: %s, retrying in %.2fs", self.model, status, delay)
                self._sleep(delay)
        raise AssertionError("unreachable")

    def _error_text(self, exc: Exception) -> str:
        """The provider's error, safe to keep: the configured key and any secret shapes removed."""
        text = f"{type(exc).__name__}: {exc}"
        if self.config.api_key is not None and self.config.api_key.get_secret_value():
            text = text.replace(self.config.api_key.get_secret_value(), "[REDACTED:api_key]")
        return self._scrub(text)[:500]

    def _classify(self, exc: Exception) -> tuple[str, bool]:
        litellm = self._litellm
        if isinstance(exc, litellm.RateLimitError):
            return RATE_LIMITED, True
        if isinstance(exc, litellm.Timeout):
            return TIMEOUT, True
        transient = (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError, litellm.APIConnectionError)
        if isinstance(exc, transient):
            return PROVIDER_ERROR, True
        code = getattr(exc, "status_code", None)
        return PROVIDER_ERROR, isinstance(code, int) and code >= 500

    def _backoff(self, attempt: int, exc: Exception) -> float:
        delay = self.config.retry_backoff_seconds * (2**attempt) * (0.5 + random.random() / 2)
        retry_after = _retry_after(exc)
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER_SECONDS))
        return delay


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None


def _usage_fields(usage: Usage) -> dict[str, Any]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "cost_usd": usage.cost_usd}
