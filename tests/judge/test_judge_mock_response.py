"""The judge end to end through litellm's ``mock_response`` (no network): the unit paths."""

from __future__ import annotations

import json

import pytest
from judge_support import assessment, make_run

from mast_otel.processors.config import JudgeConfig
from mast_otel.processors.judge import client
from mast_otel.processors.judge.engine import Judge


def judge_with(answer: str, **overrides) -> Judge:
    config = JudgeConfig(model="gpt-4o-mini", extra_params={"mock_response": answer}, **overrides)
    return Judge(config, sleep=lambda s: None)


def test_a_known_model_gets_a_json_schema_and_its_verdicts_become_findings() -> None:
    run = make_run(4)
    judge = judge_with(json.dumps(assessment({"FM-3.3": ["S4"], "FM-1.5": ["S3"]})))
    assert judge.client.output_mode == "json_schema"
    outcome = judge.judge(run)
    assert outcome.status == client.OK
    assert {f.mode: f.evidence_span_ids for f in outcome.findings} == {
        "FM-1.5": (run.steps[2].span_id,),
        "FM-3.3": (run.steps[3].span_id,),
    }
    assert outcome.prompt_tokens > 0 and outcome.cost_usd > 0  # litellm's local cost table
    assert {f.prompt_version for f in outcome.findings} == {"prompt-3.schema-1"}


def test_unusable_output_is_retried_once_then_reported_as_a_judge_error() -> None:
    judge = judge_with("not json at all")
    outcome = judge.judge(make_run(4))
    assert outcome.status == client.INVALID_OUTPUT and outcome.findings == []
    assert "not valid JSON" in outcome.message
    assert outcome.completion_tokens == 2 * 20  # two calls were made (mock usage: 20 each)
    assert judge.breaker.state == "closed"  # the provider answered: not a provider failure


def test_identical_content_is_judged_once() -> None:
    judge = judge_with(json.dumps(assessment({"FM-2.3": ["S1"]})))
    first = judge.judge(make_run(4, trace_id="1" * 32))
    again = judge.judge(make_run(4, trace_id="2" * 32))  # other ids, same content
    assert (first.status, again.status) == (client.OK, client.CACHED)
    assert again.findings[0].evidence_span_ids == first.findings[0].evidence_span_ids
    assert again.cost_usd == 0


def test_over_the_dollar_budget_the_run_is_skipped_without_a_call() -> None:
    judge = judge_with(json.dumps(assessment()), usd_per_hour=0.0001)
    outcome = judge.judge(make_run(4))
    assert outcome.status == client.OVER_BUDGET and outcome.prompt_tokens == 0


def test_runs_without_content_follow_the_structure_only_setting() -> None:
    answer = json.dumps(assessment({"FM-3.3": ["S4"]}))
    allowed = judge_with(answer).judge(make_run(4, content=False))
    assert allowed.status == client.OK and "structure only" in allowed.rendered.text
    refused = judge_with(answer, allow_structure_only_runs=False).judge(make_run(4, content=False))
    assert refused.status == client.NO_CONTENT


def test_content_can_be_withheld_from_the_judge_entirely() -> None:
    judge = judge_with(json.dumps(assessment()), allow_content=False)
    outcome = judge.judge(make_run(4, secret=False))
    assert outcome.ok and "kubectl get pods" not in outcome.rendered.text


def test_a_model_is_required() -> None:
    with pytest.raises(ValueError, match="judge.model is not set"):
        Judge(JudgeConfig())


def test_the_prompt_budget_is_capped_by_the_model_context_window() -> None:
    judge = judge_with("{}", prompt_token_budget=10**6)
    assert judge.run_budget + judge.system_tokens <= 128_000 - judge.config.max_output_tokens
    assert judge_with("{}", prompt_token_budget=3000).run_budget == 3000 - judge.system_tokens
