"""End to end with real components: agent runs sent through the instrumentation to an
in-process processor, scraped by a real Prometheus running the project's rules, alerts routed
by a real Alertmanager (the project's routing) to a webhook this test serves.

The rules run with every time window and ``for:`` shortened by ``TIME_FACTOR`` (a test copy;
expressions and thresholds are unchanged), so half an hour of production time takes a minute.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from tests.tools import require_tool
from obsfiles import DEPLOY, GRAFANA, RULES_DIR, dashboards, load_yaml

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

TIME_FACTOR = 30
DEADLINE_SECONDS = 150
SPIKY, HEALTHY = "gpt-4o-mini", "gpt-4o"
SESSION_TURNS = 4  # turns per conversation in the spike waves (the processor keeps one fewer)
SESSION_ALERT = "MastSessionHistoryLostSpiking"  # judged per service: no model or agent label
RUNBOOKS = "https://docs.example.test/mast-otel"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION = re.compile(r"(\[|offset |for: )(\d+)([smhd])\b")


def compress(text: str, factor: int = TIME_FACTOR) -> str:
    """Every range, offset and ``for:`` duration in ``text`` divided by ``factor``."""
    def shorter(m: re.Match) -> str:
        return f"{m.group(1)}{max(1, int(m.group(2)) * UNITS[m.group(3)] // factor)}s"
    return DURATION.sub(shorter, text)


# The history guard, recorded (alert rules) or expanded inline (the Grafana copies).
HISTORY = re.compile(r"((?:increase1d_offset30m|increase\(mast_(?:traces|sessions)_total\[1d\] offset 30m\)\)\)) >= )(\d+)")


def for_compressed_time(text: str, factor: int = TIME_FACTOR) -> str:
    """Rules as this test runs them: windows ``compress``ed, and the baseline's minimum history
    (a count of runs in a day) scaled down by the same factor, since a compressed day holds
    that many times fewer runs."""
    return compress(HISTORY.sub(lambda m: f"{m.group(1)}{-(-int(m.group(2)) // factor)}", text), factor)


def test_history_guard_scales_with_time():
    assert for_compressed_time("x:increase1d_offset30m >= 200 and rate(y[30m])", 30) == \
        "x:increase1d_offset30m >= 7 and rate(y[60s])"
    assert for_compressed_time("(sum by (m) (increase(mast_traces_total[1d] offset 30m))) >= 200", 30) == \
        "(sum by (m) (increase(mast_traces_total[2880s] offset 60s))) >= 7"
    assert for_compressed_time("(sum by (s) (increase(mast_sessions_total[1d] offset 30m))) >= 50", 30) == \
        "(sum by (s) (increase(mast_sessions_total[2880s] offset 60s))) >= 2"


def test_compress_shortens_windows_offsets_and_for_only():
    assert compress("rate(x[1d] offset 30m) > 0.20\nfor: 5m", 30) == "rate(x[2880s] offset 60s) > 0.20\nfor: 10s"


# --- a local HTTP double: alert webhook, OTLP sink for re-export, OpenAI-compatible judge ----

JUDGE_ANSWER = {"modes": [{"mode": f"FM-{c}.{i}", "detected": False, "confidence": 0.9, "steps": [], "rationale": "not shown"}
                          for c, n in ((1, 5), (2, 6), (3, 3)) for i in range(1, n + 1)]}


class Doubles(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.alerts: list[dict] = []
        self.judge_calls = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server: Doubles = self.server  # type: ignore[assignment]
        if self.path.startswith("/webhook/"):
            server.alerts.extend({**a, "receiver": self.path} for a in json.loads(body)["alerts"])
            return self._reply(b"{}", "application/json")
        if self.path.endswith("/v1/traces"):
            return self._reply(b"", "application/x-protobuf")
        if self.path.endswith("/chat/completions"):
            server.judge_calls += 1
            request = json.loads(body)
            answer = {"id": "chatcmpl-e2e", "object": "chat.completion", "created": int(time.time()), "model": request["model"],
                      "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": json.dumps(JUDGE_ANSWER)}}],
                      "usage": {"prompt_tokens": 900, "completion_tokens": 300, "total_tokens": 1200}}
            return self._reply(json.dumps(answer).encode(), "application/json")
        self.send_error(404)

    def _reply(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, check, deadline: float, interval: float = 1.0, explain=None):
    """Poll ``check`` until it returns something truthy; fail with ``what`` (and ``explain()``) at the deadline."""
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (httpx.HTTPError, OSError) as exc:
            last = exc
        time.sleep(interval)
    pytest.fail(f"timed out waiting for {what}; last: {last!r}" + (f"\n{explain()}" if explain else ""))


# --- real Prometheus and Alertmanager -------------------------------------------------------

@pytest.fixture
def doubles():
    server = Doubles()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _start(args: list[str], log: Path) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT)


@pytest.fixture
def processor(tmp_path, doubles):
    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.service.server import ProcessorServer

    config = ProcessorConfig.load(
        None,
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0},
        assembly={"grace_seconds": 0.5, "max_traces_in_flight": 10, "sweep_interval_seconds": 0.2},
        store={"path": tmp_path / "diagnoses.sqlite"},
        exporters={"otlp": [{"endpoint": f"{doubles.url}/v1/traces"}]},
        judge={"model": "openai/gpt-4o-mini", "api_base": f"{doubles.url}/v1", "api_key": "e2e-not-a-secret",
               "max_retries": 0},
        # Conversations longer than this lose their oldest turns: the dropped-turns panel has data.
        sessions={"max_turns": SESSION_TURNS - 1},
    )
    server = ProcessorServer(config)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def monitoring(tmp_path, processor, doubles):
    """Prometheus (project rules, time-compressed) and Alertmanager (project routing) on loopback."""
    prometheus = require_tool("prometheus")
    alertmanager = require_tool("prometheus-alertmanager", "alertmanager")
    am_port, prom_port = _free_port(), _free_port()

    routing = load_yaml(DEPLOY / "alertmanager" / "alertmanager.yml")
    routing["route"].update(group_wait="1s", group_interval="2s")
    for receiver in routing["receivers"]:
        for hook in receiver["webhook_configs"]:
            hook["url"] = f"{doubles.url}/webhook/{receiver['name']}"
    (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(routing))

    rules = tmp_path / "rules"
    rules.mkdir()
    for path in RULES_DIR.glob("*.yml"):
        (rules / path.name).write_text(for_compressed_time(path.read_text()))
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                   "external_labels": {"mast_runbook_url": RUNBOOKS, "mast_processor_url": processor.http_url}},
        "rule_files": [str(rules / "*.yml")],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
        "scrape_configs": [{"job_name": "mast-otel-processor", "static_configs": [{"targets": [f"127.0.0.1:{processor.http_port}"]}]}],
    }))
    procs = [
        _start([alertmanager, f"--config.file={tmp_path / 'alertmanager.yml'}", f"--storage.path={tmp_path / 'am'}",
                f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="], tmp_path / "alertmanager.log"),
        _start([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prom_port}"], tmp_path / "prometheus.log"),
    ]
    client = httpx.Client(base_url=f"http://127.0.0.1:{prom_port}", timeout=5)
    deadline = time.monotonic() + 30
    _wait("Prometheus to be ready", lambda: client.get("/-/ready").status_code == 200, deadline, 0.2)
    _wait("Alertmanager to be ready", lambda: httpx.get(f"http://127.0.0.1:{am_port}/-/ready").status_code == 200, deadline, 0.2)
    try:
        yield client
    finally:
        client.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


# --- agent runs through the instrumentation ---------------------------------------------------

def _llm(model: str, text: str, earlier: int = 0) -> None:
    """One model call; ``earlier`` exchanges of earlier turns sent along before the new message."""
    import litellm

    history = [{"role": role, "content": f"turn {k}"} for k in range(earlier) for role in ("user", "assistant")]
    litellm.completion(model=model, messages=[*history, {"role": "user", "content": text}], mock_response=text)


def healthy_run(i: int, model: str = HEALTHY, conversation_id: str | None = None, carried: int = 0) -> None:
    """A run that succeeds; with ``conversation_id``, one turn of that conversation, whose first
    model input carries ``carried`` earlier turns. A conversation whose turns carry none loses its
    history (FM-1.4 across turns) while every run is healthy on its own."""
    from mast_otel.instrumentation import agent_run, tool_call

    with agent_run("triage", max_steps=6, task="restart the crashing pod", conversation_id=conversation_id) as run:
        run.next_step()
        _llm(model, "look at the pod", earlier=carried)
        # Every fourth run re-reads the same pod a few times (step repetition) and still succeeds.
        for _ in range(3 if i % 4 == 0 else 1):
            with tool_call("kubectl_get", kind="read", arguments={"pod": f"api-{i}"}) as call:
                call.set_result("CrashLoopBackOff")
        run.next_step()
        _llm(model, "roll it")
        with tool_call("kubectl_rollout_restart", kind="write", arguments={"deployment": f"api-{i}"}) as call:
            call.set_result("restarted")
        run.next_step()
        with tool_call("check_rollout", kind="verify", arguments={"deployment": f"api-{i}"}) as call:
            call.set_result("all replicas ready")
            call.set_verification(True)
        _llm(model, "done")
        run.set_final_answer("restarted and verified")
        run.set_termination_reason("final_answer")
        run.set_claimed_success(True)
        run.set_outcome("success")


def spiking_run(i: int, flush, conversation_id: str | None = None) -> None:
    """One of three failing shapes: step budget exhausted while looping, an unverified write
    claimed done, a failed verification claimed done; with ``conversation_id``, one turn of it
    (carrying no earlier turn, as ``healthy_run``)."""
    from mast_otel.instrumentation import agent_run, tool_call
    from mast_otel.instrumentation.guards import GuardConfig, GuardRefusal

    shape = i % 3
    # The looping shape runs with the loop guard enforcing (the other guards off): its last re-read is
    # refused, which feeds the dashboards' guard panels; the run still ends at its budget, failed.
    loop_guard = GuardConfig(loop={"mode": "enforce"}, budget={"enabled": False}, verification={"enabled": False},
                             clarify_or_read_only={"enabled": False})
    with agent_run("triage", max_steps=3, task="restart the crashing pod", guards=loop_guard if shape == 0 else None,
                   conversation_id=conversation_id) as run:
        if shape == 0:
            for _ in range(4):
                run.next_step()
                _llm(SPIKY, "check again")
                try:
                    with tool_call("kubectl_get", kind="read", arguments={"pod": "api"}) as call:
                        call.set_result("CrashLoopBackOff")
                except GuardRefusal:
                    pass  # an agent would hand the refusal to the model
                flush()  # spans reach the processor while the run is still going: live detection
            run.set_termination_reason("max_steps")
            run.set_claimed_success(False)
        else:
            run.next_step()
            _llm(SPIKY, "roll it")
            with tool_call("kubectl_rollout_restart", kind="write", arguments={"deployment": f"api-{i}"}) as call:
                call.set_result("restarted")
            if shape == 2:
                run.next_step()
                with tool_call("check_rollout", kind="verify", arguments={"deployment": f"api-{i}"}) as call:
                    call.set_result("0/3 replicas ready")
                    call.set_verification(False)
            _llm(SPIKY, "done")
            run.set_final_answer("fixed")
            run.set_termination_reason("final_answer")
            run.set_claimed_success(True)
        run.set_outcome("failure")


class Traffic:
    """Agent runs sent through the instrumentation to the processor, wave after wave."""

    def __init__(self, processor) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        from mast_otel.instrumentation import setup_tracing

        self.url = processor.http_url
        self.provider = setup_tracing(self.url, service_name="sre-agent",
                                      tracer_provider=TracerProvider(resource=Resource.create({"service.name": "sre-agent"})))
        self.sent = 0
        self.kept = 0  # conversations that carry their history

    def wave(self, size: int = 6) -> None:
        """``size`` healthy runs on one model and ``size`` failing runs on the other, each model's the
        turns of conversations of ``SESSION_TURNS`` turns that lose their history."""
        for _ in range(size):
            conversation = self.sent // SESSION_TURNS
            healthy_run(self.sent, conversation_id=f"conv-{conversation}")
            spiking_run(self.sent, self.provider.force_flush, conversation_id=f"spiky-conv-{conversation}")
            self.sent += 1
        self.provider.force_flush()

    def healthy_wave(self, size: int = 3) -> None:
        """``size`` healthy runs on each model: the baseline both models are judged against; those on
        one model are the turns of one conversation that carries its history (the sessions' baseline)."""
        for turn in range(size):
            healthy_run(self.sent, HEALTHY, conversation_id=f"kept-{self.kept}", carried=turn)
            healthy_run(self.sent, SPIKY)
            self.sent += 1
        self.kept += 1
        self.provider.force_flush()

    def late_span(self) -> None:
        """A span of a run that was already diagnosed (counted as late, the run re-diagnosed)."""
        from opentelemetry.trace import use_span

        from mast_otel.instrumentation import agent_run, tool_call

        with agent_run("triage", task="finished before its last span") as run:
            parent = run.span
        self.provider.force_flush()
        _wait("the run to be diagnosed", lambda: httpx.get(f"{self.url}/v1/diagnoses/{parent.get_span_context().trace_id:032x}").status_code == 200,
              time.monotonic() + 20, 0.2)
        with use_span(parent, end_on_exit=False), tool_call("kubectl_get", kind="read"):
            pass
        self.provider.force_flush()

    def malformed_span(self) -> None:
        """A span with a broken trace id: rejected with a reason, the request still answered."""
        bad = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [
            {"traceId": "not-hex", "spanId": "00f067aa0ba902b7", "name": "broken", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}
        response = httpx.post(f"{self.url}/v1/traces", json=bad)
        assert response.status_code in (200, 400), response.text


# --- the test ----------------------------------------------------------------------------------

def _explain(prometheus: httpx.Client, doubles) -> str:
    """What Prometheus sees when the pages do not come: its alerts and the spike inputs per model."""
    lines = [f"delivered: {[(a['labels'].get('alertname'), a['labels'].get('model'), a['status']) for a in doubles.alerts]}"]
    alerts = prometheus.get("/api/v1/alerts").json()["data"]["alerts"]
    lines.append(f"prometheus alerts: {[(a['labels'].get('alertname'), a['labels'].get('model'), a['state']) for a in alerts]}")
    for query in ("sum by (model) (mast_traces_total)", "sum by (model, mode) (mast_failure_mode_traces_total)",
                  "service:mast_session_history_lost_ratio:rate30m", "service:mast_sessions:increase30m",
                  "service:mast_sessions:increase1d_offset30m"):
        result = prometheus.get("/api/v1/query", params={"query": query}).json()["data"]["result"]
        lines.append(f"{query}: {[(r['metric'], r['value'][1]) for r in result]}")
    return "\n".join(lines)


def _substitute(expr: str) -> str:
    for name, value in (("$__rate_interval", "1m"), ("$__range", "10m")):
        expr = expr.replace(name, value)
    return re.sub(r"\$\{?(service|agent|model|instance)\}?", ".*", expr)


def _has_data(client: httpx.Client, target: dict) -> bool:
    expr = _substitute(target["expr"])
    if target.get("instant"):
        result = client.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
    else:
        now = time.time()
        result = client.get("/api/v1/query_range", params={"query": expr, "start": now - 180, "end": now, "step": "2"}).json()["data"]["result"]
    return any(v[1] not in ("NaN",) for series in result for v in ([series["value"]] if "value" in series else series["values"]))


def _baseline_runs(prometheus: httpx.Client) -> dict[str, float]:
    result = prometheus.get("/api/v1/query", params={"query": "service_agent_model:mast_traces:increase1d_offset30m"}).json()
    return {r["metric"]["model"]: float(r["value"][1]) for r in result["data"]["result"]}


def _baseline_sessions(prometheus: httpx.Client) -> float:
    result = prometheus.get("/api/v1/query", params={"query": 'service:mast_sessions:increase1d_offset30m{service_name="sre-agent"}'}).json()
    return max((float(r["value"][1]) for r in result["data"]["result"]), default=0.0)


def test_failure_spike_pages_for_the_spiking_model_only_and_every_panel_has_data(processor, monitoring, doubles):
    traffic = Traffic(processor)
    # Healthy traffic on both models until each has a baseline with enough history (the spike
    # alerts stay quiet on a cold start): with windows compressed 30x the baseline day ends a
    # minute ago, so this takes a little over a minute.
    rules = for_compressed_time((RULES_DIR / "mast-alerts.yml").read_text())
    history = int(HISTORY.search(rules).group(2))
    session_history = int(re.search(r"service:mast_sessions:increase1d_offset30m >= (\d+)", rules).group(1))

    def baseline_ready() -> bool:
        runs = _baseline_runs(monitoring)
        if min(runs.get(SPIKY, 0), runs.get(HEALTHY, 0)) >= history and _baseline_sessions(monitoring) >= session_history:
            return True
        traffic.healthy_wave()
        time.sleep(1)
        return False

    _wait("a baseline with enough history for both models and the service's sessions", baseline_ready, time.monotonic() + 150,
          explain=lambda: f"baseline runs per model: {_baseline_runs(monitoring)}, sessions: {_baseline_sessions(monitoring)}")
    assert not [a for a in doubles.alerts if a["status"] == "firing"], "an alert fired on healthy traffic"
    # Then a burst above the minimum-traffic guard: the model's own baseline starts to include
    # this spike after a minute, so the pages must be due well before then even on a slow machine.
    traffic.wave(24)
    traffic.late_span()
    traffic.malformed_span()
    deadline = time.monotonic() + DEADLINE_SECONDS
    wanted = {"MastTerminationFailuresSpiking", "MastVerificationFailuresSpiking"}

    def delivered() -> set[str]:
        return {a["labels"]["alertname"] for a in doubles.alerts if a["status"] == "firing" and (
            a["labels"].get("model") == SPIKY or a["labels"]["alertname"] == SESSION_ALERT)} & (wanted | {SESSION_ALERT})

    def spike_goes_on() -> bool:
        """Traffic keeps flowing (as in production) until every page arrives."""
        if delivered() == wanted | {SESSION_ALERT}:
            return True
        traffic.wave()
        return False

    _wait("the three alerts delivered through Alertmanager", spike_goes_on, deadline, explain=lambda: _explain(monitoring, doubles))
    # The conversations that lost their history page once, for their service (sessions carry no model).
    lost = [a for a in doubles.alerts if a["labels"]["alertname"] == SESSION_ALERT]
    assert {(a["labels"]["service_name"], a["receiver"]) for a in lost} == {("sre-agent", "/webhook/mast-pager")}
    assert all("model" not in a["labels"] and "agent" not in a["labels"] for a in lost)
    assert lost[0]["annotations"]["runbook"] == f"{RUNBOOKS}/observability.md#{SESSION_ALERT.lower()}"
    sessions_link = re.search(rf"{re.escape(processor.http_url)}/v1/sessions\?\S+?FM-1\.4", lost[0]["annotations"]["description"])
    assert sessions_link, lost[0]["annotations"]["description"]
    sessions = httpx.get(sessions_link.group(0)).json()
    assert sessions["total"] > 0 and all(s["service_name"] == "sre-agent" and "FM-1.4" in s["modes"] for s in sessions["items"])
    assert not any(s["session_id"].startswith("kept-") for s in sessions["items"])  # those carried their history
    for alert in doubles.alerts:
        if alert["labels"]["alertname"] in wanted:
            assert alert["receiver"] == "/webhook/mast-pager"
            assert alert["labels"]["agent"] == "triage" and alert["labels"]["service_name"] == "sre-agent"
            assert alert["annotations"]["runbook"] == f"{RUNBOOKS}/observability.md#{alert['labels']['alertname'].lower()}"
    # The description's API link, built from the processor URL label, lists the spiking model's runs.
    verification = next(a for a in doubles.alerts if a["labels"]["alertname"] == "MastVerificationFailuresSpiking")
    link = re.search(rf"{re.escape(processor.http_url)}/v1/diagnoses\?\S+?FM-3\.3", verification["annotations"]["description"])
    assert link, verification["annotations"]["description"]
    listed = httpx.get(link.group(0)).json()
    assert listed["total"] > 0 and {d["model"] for d in listed["items"]} == {SPIKY}

    # Every Prometheus query of every bundled dashboard returns data (Tempo's table cannot run here).
    targets = [(name, p["title"], t) for name, board in dashboards().items() for p in board["panels"]
               for t in p.get("targets", []) if "expr" in t]
    missing = lambda: [f"{n}: {title} [{t['refId']}]" for n, title, t in targets if not _has_data(monitoring, t)]  # noqa: E731
    _wait("every panel query to return data", lambda: not missing(), deadline, explain=lambda: "\n".join(missing()))
    # The conversations panels read what the processor found across turns: sessions that lost their history.
    scraped = {q: monitoring.get("/api/v1/query", params={"query": q}).json()["data"]["result"] for q in (
        'sum by (service_name, mode) (mast_session_failure_mode_total)', "sum by (reason) (mast_session_turns_dropped_total)")}
    assert {(r["metric"]["service_name"], r["metric"]["mode"]) for r in scraped['sum by (service_name, mode) (mast_session_failure_mode_total)']} \
        == {("sre-agent", "FM-1.4")}
    assert {r["metric"]["reason"] for r in scraped["sum by (reason) (mast_session_turns_dropped_total)"]} == {"max_turns"}

    # The Grafana-managed rules (expanded expressions) select the same model Prometheus fired for.
    grafana_rules = {r["title"]: r for g in load_yaml(GRAFANA / "provisioning" / "alerting" / "mast-otel-alerts.yaml")["groups"] for r in g["rules"]}
    for name in wanted:
        expr = for_compressed_time(grafana_rules[name]["data"][0]["model"]["expr"])
        result = monitoring.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
        assert {s["metric"]["model"] for s in result} == {SPIKY}, name
    expr = for_compressed_time(grafana_rules[SESSION_ALERT]["data"][0]["model"]["expr"])
    result = monitoring.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
    assert {s["metric"]["service_name"] for s in result} == {"sre-agent"}

    # Nothing fires for the healthy model: neither delivered nor pending/firing in Prometheus.
    alerts = monitoring.get("/api/v1/alerts").json()["data"]["alerts"]
    assert not [a for a in alerts if a["labels"].get("model") == HEALTHY]
    assert not [a for a in doubles.alerts if a["labels"].get("model") == HEALTHY]
    assert doubles.judge_calls > 0
