"""The judge against a real HTTP endpoint: a local OpenAI-compatible server the test starts."""

from __future__ import annotations

import json
import logging

import pytest
from judge_support import SECRETS, JudgeServer, make_run

from mast_otel.processors.judge import client
from mast_otel.processors.judge.engine import Judge


def test_nothing_secret_reaches_the_provider_and_the_key_is_only_in_the_header(judge_server: JudgeServer, server_config, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    outcome = Judge(server_config).judge(make_run(6))
    assert outcome.status == client.OK
    assert len(judge_server.requests) == 1
    sent = judge_server.bodies
    leaked = [kind for kind, value in SECRETS.items() if value in sent]
    assert leaked == []
    assert "[REDACTED:" in sent
    assert judge_server.requests[0]["headers"]["Authorization"] == "Bearer test-key-not-a-secret"
    assert "test-key-not-a-secret" not in caplog.text


def test_json_mode_for_unknown_models_spells_out_the_schema(judge_server: JudgeServer, server_config) -> None:
    Judge(server_config).judge(make_run(4))
    body = json.loads(judge_server.requests[0]["body"])
    assert body["response_format"] == {"type": "json_object"}
    assert '"modes"' in body["messages"][0]["content"]
    assert body["temperature"] == 0


def test_tool_calling_mode(judge_server: JudgeServer, server_config) -> None:
    outcome = Judge(server_config.model_copy(update={"output_mode": "tool"})).judge(make_run(4))
    body = json.loads(judge_server.requests[0]["body"])
    assert body["tool_choice"]["function"]["name"] == client.TOOL_NAME
    assert outcome.status == client.OK and {f.mode for f in outcome.findings} == {"FM-2.3", "FM-3.3"}


def test_rate_limits_and_server_errors_are_retried_with_backoff(judge_server: JudgeServer, server_config) -> None:
    judge_server.script = ["429", "500"]
    sleeps: list[float] = []
    outcome = Judge(server_config, sleep=sleeps.append).judge(make_run(4))
    assert outcome.status == client.OK
    assert len(judge_server.requests) == 3
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0] * 0.5  # exponential with jitter


def test_retries_are_bounded_and_the_failure_is_reported(judge_server: JudgeServer, server_config) -> None:
    judge_server.script = ["500"] * 10
    outcome = Judge(server_config.model_copy(update={"max_retries": 2})).judge(make_run(4))
    assert outcome.status == client.PROVIDER_ERROR and outcome.findings == []
    assert len(judge_server.requests) == 3
    assert "test-key-not-a-secret" not in outcome.message


def test_the_circuit_opens_when_the_provider_keeps_failing(judge_server: JudgeServer, server_config) -> None:
    judge_server.script = ["429"] * 100
    judge = Judge(server_config.model_copy(update={"max_retries": 0, "circuit_breaker_failures": 3, "cache_size": 0}))
    statuses = [judge.judge(make_run(4, trace_id=f"{i:032x}")).status for i in range(6)]
    assert statuses == [client.RATE_LIMITED] * 3 + [client.CIRCUIT_OPEN] * 3
    assert len(judge_server.requests) == 3  # no calls while open


def test_a_slow_provider_times_out(judge_server: JudgeServer, server_config) -> None:
    judge_server.script = ["slow"]
    judge_server.slow_seconds = 3
    outcome = Judge(server_config.model_copy(update={"timeout_seconds": 0.5, "max_retries": 0})).judge(make_run(4))
    assert outcome.status == client.TIMEOUT


@pytest.mark.parametrize("bad", ["malformed", "unknown_step", "truncated"])
def test_unusable_output_is_retried_once_with_the_problem_stated(judge_server: JudgeServer, server_config, bad: str) -> None:
    judge_server.script = [bad]
    outcome = Judge(server_config).judge(make_run(4))
    assert outcome.status == client.OK
    second = json.loads(judge_server.requests[1]["body"])["messages"]
    assert second[-1]["role"] == "user" and "cannot be used" in second[-1]["content"]


def test_unusable_output_twice_is_a_judge_error_never_a_diagnosis(judge_server: JudgeServer, server_config) -> None:
    judge_server.script = ["unknown_step", "unknown_step"]
    outcome = Judge(server_config).judge(make_run(4))
    assert outcome.status == client.INVALID_OUTPUT and outcome.findings == []
    assert "S999" in outcome.message and len(judge_server.requests) == 2
    assert outcome.prompt_tokens == 2000  # both calls are accounted for


def test_the_token_budget_skips_runs_without_calling_out(judge_server: JudgeServer, server_config) -> None:
    judge = Judge(server_config.model_copy(update={"tokens_per_minute": 6000, "cache_size": 0}))
    statuses = [judge.judge(make_run(4, trace_id=f"{i:032x}")).status for i in range(4)]
    assert client.OK in statuses and statuses[-1] == client.OVER_BUDGET
    assert len(judge_server.requests) == statuses.count(client.OK)
