"""The built-in web view: overview, runs list, one page per run, severity from outcomes, login.

Server-rendered HTML with inline CSS and SVG: no scripts, fonts or styles from anywhere else,
so it works on closed networks. It reads the diagnosis store (aggregates in SQL, so a store
with many models stays cheap to show), the run page's timeline from the run's stored step
list; while the pipeline still holds the run's spans (the retention window) it adds content
excerpts when content was captured. Every string a page shows goes through the judge's
redaction first. With ``receiver.api_token`` set, browsers log in once with the token and
get a session cookie; API clients keep sending the bearer token.
"""

from __future__ import annotations

import hmac
import logging
import re
import time
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mast_otel.processors import taxonomy, what_to_do
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.judge.redact import Redactor
from mast_otel.processors.service.api.params import MAX_OFFSET, in_store_range, unstorable_parameter
from mast_otel.processors.service.auth.tokens import SESSION_COOKIE, check_request, client_address, session_expiry, session_value
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.store.conversations import ConversationStore
from mast_otel.processors.service.pipeline.merge import RunSource
from mast_otel.processors.service.outputs.store import DiagnosisReader
from mast_otel.processors.service.store.run_steps import StepList, pointed_at, run_steps
from mast_otel.processors.step_names import StepNames
from mast_otel.processors.severity_from_outcomes import (
    ALL_MODELS, UNKNOWN_MODEL, adopted_overrides, config_lines, evidence_of_page,
)
from mast_otel.processors.web import summary as S
from mast_otel.processors.web.timeline import (
    EXPLANATION_CHARS, axis_ticks, build_rows, mode_label, mode_severity, shorter, shown_positions, step_counts, team_lanes,
    timeline_items,
)

RECENT_FAILED = 15
FINDINGS_PER_MODE = 20  # findings a run page lists per mode (and four times as many evidence links)
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
FILTERS = ("model", "agent", "service", "mode", "outcome", "fatal", "since", "until", "session")

log = logging.getLogger(__name__)


class BadFilter(ValueError):
    """A filter in the URL that cannot be used; shown on the page, answered with 400."""


@lru_cache(maxsize=8)
def _environment(redaction_patterns: tuple[str, ...]) -> Any:
    import jinja2

    redactor = Redactor(redaction_patterns)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
        # every value a template prints is redacted as the judge redacts what it sends out
        finalize=lambda value: redactor.redact(value) if isinstance(value, str) else value,
    )
    env.globals.update(percent=S.percent, decimal=S.decimal, mode_label=mode_label, heat=heat_color,
                       when=_when, modes=taxonomy.MODES, query=query_string, listed_per_mode=FINDINGS_PER_MODE)
    env.filters["shorter"] = lambda text, chars=EXPLANATION_CHARS: shorter(str(text), chars)
    return env


def heat_color(rate: float) -> str:
    """White for 0, deepening red towards 1 (the heatmap's cell colour)."""
    if rate <= 0:
        return "#ffffff"
    g = round(235 - 180 * min(rate, 1.0) ** 0.6)
    return f"rgb(255,{g},{g})"


