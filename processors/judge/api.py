"""``POST /v1/diagnoses/{trace_id}/judge``: judge one run now, whatever the sampling policy says.

Answers 202 with the run queued, or with ``?wait=true`` 200 and the judge's result once it is
in (504 if that takes longer than the judge's timeout allows). 404 when the processor no
longer holds the run, 429 when the judge's queue is full.
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mast_otel.processors.judge.engine import JudgeOutcome

if TYPE_CHECKING:
    from mast_otel.processors.judge.service import JudgeService

TRACE_ID = Path(pattern=r"^[0-9a-fA-F]{32}$", description="the run's trace id, 32 hex characters")


class JudgeFindingOut(BaseModel):
    mode: str
    confidence: float
    explanation: str
    evidence_span_ids: list[str]


class JudgeResultOut(BaseModel):
    trace_id: str
    status: str  # queued, or a judge request status (ok, cached, invalid_output, over_budget, ...)
    judge_model: str
    message: str = ""
    findings: list[JudgeFindingOut] = []
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


def _result(trace_id: str, model: str, outcome: JudgeOutcome) -> JudgeResultOut:
    return JudgeResultOut(
        trace_id=trace_id,
        status=outcome.status,
        judge_model=model,
        message=outcome.message,
        findings=[
            JudgeFindingOut(mode=f.mode, confidence=f.confidence, explanation=f.explanation, evidence_span_ids=list(f.evidence_span_ids))
            for f in outcome.findings
        ],
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        cost_usd=outcome.cost_usd,
    )


def build_router(service: JudgeService) -> APIRouter:
    router = APIRouter(tags=["judge"])

    @router.post("/v1/diagnoses/{trace_id}/judge", response_model=JudgeResultOut, status_code=202)
    def judge_trace(trace_id: str = TRACE_ID, wait: bool = Query(False, description="wait for the result")):
        trace_id = trace_id.lower()
        run = service.runs.get_run(trace_id)
        if run is None:
            raise HTTPException(404, f"no run with trace id {trace_id} is held by the processor (outside the retention window?)")
        future = service.submit(trace_id, run=run)
        if future is None:
            raise HTTPException(429, "the judge queue is full; try again later", headers={"Retry-After": "30"})
        if not wait:
            return JudgeResultOut(trace_id=trace_id, status="queued", judge_model=service.model)
        cfg = service.config
        try:
            outcome = future.result(timeout=cfg.timeout_seconds * (cfg.max_retries + 1) * 2 + 30)
        except FutureTimeout:
            raise HTTPException(504, "the judge did not answer in time; the run stays queued") from None
        return JSONResponse(_result(trace_id, service.model, outcome).model_dump(), status_code=200)

    return router
