"""The HTTP side on one FastAPI app: the OTLP/HTTP receivers' routes (``receivers/otlp_traces.py``,
``receivers/otlp_logs.py``), the diagnosis API, health and metrics.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Literal, Optional, Sequence

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import Receive, Scope, Send

from mast_otel.processors import taxonomy
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.api.params import (
    MAX_OFFSET, QueryTime, mode_filter, refuse_unstorable_text, validation_error_response,
)
from mast_otel.processors.service.auth.tokens import bearer_dependency
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.store.conversations import ConversationStore
from mast_otel.processors.service.receivers.drain import Drain, DrainGate
from mast_otel.processors.service.receivers.http_limits import APIBodyLimit
from mast_otel.processors.service.receivers.otlp_export import ExportPath
from mast_otel.processors.service.receivers.otlp_logs import logs_route
from mast_otel.processors.service.receivers.otlp_traces import traces_route
from mast_otel.processors.service.outputs.store import DiagnosisReader
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
from mast_otel.processors.service.api.schemas import (
    DiagnosisOut, DiagnosisPage, ModeSeverityOut, Outcome, OutcomeIn, OutcomeOut, SeverityGroupOut, SeverityOut, StepFoldOut, StepOut,
    TeamOut,
)
from mast_otel.processors.service.api.unknown_params import refuse_unknown_parameters
from mast_otel.processors.step_names import StepNames
from mast_otel.processors.team_view import team_view
from mast_otel.processors.severity_from_outcomes import (
    ALL_MODELS, UNKNOWN_MODEL, adopted_overrides, config_lines, evidence_of_page,
)

log = logging.getLogger(__name__)

# models per /v1/severity page: each is 14 modes' counts and intervals, about 6 KB of JSON, so a
# page stays near 300 KB (1.2 MB at most) however many models the store holds
SEVERITY_PAGE = 50
MAX_SEVERITY_PAGE = 200


def api_router(stage: IngestStage, config: ProcessorConfig, reader: DiagnosisReader, throttle: AuthThrottle,
               sessions: ConversationStore | None = None) -> APIRouter:
    """``/v1/diagnoses`` (read through ``reader``; ``sessions`` resolves its session filter) and
    ``/v1/outcomes`` (the merge stage's input)."""
    router = APIRouter(prefix="/v1", tags=["diagnoses"], dependencies=[
        Depends(bearer_dependency(config.receiver.api_token, throttle)), Depends(refuse_unstorable_text)])
    store = reader
    overrides = config.detection.severity_overrides
    router.dependencies.append(Depends(refuse_unknown_parameters))  # before the routes: each route takes it in

    @router.get("/diagnoses", response_model=DiagnosisPage, summary="Diagnoses, newest first, filtered and paged")
    def list_diagnoses(
        model: Optional[str] = None,
        agent: Optional[str] = None,
        service: Optional[str] = None,
        mode: Optional[str] = Depends(mode_filter),
        outcome: Optional[Outcome] = None,
        fatal: Optional[bool] = None,
        since: Optional[QueryTime] = Query(None, description="runs started at or after (ISO 8601, UTC unless a zone is given, or Unix seconds)"),
        until: Optional[QueryTime] = Query(None, description="runs started before"),
        session: Optional[str] = Query(None, description="only the turns of this session (conversation) id"),
        limit: int = Query(50, ge=1, le=1000),
        offset: int = Query(0, ge=0, le=MAX_OFFSET),
    ) -> DiagnosisPage:
        filters: dict[str, Any] = dict(model=model, agent=agent, service=service, mode=mode, outcome=outcome, fatal=fatal,
                       since=since.timestamp() if since is not None else None, until=until.timestamp() if until is not None else None)
        if session is not None:
            if sessions is None:
                raise HTTPException(status_code=400, detail="sessions are off (sessions.enabled): runs cannot be filtered by session")
            filters["trace_ids"] = sessions.trace_ids(session)
        items = store.query(**filters, limit=limit, offset=offset)
        return DiagnosisPage(total=store.count(**filters), limit=limit, offset=offset, items=[DiagnosisOut.of(d, overrides) for d in items])

    @router.get("/diagnoses/{trace_id}", response_model=DiagnosisOut, summary="One run's diagnosis with evidence")
    def get_diagnosis(
        trace_id: str,
        include: Optional[Literal["steps"]] = Query(None, description="steps: add the run's step list (no content)"),
    ) -> DiagnosisOut:
        trace_id = trace_id.lower()
        d = store.get(trace_id)
        if d is None:
            raise HTTPException(status_code=404, detail=f"no diagnosis for trace {trace_id}")
        steps = store.steps(trace_id)
        names = StepNames(steps, complete=not steps.folds) if steps is not None else None
        out = DiagnosisOut.of(d, overrides, names, detailed=True)
        if steps is not None:
            out.team = TeamOut.of(team_view(steps))
        if include == "steps":
            if steps is not None:
                out.steps = [StepOut.of(s) for s in steps]
                out.steps_folded = [StepFoldOut(after=f.after, count=f.left_out) for f in steps.folds]
                out.steps_shortened = steps.shortened
        return out

    @router.post("/outcomes", response_model=OutcomeOut, summary="Record a run's ground-truth outcome")
    def post_outcome(body: OutcomeIn, response: Response) -> OutcomeOut:
        trace_id = body.trace_id.lower()
        d = stage.record_outcome(trace_id, body.outcome, body.score)
        if d is None:
            response.status_code = 202
            return OutcomeOut(trace_id=trace_id, status="pending")
        return OutcomeOut(trace_id=trace_id, status="applied", diagnosis=DiagnosisOut.of(d, overrides, detailed=True))

    @router.get("/severity", response_model=SeverityOut,
                summary="Each mode's prevalence in failed vs successful runs, all models and a page of models, with its lift")
    def severity(
        model: Optional[str] = Query(None, description=f"only this model (and all models together); {UNKNOWN_MODEL}: runs that named none"),
        since: Optional[QueryTime] = Query(None, description="runs started at or after (ISO 8601 or Unix seconds)"),
        until: Optional[QueryTime] = Query(None, description="runs started before"),
        min_outcomes: int = Query(config.web.severity_min_outcomes, ge=1,
                                  description="runs with a known outcome a group needs before a lift is given"),
        limit: int = Query(SEVERITY_PAGE, ge=1, le=MAX_SEVERITY_PAGE, description="models per page, most runs with a known outcome first"),
        offset: int = Query(0, ge=0, le=MAX_OFFSET, description="models to skip"),
    ) -> SeverityOut:
        page = store.model_counts_page(since=since, until=until, model=None if model == UNKNOWN_MODEL else model,
                                       unnamed=model == UNKNOWN_MODEL, limit=limit, offset=offset)
        by_model = evidence_of_page(page, lambda m: taxonomy.severity(m, overrides), min_outcomes)
        adopted = adopted_overrides(by_model[ALL_MODELS], dict(overrides))
        yaml, env = config_lines(adopted) if adopted else (None, None)
        groups = [SeverityGroupOut(model=name, modes=[ModeSeverityOut.of(e) for e in evidence]) for name, evidence in by_model.items()]
        return SeverityOut(min_outcomes=min_outcomes, groups=groups, total_models=page.model_count, limit=limit, offset=offset,
                           severity_overrides=adopted, config_line=yaml, env_line=env)

    return router


class ProcessorApp(FastAPI):
    """The FastAPI app, with ``POST`` to the OTLP export paths answered ahead of its middleware
    and routing (``receivers/otlp_export.py``, ``ExportPath``); every other request goes through
    the framework as usual."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.exports: dict[str, ExportPath] = {}  # path -> its handler; set by ``create_app``

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            export = self.exports.get(scope["path"])
            if export is not None:
                await export(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def create_app(
    stage: IngestStage,
    config: ProcessorConfig,
    extra_routers: Sequence[APIRouter] = (),
    ready: Callable[[], bool] | None = None,
    *,
    reader: DiagnosisReader,
    web_routers: Sequence[APIRouter] = (),
    throttle: AuthThrottle | None = None,
    drain: Drain | None = None,
    sessions: ConversationStore | None = None,
) -> ProcessorApp:
    """The processor's HTTP app. ``extra_routers`` (judge) get the API token check;
    ``web_routers`` (the web view) check it themselves, sending browsers to a login form;
    ``reader`` (the store, or recent diagnoses in memory while it is off) serves ``GET /v1/diagnoses``;
    ``throttle`` counts wrong credentials per address (shared with the gRPC receiver and the web view);
    ``drain``, once begun, has every route but the probes and ``/metrics`` answer 503."""
    from mast_otel import __version__
    from mast_otel.processors.service.api.docs_page import mount_api_docs

    # FastAPI's own OpenTelemetry instrumentation stays off: the processor must not trace its own
    # requests into whatever provider a library in the process set globally, and asking whether
    # one is set costs every request (about 7% of a small OTLP request's CPU).
    app = ProcessorApp(title="mast-otel processor", version=__version__, docs_url=None, redoc_url=None, openapi_url=None,
                  telemetry={"tracing": False, "metrics": False, "logs": False})
    app.add_exception_handler(RequestValidationError, validation_error_response)
    retry_after = str(config.receiver.retry_after_seconds)

    def store_unavailable(request: Request, exc: Exception) -> JSONResponse:
        """The store could not answer (a shared database gone away): the client retries later."""
        log.warning("the diagnosis store could not answer %s %s (%s: %s)", request.method, request.url.path,
                    type(exc).__name__, exc)
        return JSONResponse({"detail": "the diagnosis store is unavailable; retry later"}, status_code=503,
                            headers={"Retry-After": retry_after})

    for error in reader.errors:
        app.add_exception_handler(error, store_unavailable)
    app.add_middleware(APIBodyLimit, config=config.receiver, metrics=stage.metrics)
    if drain is not None:  # outermost: refuses before anything reads the request
        app.add_middleware(DrainGate, drain=drain, retry_after_seconds=config.receiver.retry_after_seconds)
    throttle = throttle or AuthThrottle(config.receiver.auth_failures)
    require_api_token = bearer_dependency(config.receiver.api_token, throttle)
    mount_api_docs(app, "mast-otel processor", require_api_token)
    exports = [traces_route(stage, config, throttle), logs_route(stage, config, throttle)]
    app.router.routes.extend(exports)
    app.exports = {route.path: ExportPath(route.endpoint, drain) for route in exports}
    app.include_router(api_router(stage, config, reader, throttle, sessions))
    api_auth = [Depends(require_api_token), Depends(refuse_unstorable_text)]
    for router in extra_routers:
        app.include_router(router, dependencies=[*api_auth, Depends(refuse_unknown_parameters)])
    for router in web_routers:
        app.include_router(router)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz(response: Response) -> dict:
        if ready is not None and not ready():
            response.status_code = 503
            return {"status": "starting"}
        return {"status": "ready"}

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(stage.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