def _when(ns_or_s: float | None) -> str:
    if not ns_or_s:
        return ""
    seconds = ns_or_s / 1e9 if ns_or_s > 1e12 else ns_or_s
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def query_string(params: dict[str, Any], **changes: Any) -> str:
    """``params`` with ``changes`` as a URL query (empty values left out), for links that keep filters."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def parse_time(text: str | None, name: str) -> datetime | None:
    """ISO 8601 (a date, or a date and time; UTC unless it says otherwise) or Unix seconds."""
    if not text:
        return None
    text = text.strip()
    try:
        if re.fullmatch(r"\d+(\.\d+)?", text):
            value = datetime.fromtimestamp(float(text), timezone.utc)
        else:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise BadFilter(f"{name}: {text!r} is not a time (use 2026-11-24, 2026-11-24T10:30 or Unix seconds)") from None
    try:
        return in_store_range(value)
    except ValueError as exc:
        raise BadFilter(f"{name}: {text!r} {exc}") from None


def run_filters(params: dict[str, str]) -> dict[str, Any]:
    """The store filters a runs URL asks for, checked."""
    out: dict[str, Any] = {k: (params.get(k) or None) for k in ("model", "agent", "service")}
    mode = params.get("mode") or None
    if mode is not None:
        try:
            mode = taxonomy.get(mode).id
        except KeyError:
            raise BadFilter(f"mode: {mode!r} is not a failure mode id (FM-1.1 … FM-3.3)") from None
    outcome = params.get("outcome") or None
    if outcome not in (None, "success", "failure", "unknown"):
        raise BadFilter(f"outcome: {outcome!r} is not success, failure or unknown")
    fatal = params.get("fatal") or None
    if fatal not in (None, "true", "false"):
        raise BadFilter(f"fatal: {fatal!r} is not true or false")
    out.update(mode=mode, outcome=outcome, fatal=None if fatal is None else fatal == "true",
               since=parse_time(params.get("since"), "since"), until=parse_time(params.get("until"), "until"))
    return out


def page_number(params: dict[str, str], size: int = 1) -> int:
    """The ``page`` asked for, from 1, no further than the store can count (``size`` items a page)."""
    text = params.get("page") or "1"
    last = MAX_OFFSET // size + 1
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(last))) or not 1 <= int(text) <= last:
        raise BadFilter(f"page: {text!r} is not a page number from 1 to {last}")
    return int(text)


def step_range(params: dict[str, str]) -> tuple[int, int] | None:
    """The run page's ``steps=FIRST-LAST`` (positions from 1 in the run's step list), when asked."""
    text = params.get("steps")
    if not text:
        return None
    match = re.fullmatch(r"([0-9]{1,9})-([0-9]{1,9})", text.strip())
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise BadFilter(f"steps: {text!r} is not a range of steps such as 1-300")
    return int(match[1]), int(match[2])


def _safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this server only."""
    return target if target and target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def build_router(store: DiagnosisReader, runs: RunSource | None = None, config: ProcessorConfig | None = None,
                 throttle: AuthThrottle | None = None, sessions: ConversationStore | None = None) -> APIRouter:
    """Routes ``/``, ``/runs``, ``/runs/{trace_id}``, ``/severity``, ``/login`` and ``/logout``,
    reading ``store`` and, for content excerpts, the runs the processor still holds; wrong tokens
    and cookies count in ``throttle`` (the one the API and the receivers share)."""
    config = config or ProcessorConfig()
    token = config.receiver.api_token
    throttle = throttle or AuthThrottle(config.receiver.auth_failures)
    web = config.web
    overrides = config.detection.severity_overrides
    judge_on = bool(config.judge.model)
    env = _environment(tuple(config.judge.redaction_patterns))
    router = APIRouter(include_in_schema=False)

    def severity_of(mode: str) -> taxonomy.Severity:
        return mode_severity(mode, overrides)

    def render(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("logged_in", token is not None)
        context.setdefault("severity_of", severity_of)
        return HTMLResponse(env.get_template(template).render(**context), status_code=status_code)

    def page(handler: Callable[[Request, dict[str, str]], Response]) -> Callable[[Request], Response]:
        """Checks the login (HTML gets a redirect to the login form), turns bad filters into 400 pages and,
        for a browser (``Accept: text/html``), an unknown run into a 404 page rather than JSON."""

        def wrapped(request: Request) -> Response:
            accepts_html = "text/html" in request.headers.get("accept", "")
            denied = check_request(request, token, throttle)
            if denied is not None:
                if denied.throttled:
                    raise HTTPException(status_code=denied.status, detail=denied.message, headers=denied.headers)
                if not accepts_html:
                    raise HTTPException(status_code=401, detail="missing or invalid bearer token",
                                        headers={"WWW-Authenticate": "Bearer"})
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse("/login?" + urlencode({"next": target}), status_code=303)
            params = {k: v for k, v in request.query_params.items()}
            try:
                problem = unstorable_parameter([*params.items(), *request.path_params.items()])
                if problem is not None:
                    raise BadFilter(problem)
                return handler(request, params)
            except BadFilter as exc:
                return render("error.html", status_code=400, message=str(exc))
            except HTTPException as exc:  # a browser gets a page it can navigate from; API clients keep JSON
                if exc.status_code != 404 or not accepts_html:
                    raise
                return render("error.html", status_code=404, message=str(exc.detail))
            except store.errors as exc:  # the store gone away: a browser gets the view's own page, not JSON
                if not accepts_html:
                    raise
                log.warning("the diagnosis store could not answer %s (%s)", request.url.path, type(exc).__name__)
                response = render("error.html", status_code=503, message=(
                    "The diagnosis store is unavailable right now. Diagnoses made meanwhile are stored once it is "
                    "back; reload this page in a moment."))
                response.headers["Retry-After"] = str(config.receiver.retry_after_seconds)
                return response

        return wrapped

    def judge_off(mode: str) -> bool:
        """Only the judge finds ``mode`` and no judge is configured: its column says so, not 0%."""
        return not judge_on and mode in taxonomy.MODES and "rules" not in taxonomy.MODES[mode].covered_by

    def overview(request: Request, params: dict[str, str]) -> Response:
        since, until = parse_time(params.get("since"), "since"), parse_time(params.get("until"), "until")
        summaries = S.from_counts(*store.counts(since=since, until=until, latest=web.overview_window))
        models = S.page_of_models(summaries, page_number(params), web.overview_models)
        rows = models.shown + ([models.others] if models.others else [])
        total = sum(s.runs for s in summaries)
        session_counts = (sessions.count(), sessions.count(with_modes=True)) if sessions is not None else None
        return render(
            "overview.html", models=models, rows=rows, columns=S.modes_seen(summaries), total=total,
            window=web.overview_window, judge_off=judge_off, judge_on=judge_on,
            times={"since": params.get("since") or "", "until": params.get("until") or ""},
            failed_runs=store.query(outcome="failure", since=since, until=until, limit=RECENT_FAILED),
            max_mpf=max((s.modes_per_failed_run or 0 for s in rows), default=0) or 1, session_counts=session_counts,
        )

    def runs_list(request: Request, params: dict[str, str]) -> Response:
        search = (params.get("q") or "").strip().lower().replace("-", "")
        if search:
            if not _TRACE_ID.match(search):
                raise BadFilter(f"search: {search!r} is not a trace id (32 hex characters)")
            if store.get(search) is None:
                return render("error.html", status_code=404, message=f"no diagnosed run has trace id {search}")
            return RedirectResponse(f"/runs/{search}", status_code=303)
        filters = run_filters(params)
        if params.get("session"):  # a session's turns
            if sessions is None:
                raise BadFilter("session: sessions are off (sessions.enabled)")
            filters["trace_ids"] = sessions.trace_ids(params["session"])
        size = web.runs_page_size
        number = page_number(params, size)
        total = store.count(**filters)
        items = store.query(**filters, limit=size, offset=(number - 1) * size)
        shown = {k: params.get(k, "") for k in FILTERS}
        return render("runs.html", items=items, total=total, page=number, pages=max(1, -(-total // size)),
                      size=size, shown=shown, mode_ids=list(taxonomy.MODE_IDS))

    def run_page(request: Request, params: dict[str, str]) -> Response:
        trace_id = request.path_params["trace_id"].lower()
        if not _TRACE_ID.match(trace_id):
            raise HTTPException(status_code=404, detail="a trace id is 32 hex characters")
        diagnosis = store.get(trace_id)
        if diagnosis is None:
            raise HTTPException(status_code=404, detail=f"no diagnosis for trace {trace_id}")
        asked = step_range(params)
        run = runs.get_run(trace_id) if runs is not None else None
        steps = store.steps(trace_id)
        if steps is None and run is not None:
            steps = StepList(run_steps(run))
        listed = steps or StepList()
        verdicts = diagnosis.verdicts
        counted, calls = step_counts(listed)
        positions = shown_positions(listed, web.timeline_rows, pointed_at(diagnosis), asked)
        rows = build_rows(listed, diagnosis, run, positions)
        lanes, handoffs = team_lanes(rows)
        names = StepNames(listed, complete=not listed.folds)
        attribution = diagnosis.attribution
        return render(
            "run.html", d=diagnosis, verdicts=verdicts, items=timeline_items(rows, positions, len(listed), listed.folds),
            lanes=lanes, handoffs=handoffs, shown=len(rows), listed=len(listed), stored_folded=listed.folded,
            shortened=listed.shortened, asked=asked,
            severity={m: severity_of(m) for m in verdicts}, has_steps=steps is not None, held=run is not None,
            ticks=axis_ticks(listed), step_total=counted if steps and not listed.folds else diagnosis.step_count, calls=calls,
            numbered=any(s.step_index is not None for s in listed if s.role != "agent"),
            fatal_modes=[m for m in verdicts if severity_of(m) == "fatal"], names=names, advice=what_to_do.known,
            went_wrong_step=(attribution.step_label or names.label(attribution.step_span_id) or attribution.step_span_id)
            if attribution is not None and attribution.step_span_id else None,
            trace_url=web.trace_url.replace("{trace_id}", trace_id) if web.trace_url else None,
        )

    def severity_page(request: Request, params: dict[str, str]) -> Response:
        since, until = parse_time(params.get("since"), "since"), parse_time(params.get("until"), "until")
        chosen = (params.get("model") or "").strip() or None
        size = web.overview_models
        number = page_number(params, size)
        counts = store.model_counts_page(since=since, until=until, model=None if chosen == UNKNOWN_MODEL else chosen,
                                         unnamed=chosen == UNKNOWN_MODEL, limit=size, offset=(number - 1) * size)
        groups = evidence_of_page(counts, severity_of, web.severity_min_outcomes)
        adopted = adopted_overrides(groups[ALL_MODELS], dict(overrides))
        lines = config_lines(adopted) if adopted else None
        listed = 1 if chosen else counts.model_count
        return render("severity.html", groups=groups, min_outcomes=web.severity_min_outcomes, lines=lines,
                      chosen=chosen or "", page=number, pages=max(1, -(-listed // size)), size=size,
                      total_models=counts.model_count, shown={"model": chosen or "", "since": params.get("since") or "",
                                                              "until": params.get("until") or ""})

    def modes_page(request: Request, params: dict[str, str]) -> Response:
        return render("modes.html", modes=list(taxonomy.MODES.values()), advice=what_to_do.what_to_do,
                      severity={m: severity_of(m) for m in taxonomy.MODE_IDS})

    pages: list[tuple[str, Callable[[Request, dict[str, str]], Response]]] = [
        ("/", overview), ("/runs", runs_list), ("/runs/{trace_id}", run_page), ("/severity", severity_page),
        ("/modes", modes_page)]
    if sessions is not None:
        from mast_otel.processors.web.conversations import session_pages

        pages += session_pages(render, sessions, store, config, BadFilter, page_number)
    for path, handler in pages:
        router.add_api_route(path, page(handler), methods=["GET"], response_class=HTMLResponse)

    @router.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> Response:
        target = _safe_next(request.query_params.get("next"))
        if token is None:
            return RedirectResponse(target, status_code=303)
        return render("login.html", target=target, error=None, logged_in=False)

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        target = _safe_next((form.get("next") or ["/"])[0])
        if token is None:
            return RedirectResponse(target, status_code=303)
        given = (form.get("token") or [""])[0].strip().encode("utf-8", "surrogateescape")
        denied = throttle.judge(client_address(request), "/login", hmac.compare_digest(given, token.get_secret_value().encode("utf-8")))
        if denied is not None:
            error = "That is not the API token." if not denied.throttled else (
                f"Too many wrong tokens from this address: try again in {denied.retry_after} s.")
            page = render("login.html", status_code=denied.status, target=target, error=error, logged_in=False)
            page.headers.update({"Retry-After": str(denied.retry_after)} if denied.throttled else {})
            return page
        lifetime = int(web.session_hours * 3600)
        response = RedirectResponse(target, status_code=303)
        secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"
        response.set_cookie(SESSION_COOKIE, session_value(token, int(time.time()) + lifetime), max_age=lifetime,
                            httponly=True, samesite="strict", secure=secure, path="/")
        return response

    @router.post("/logout")
    def logout(request: Request) -> Response:
        cookie = request.cookies.get(SESSION_COOKIE)
        expires = session_expiry(cookie, token) if token is not None and cookie else None
        if cookie and expires is not None and expires > time.time():  # the session ends here, not only in this browser
            throttle.revoked_sessions.revoke(cookie, expires)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    return router
