"""The web view over HTTP without a browser: redaction, bounded overview, filters, severity, sessions."""

from __future__ import annotations

import re
import time

import httpx
import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from pydantic import SecretStr

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.auth.tokens import session_valid, session_value
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.web.routes import build_router
from mast_otel.wire import attributes as A
from tests.service.support import emit_run, make_config, provider_for, running, wait_for

SECRET = "sk-proj-Zq81kLmN0pQrStUvWxYz4455aa"


def exporter_for(server) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces")


def test_a_secret_in_content_never_reaches_the_run_page(tmp_path):
    with running(make_config(tmp_path)) as server:
        provider = provider_for(exporter_for(server))
        tracer = provider.get_tracer("tests.web")
        root = tracer.start_span("invoke_agent triage", attributes={
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: "triage",
            A.MAST_RUN_FINAL_ANSWER: f"rotated the key; the new one is {SECRET}",
            A.MAST_RUN_TERMINATION_REASON: "final_answer"})
        from opentelemetry import trace

        with tracer.start_as_current_span("execute_tool read_env", context=trace.set_span_in_context(root), attributes={
                A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "read_env",
                A.GEN_AI_TOOL_CALL_RESULT: f"OPENAI_API_KEY={SECRET}"}):
            pass
        root.end()
        trace_id = format(root.get_span_context().trace_id, "032x")
        wait_for(lambda: server.store.get(trace_id))
        assert server.ingest.get_run(trace_id) is not None  # held: the page shows content excerpts
        html = httpx.get(f"{server.http_url}/runs/{trace_id}").text
        provider.shutdown()
    assert "[REDACTED:" in html  # the excerpts are there, redacted
    assert SECRET not in html and SECRET[3:] not in html and SECRET[:12] not in html


def _diagnoses(models: int, runs_each: int = 1):
    now = time.time()
    for i in range(models):
        for j in range(runs_each):
            trace_id = f"{i:016x}{j:016x}"
            findings = [Finding("FM-1.3", 0.9, "looped", (f"{i:016x}",))] if (i + j) % 3 == 0 else []
            yield Diagnosis(trace_id=trace_id, findings=findings, fatal=False, model=f"model-{i:05d}",
                            outcome="failure" if j % 2 else "success", diagnosed_at=now - i - j / 1000), None


def web_client(store, **web) -> TestClient:
    app = FastAPI()
    app.include_router(build_router(store, None, ProcessorConfig(web=web)))
    return TestClient(app)


