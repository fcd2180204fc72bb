"""The answer schema: every mode once, known step ids only, findings mapped back to spans."""

from __future__ import annotations

import json

import pytest
from judge_support import assessment

from mast_otel.processors.judge.schema import InvalidJudgeOutput, json_schema, parse_assessment, to_findings

STEPS = {"S1": "00000000000000a1", "S2": "00000000000000a2", "S3": "00000000000000a3"}


def test_a_valid_answer_becomes_judge_findings_with_span_evidence() -> None:
    answer = assessment({"FM-2.3": ["S1", "S3"], "FM-3.2": []})
    parsed = parse_assessment(json.dumps(answer), STEPS)
    findings = to_findings(parsed, STEPS, judge_model="m", min_confidence=0.5, fallback_span_id="root")
    by_mode = {f.mode: f for f in findings}
    assert set(by_mode) == {"FM-2.3", "FM-3.2"}
    assert by_mode["FM-2.3"].evidence_span_ids == ("00000000000000a1", "00000000000000a3")
    assert by_mode["FM-3.2"].evidence_span_ids == ("root",)  # no steps cited: the run's root
    assert all(f.source == "judge" and f.detector == "judge:m" for f in findings)


def test_low_confidence_verdicts_are_not_reported() -> None:
    answer = assessment({"FM-2.3": ["S1"]})
    answer["modes"][7]["confidence"] = 0.3
    parsed = parse_assessment(json.dumps(answer), STEPS)
    assert to_findings(parsed, STEPS, judge_model="m", min_confidence=0.5, fallback_span_id=None) == []


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "empty"),
        ("{oops", "not valid JSON"),
        (json.dumps(assessment(skip="FM-2.4")), "not assessed: FM-2.4"),
        (json.dumps({"modes": assessment()["modes"] + assessment()["modes"][:1]}), "more than once: FM-1.1"),
        (json.dumps(assessment({"FM-1.3": ["S9"]})), "steps that do not exist: S9"),
        (json.dumps({"modes": [{**m, "confidence": 7} for m in assessment()["modes"]]}), "less than or equal to 1"),
        (json.dumps({"modes": [{**m, "mode": "FM-9.9"} if i == 0 else m for i, m in enumerate(assessment()["modes"])]}), "unknown failure mode"),
    ],
)
def test_unusable_answers_are_rejected_with_the_reason(answer: str, problem: str) -> None:
    with pytest.raises(InvalidJudgeOutput, match=problem.replace(".", r"\.")):
        parse_assessment(answer, STEPS)


def test_fenced_json_and_a_bare_list_are_accepted() -> None:
    body = json.dumps(assessment({"FM-1.3": ["S2"]}))
    assert parse_assessment(f"```json\n{body}\n```", STEPS).detected()[0].mode == "FM-1.3"
    assert len(parse_assessment(json.dumps(assessment()["modes"]), STEPS).modes) == 14


def test_the_json_schema_is_strict_mode_friendly() -> None:
    schema = json_schema()
    text = json.dumps(schema)
    assert "minimum" not in text and '"title"' not in text
    item = schema["$defs"]["ModeAssessment"]
    assert item["additionalProperties"] is False and set(item["required"]) == set(item["properties"])
    assert len(item["properties"]["mode"]["enum"]) == 14
