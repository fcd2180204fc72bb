"""The judge's answer: one assessment per failure mode, validated before anything trusts it.

The model must assess all 14 modes exactly once, cite only step ids that exist in the
rendered run, and keep confidence in 0..1. Anything else is an :class:`InvalidJudgeOutput`,
which the client retries once and then records as a judge error, never as a diagnosis.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mast_otel.processors import taxonomy
from mast_otel.processors.model import Finding

RATIONALE_MAX_CHARS = 400
SCHEMA_NAME = "mast_failure_mode_assessment"
SCHEMA_VERSION = "1"  # bump when the answer's shape changes


class InvalidJudgeOutput(ValueError):
    """The model's answer could not be used (malformed, incomplete, or citing unknown steps)."""


class ModeAssessment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: str = Field(description="failure mode id, FM-1.1 .. FM-3.3")
    detected: bool = Field(description="true when the run shows this failure mode")
    confidence: float = Field(ge=0, le=1, description="0..1, how sure the verdict is")
    steps: list[str] = Field(description="ids of the steps that show it, e.g. S3; empty when not detected")
    rationale: str = Field(description="one or two sentences; refer to steps by id, do not quote secrets")

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in taxonomy.MODES:
            raise ValueError(f"unknown failure mode {value!r}")
        return value

    @field_validator("rationale")
    @classmethod
    def _short(cls, value: str) -> str:
        value = " ".join(value.split())
        return value if len(value) <= RATIONALE_MAX_CHARS else value[: RATIONALE_MAX_CHARS - 1] + "…"


class Assessment(BaseModel):
    """The whole answer: every mode once."""

    model_config = ConfigDict(extra="forbid")

    modes: list[ModeAssessment]

    @model_validator(mode="after")
    def _every_mode_once(self) -> Assessment:
        seen = [m.mode for m in self.modes]
        duplicated = sorted({m for m in seen if seen.count(m) > 1})
        missing = [m for m in taxonomy.MODE_IDS if m not in seen]
        problems = []
        if duplicated:
            problems.append(f"assessed more than once: {', '.join(duplicated)}")
        if missing:
            problems.append(f"not assessed: {', '.join(missing)}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def detected(self, min_confidence: float = 0.0) -> list[ModeAssessment]:
        return [m for m in self.modes if m.detected and m.confidence >= min_confidence]


def json_schema() -> dict[str, Any]:
    """The answer's JSON schema in the subset strict structured-output providers accept.

    Range and length limits are checked by pydantic after the fact; they are left out of the
    schema because several providers reject those keywords in strict mode.
    """
    schema = Assessment.model_json_schema()
    mode_schema = schema["$defs"]["ModeAssessment"]
    mode_schema["properties"]["mode"]["enum"] = list(taxonomy.MODE_IDS)
    return _strip(schema, drop={"title", "minimum", "maximum", "default"})


def _strip(node: Any, drop: set[str]) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v, drop) for k, v in node.items() if k not in drop}
    if isinstance(node, list):
        return [_strip(v, drop) for v in node]
    return node


def parse_assessment(text: str | None, known_steps: Iterable[str]) -> Assessment:
    """Validate the model's raw JSON text against the schema and the run's step ids."""
    if not text or not text.strip():
        raise InvalidJudgeOutput("the answer was empty")
    body = _unfence(text)
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise InvalidJudgeOutput(f"the answer is not valid JSON: {exc}") from None
    if isinstance(data, list):  # some models answer with the bare list
        data = {"modes": data}
    try:
        assessment = Assessment.model_validate(data)
    except ValidationError as exc:
        raise InvalidJudgeOutput(f"the answer does not match the schema: {_brief(exc)}") from None
    known = set(known_steps)
    unknown = sorted({s for m in assessment.modes for s in m.steps if s not in known})
    if unknown:
        raise InvalidJudgeOutput(f"the answer cites steps that do not exist: {', '.join(unknown[:10])}")
    return assessment


def _unfence(text: str) -> str:
    """Drop a Markdown code fence around JSON, which JSON-mode-less models often add."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    return body


def _brief(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "answer"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def to_findings(
    assessment: Assessment,
    step_spans: Mapping[str, str],
    *,
    judge_model: str,
    min_confidence: float,
    fallback_span_id: str | None,
    prompt_version: str | None = None,
) -> list[Finding]:
    """Detected modes as ``source="judge"`` findings, step ids mapped back to span ids."""
    findings = []
    for m in assessment.detected(min_confidence):
        evidence = tuple(dict.fromkeys(step_spans[s] for s in m.steps if s in step_spans))
        if not evidence and fallback_span_id:
            evidence = (fallback_span_id,)
        findings.append(
            Finding(
                mode=m.mode,
                confidence=round(m.confidence, 3),
                explanation=f"LLM judge: {m.rationale}" if m.rationale else "LLM judge",
                evidence_span_ids=evidence,
                span_id=evidence[0] if evidence else None,
                source="judge",
                detector=f"judge:{judge_model}",
                prompt_version=prompt_version,
            )
        )
    return findings