def test_overview_stays_bounded_with_many_models(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many(_diagnoses(10_000))
    store.save_many(_diagnoses(3, runs_each=40))  # three busy models come first
    client = web_client(store, overview_models=20, overview_window=20_000)
    response = client.get("/")
    assert response.status_code == 200
    models = re.findall(r'<tr data-model="([^"]+)"', response.text.split('id="models"')[1].split("</table>")[0])
    assert len(models) == 21 and models[:3] == ["model-00000", "model-00001", "model-00002"]
    assert models[-1] == "9980 other models"
    assert len(response.content) < 250_000, len(response.content)  # every model: megabytes
    second = client.get("/?page=2")
    shown = re.findall(r'<tr data-model="(model-[^"]+)"', second.text.split('id="models"')[1].split("</table>")[0])
    assert len(shown) == 20 and not set(shown) & set(models)
    runs = [int(x) for x in re.findall(r'data-field="runs">(\d+)<', response.text)]
    assert sum(runs) == 10_000 + 3 * 40 - 3  # models 0-2 had one run each before: same trace ids, upserted
    store.close()


def test_runs_page_filters_pages_and_searches(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many(_diagnoses(2, runs_each=30))
    client = web_client(store, runs_page_size=10)
    page = client.get("/runs?model=model-00001&outcome=failure")
    assert "15 runs match; page 1 of 2." in page.text
    assert len(re.findall(r'<tr data-trace-id=', page.text)) == 10
    assert 'id="next-page"' in page.text and "model=model-00001" in page.text.split('id="next-page"')[0].rsplit("href", 1)[1]
    assert len(re.findall(r'<tr data-trace-id=', client.get("/runs?model=model-00001&outcome=failure&page=2").text)) == 5
    assert "5 runs match" in client.get("/runs?mode=FM-1.3&model=model-00001&outcome=success").text
    found = client.get(f"/runs?q={'0' * 15}1{'0' * 16}", follow_redirects=False)
    assert found.status_code == 303 and found.headers["location"] == f"/runs/{'0' * 15}1{'0' * 16}"
    assert client.get(f"/runs?q={'f' * 32}").status_code == 404
    for bad in ("mode=FM-9.9", "outcome=maybe", "since=yesterday", "fatal=perhaps", "page=0", "q=xyz"):
        answer = client.get(f"/runs?{bad}")
        assert answer.status_code == 400 and 'id="error"' in answer.text, bad
    store.close()


def test_severity_endpoint_reads_outcomes_and_prints_an_adoptable_line(tmp_path):
    with running(make_config(tmp_path)) as server:
        provider = provider_for(exporter_for(server))
        looping = (("kubectl_get", "a"),) * 3  # the test detector's FM-1.3
        ids = [emit_run(provider, tools=looping, outcome="failure")[0] for _ in range(12)]
        ids += [emit_run(provider, outcome="success")[0] for _ in range(12)]
        wait_for(lambda: all(server.store.get(t) for t in ids))
        body = httpx.get(f"{server.http_url}/v1/severity").json()
        page = httpx.get(f"{server.http_url}/severity").text
        few = httpx.get(f"{server.http_url}/v1/severity", params={"min_outcomes": 100}).json()
        provider.shutdown()
    everyone = body["groups"][0]
    assert everyone["model"] == "(all models)" and [g["model"] for g in body["groups"]] == ["(all models)", "gpt-4o"]
    looped = next(m for m in everyone["modes"] if m["mode"] == "FM-1.3")
    assert (looped["in_failed_runs"], looped["failed_runs"], looped["in_successful_runs"], looped["successful_runs"]) == (12, 12, 0, 12)
    assert looped["lift_low"] > 1 and looped["suggested"] == "fatal" and looped["severity"] == "recoverable"
    low, high = looped["prevalence_failed_interval"]
    assert low < looped["prevalence_failed"] == high == 1.0
    assert body["severity_overrides"] == {"FM-1.3": "fatal"}
    assert ProcessorConfig(**yaml.safe_load("detection:\n  " + body["config_line"])).detection.severity_overrides == {"FM-1.3": "fatal"}
    assert body["config_line"] in page.replace("&#34;", '"')
    assert next(m for m in few["groups"][0]["modes"] if m["mode"] == "FM-1.3")["lift"] is None


def test_session_cookie_is_signed_for_the_token_and_expires():
    token = SecretStr("s3cret-token")
    value = session_value(token, int(time.time()) + 60)
    assert session_valid(value, token)
    assert not session_valid(value, SecretStr("another-token"))
    assert not session_valid(session_value(token, int(time.time()) - 1), token)
    expires, signed = value.split(".", 1)
    assert not session_valid(f"{int(expires) + 3600}.{signed}", token)  # extending it breaks the signature
    assert session_value(token, int(expires)) != session_value(token, int(expires))  # each login its own session
    assert not session_valid(None, token) and not session_valid("garbage", token)
    assert session_valid(None, None)  # no token configured: nothing to check


@pytest.mark.parametrize("path", ["/", "/runs", "/severity", f"/runs/{'a' * 32}"])
def test_with_a_token_browsers_are_sent_to_log_in_and_api_clients_get_401(tmp_path, path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    app = FastAPI()
    app.include_router(build_router(store, None, ProcessorConfig(receiver={"api_token": "t0ken"})))
    client = TestClient(app)
    browser = client.get(path, headers={"accept": "text/html"}, follow_redirects=False)
    assert browser.status_code == 303 and browser.headers["location"].startswith("/login?next=")
    assert client.get(path, headers={"accept": "application/json"}).status_code == 401
    assert client.get(path, headers={"authorization": "Bearer t0ken"}).status_code in (200, 404)
    store.close()


def test_overview_time_range_narrows_the_counts(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many(_diagnoses(4, runs_each=3))
    client = web_client(store)
    everything = client.get("/").text
    assert sum(int(x) for x in re.findall(r'data-field="runs">(\d+)<', everything)) == 12
    later = client.get("/", params={"since": str(int(time.time()) + 3600)}).text
    assert "No run started in this time range" in later and 'data-field="runs"' not in later
    assert client.get("/", params={"until": "not-a-time"}).status_code == 400
    store.close()


def test_run_page_links_to_the_trace_in_the_tracing_ui_when_configured(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many(_diagnoses(1))
    trace_id = f"{0:016x}{0:016x}"
    linked = web_client(store, trace_url="http://jaeger.local:16686/trace/{trace_id}").get(f"/runs/{trace_id}")
    assert f'data-field="trace-url" href="http://jaeger.local:16686/trace/{trace_id}"' in linked.text
    assert 'data-field="trace-url"' not in web_client(store).get(f"/runs/{trace_id}").text
    store.close()


@pytest.mark.parametrize("url", ["jaeger.local/trace/{trace_id}", "http://jaeger.local/trace/"])
def test_a_trace_url_without_scheme_or_placeholder_is_refused(url):
    with pytest.raises(ValueError, match="web.trace_url"):
        ProcessorConfig(web={"trace_url": url})


def test_an_unknown_run_is_a_page_for_a_browser_and_json_for_an_api_client(tmp_path):
    """Grafana's run links open in a browser: a 404 there is a page with links, not raw JSON."""
    store = DiagnosisStore(tmp_path / "d.sqlite")
    client = web_client(store)
    browser = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
    for path, why in ((f"/runs/{'0' * 32}", f"no diagnosis for trace {'0' * 32}"), ("/runs/not-a-trace", "32 hex")):
        page = client.get(path, headers=browser)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), path
        assert 'id="error"' in page.text and why in page.text and 'href="/runs"' in page.text
        api = client.get(path, headers={"accept": "application/json"})
        assert api.status_code == 404 and why in api.json()["detail"], path
    store.close()


def test_a_long_run_page_keeps_its_evidence_rows_and_bounds_findings(tmp_path):
    from mast_otel.processors.service.store.run_steps import RunStep, capped_steps_json

    steps = [RunStep(f"{i:016x}", None if i == 0 else f"{0:016x}", "agent" if i == 0 else "tool", "execute_tool probe_" + "x" * 400,
                     i, i + 1, tool_name="probe_" + "x" * 400, tool_kind="read") for i in range(2000)]
    middle = f"{1000:016x}"
    findings = [Finding("FM-1.3", 0.9, "looped on " + "y" * 5000, (middle,))] + [
        Finding("FM-1.3", 0.9, f"looped again {i}", (f"{i:016x}",)) for i in range(1, 60)]
    diagnosis = Diagnosis(trace_id="ab" * 16, findings=findings, fatal=False, model="m", diagnosed_at=time.time())
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many([(diagnosis, None)], {diagnosis.trace_id: capped_steps_json(steps, 64 * 1024, {middle})})
    client = web_client(store, timeline_rows=40)
    html = client.get(f"/runs/{diagnosis.trace_id}").text
    drawn = re.findall(r'<div class="tl-row [^"]*" id="span-([0-9a-f]{16})"', html)
    assert len(drawn) <= 40 and drawn[0] == steps[0].span_id and middle in drawn  # the evidence row, though in the middle
    assert "not kept in the stored step list" in html and re.search(r'href="\?steps=\d+-\d+"', html)
    assert "y" * 601 not in html and "x" * 121 not in html  # explanations and names cut on the page
    assert 'data-more-findings="40"' in html  # 20 of 60 findings listed
    assert client.get(f"/runs/{diagnosis.trace_id}", params={"steps": "0-5"}).status_code == 400
    store.close()


class _Held:
    """Stands in for the processor's run holder: the page shows excerpts while it holds the run."""

    def __init__(self, run) -> None:
        self.run = run

    def get_run(self, trace_id: str):
        return self.run if trace_id == self.run.trace_id else None


def test_run_page_says_which_calls_got_their_content_from_log_records(tmp_path):
    from mast_otel.processors.model import Role, Run, Span

    trace_id = "ab" * 16
    agent = Span(trace_id, "a" * 16, None, "invoke_agent sre", 1, 100, role=Role.AGENT, agent_name="sre")
    joined = Span(trace_id, "b" * 16, agent.span_id, "chat m", 10, 20, role=Role.LLM, model="m",
                  output_text="restarting pod a", content_source="logs")
    own = Span(trace_id, "c" * 16, agent.span_id, "chat m", 30, 40, role=Role.LLM, model="m", output_text="done")
    run = Run.from_spans(trace_id, [agent, joined, own])
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save(Diagnosis(trace_id=trace_id, findings=[], fatal=False, model="m", diagnosed_at=time.time()))
    app = FastAPI()
    app.include_router(build_router(store, _Held(run), ProcessorConfig()))
    html = TestClient(app).get(f"/runs/{trace_id}").text
    rows = dict(re.findall(r'id="span-([0-9a-f]{16})"(.*?)<div class="tl-bar">', html, re.S))
    assert 'data-content-source="logs"' in rows[joined.span_id] and "content from log records" in rows[joined.span_id]
    assert "content-source" not in rows[own.span_id]  # content on the span itself: nothing to say
    store.close()
