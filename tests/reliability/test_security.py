"""Security: tokens on ingest and API (constant-time), no message content in logs, metrics or
API answers, and redaction of what reaches an external judge, end to end."""

from __future__ import annotations

import json

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from soak import ReplyServer, RunFactory, ServeProcess, post_runs, scrape, stored_total, total, wait_for

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.auth import tokens as auth
from mast_otel.processors.service.server import ProcessorServer

INGEST, API = "ingest-token-5f1c0e", "api-token-93ab7d"
# Content the agent captured: a marker that is no secret, and an API key that is one.
MARKER = "zebra-quartz-7731"
API_KEY = "sk-proj-Q9vX2mLp7RtY4wZk8NbC3dFh"
CONTENT = f"{MARKER} restart checkout with key {API_KEY}"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    path = tmp_path_factory.mktemp("auth")
    config = ProcessorConfig(receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "ingest_token": INGEST, "api_token": API,
                                       "auth_failures": {"burst": 1000}},  # these tests try many wrong tokens
                             store={"path": str(path / "store.sqlite")})
    with ProcessorServer(config) as server:
        yield server


@pytest.fixture(scope="module")
def one_run() -> bytes:
    return RunFactory(1).run()[0]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("headers", [{}, bearer("wrong"), bearer(API), bearer(INGEST + "x"), bearer(INGEST[:-1]),
                                     {"Authorization": INGEST}, {"Authorization": "Basic " + INGEST},
                                     {"Authorization": "Bearer caf\u00e9"}])
def test_ingest_refuses_missing_or_wrong_tokens(guarded, one_run, headers):
    encoded = {k: v.encode("latin-1") for k, v in headers.items()}
    response = httpx.post(f"{guarded.http_url}/v1/traces", content=one_run,
                          headers={"Content-Type": "application/x-protobuf", **encoded})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


def test_ingest_accepts_its_token_and_the_api_only_its_own(guarded, one_run):
    url = guarded.http_url
    ok = httpx.post(f"{url}/v1/traces", content=one_run, headers={"Content-Type": "application/x-protobuf", **bearer(INGEST)})
    assert ok.status_code == 200 and ExportTraceServiceResponse.FromString(ok.content).partial_success.rejected_spans == 0
    for path in ("/v1/diagnoses", "/v1/diagnoses/" + "ab" * 16, "/"):
        assert httpx.get(url + path).status_code == 401
        assert httpx.get(url + path, headers=bearer(INGEST)).status_code == 401  # exporter credentials cannot read
        assert httpx.get(url + path, headers=bearer(API)).status_code in (200, 404)
    outcome = {"trace_id": "ab" * 16, "outcome": "success"}
    assert httpx.post(f"{url}/v1/outcomes", json=outcome, headers=bearer(INGEST)).status_code == 401
    assert httpx.post(f"{url}/v1/outcomes", json=outcome, headers=bearer(API)).status_code in (200, 202)


def test_grpc_ingest_requires_the_token(guarded, one_run):
    request = ExportTraceServiceRequest.FromString(one_run)
    with grpc.insecure_channel(f"127.0.0.1:{guarded.grpc_port}") as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                     request_serializer=ExportTraceServiceRequest.SerializeToString,
                                     response_deserializer=ExportTraceServiceResponse.FromString)
        for metadata in ((), (("authorization", "Bearer wrong"),), (("authorization", f"Bearer {API}"),)):
            with pytest.raises(grpc.RpcError) as refused:
                export(request, metadata=metadata, timeout=10)
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        export(request, metadata=(("authorization", f"Bearer {INGEST}"),), timeout=10)


def test_tokens_are_compared_in_constant_time(monkeypatch):
    calls = []
    real = auth.hmac.compare_digest
    monkeypatch.setattr(auth.hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    from pydantic import SecretStr

    assert auth.authorized(f"Bearer {INGEST}", SecretStr(INGEST)) and not auth.authorized("Bearer nope", SecretStr(INGEST))
    assert len(calls) == 2


JUDGE_ANSWER = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"failure_modes": []}'}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}).encode()


@pytest.mark.timeout(180)
def test_content_stays_out_of_logs_metrics_and_api_and_reaches_the_judge_redacted(tmp_path):
    factory = RunFactory(4, capture_content=True, secret=CONTENT)
    body = factory.run()[0]
    assert MARKER.encode() in body and API_KEY.encode() in body  # the agent really sent content
    with ReplyServer(JUDGE_ANSWER, "application/json") as fake_judge:
        judge = {"model": "openai/gpt-4o-mini", "api_base": f"http://127.0.0.1:{fake_judge.port}/v1",
                 "api_key": "sk-judge-credential-0000000000", "sample_rate": 1.0, "max_retries": 0}
        with ServeProcess(tmp_path, {"log_level": "DEBUG", "judge": judge}) as serve:
            sent = post_runs(serve.url, factory, 12)
            wait_for(lambda: stored_total(serve.url) >= len(sent.traces_acked), 30)
            wait_for(lambda: total(scrape(serve.url), "mast_judge_requests_total") > 0, 60)
            bad = body.replace(b"\x12\x08", b"\x12\x03", 1)  # one span id cut short: rejected with a reason
            httpx.post(f"{serve.url}/v1/traces", content=bad, headers={"Content-Type": "application/x-protobuf"})
            metrics_text = httpx.get(f"{serve.url}/metrics").text
            api_text = httpx.get(f"{serve.url}/v1/diagnoses", params={"limit": 100}).text
    log = serve.log()
    assert "DEBUG" in log  # DEBUG logging was on
    for text in (log, metrics_text, api_text):
        assert MARKER not in text and API_KEY not in text and "sk-judge-credential" not in text
    judged = b"".join(fake_judge.bodies).decode()
    assert fake_judge.bodies and MARKER in judged  # the judge saw the content...
    assert API_KEY not in judged and "[REDACTED:api_key]" in judged  # ...with the secret redacted


def test_api_docs_and_schema_ask_for_the_api_token(guarded):
    url = guarded.http_url
    for path in ("/docs", "/openapi.json"):
        for headers in ({}, bearer("wrong"), bearer(INGEST)):
            refused = httpx.get(url + path, headers=headers)
            assert refused.status_code == 401 and "paths" not in refused.text, path
    assert "/v1/diagnoses" in httpx.get(f"{url}/openapi.json", headers=bearer(API)).json()["paths"]
    assert "swagger-ui" in httpx.get(f"{url}/docs", headers=bearer(API)).text
    assert httpx.get(f"{url}/docs/assets/swagger-ui.css").status_code == 200  # Swagger UI's own files stay open


@pytest.fixture
def throttled(tmp_path):
    config = ProcessorConfig(receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "ingest_token": INGEST, "api_token": API,
                                       "auth_failures": {"burst": 3, "per_minute": 1}},
                             store={"path": str(tmp_path / "store.sqlite")})
    with ProcessorServer(config) as server:
        yield server


def from_address(address: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (any of 127.0.0.0/8 reaches the server)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10)


def test_wrong_tokens_are_throttled_per_address_across_connections_and_logged(throttled, one_run, caplog):
    url = throttled.http_url
    ingest = {"Content-Type": "application/x-protobuf"}
    statuses = []
    for attempt in range(5):  # a new connection each time: the count follows the address, not the connection
        with from_address("127.0.0.1") as client:
            statuses.append(client.post(f"{url}/v1/traces", content=one_run, headers={**ingest, **bearer(f"guess-{attempt}")}))
    assert [r.status_code for r in statuses] == [401, 401, 401, 429, 429]
    assert int(statuses[-1].headers["retry-after"]) >= 1
    with from_address("127.0.0.1") as client:  # while throttled, even the right token is not looked at
        assert client.post(f"{url}/v1/traces", content=one_run, headers={**ingest, **bearer(INGEST)}).status_code == 429
        assert client.get(f"{url}/v1/diagnoses", headers=bearer(API)).status_code == 429
        login = client.post(f"{url}/login", data={"token": API, "next": "/"})
        assert login.status_code == 429 and "retry-after" in login.headers
    with from_address("127.0.0.2") as client:  # another address is not affected
        assert client.post(f"{url}/v1/traces", content=one_run, headers={**ingest, **bearer(INGEST)}).status_code == 200
        assert client.get(f"{url}/v1/diagnoses", headers=bearer(API)).status_code == 200
        assert client.get(f"{url}/v1/diagnoses", headers=bearer("wrong")).status_code == 401
    with grpc.insecure_channel(f"127.0.0.1:{throttled.grpc_port}") as channel:  # gRPC shares the address's count
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                     request_serializer=ExportTraceServiceRequest.SerializeToString,
                                     response_deserializer=ExportTraceServiceResponse.FromString)
        with pytest.raises(grpc.RpcError) as refused:
            export(ExportTraceServiceRequest.FromString(one_run), metadata=(("authorization", f"Bearer {INGEST}"),), timeout=10)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    failures = [r.getMessage() for r in caplog.records if "authentication failed" in r.getMessage()]
    assert failures.count("authentication failed from 127.0.0.1 on /v1/traces") == 3  # the refusals after are not logged one by one
    assert any("throttling authentication from 127.0.0.1" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if "guess-" in r.getMessage() or INGEST in r.getMessage() or API in r.getMessage()]


def test_wrong_session_cookies_and_login_attempts_count_too(throttled):
    url = throttled.http_url
    with from_address("127.0.0.3") as client:
        answers = [client.post(f"{url}/login", data={"token": f"guess-{i}", "next": "/"}).status_code for i in range(2)]
        answers.append(client.get(f"{url}/runs", headers={"Cookie": f"{auth.SESSION_COOKIE}=99999999999.forged"}).status_code)
        answers.append(client.get(f"{url}/runs", headers={"Accept": "text/html"}).status_code)  # nothing presented
        assert answers == [401, 401, 401, 429]
        assert client.get(f"{url}/healthz").status_code == 200  # open routes stay open


def test_logout_ends_the_session_on_the_server(guarded):
    """A session cookie copied before logout (a shared machine, a proxy's log) is refused after it."""
    url = guarded.http_url

    def log_in() -> str:
        answer = httpx.post(f"{url}/login", data={"token": API, "next": "/runs"}, follow_redirects=False)
        assert answer.status_code == 303
        return answer.cookies[auth.SESSION_COOKIE]

    kept, other = log_in(), log_in()
    assert kept != other  # two logins, two sessions
    as_cookie = lambda value: {"Cookie": f"{auth.SESSION_COOKIE}={value}"}  # noqa: E731
    assert httpx.get(f"{url}/runs", headers=as_cookie(kept)).status_code == 200
    out = httpx.post(f"{url}/logout", headers=as_cookie(kept), follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    replayed = httpx.get(f"{url}/runs", headers={**as_cookie(kept), "Accept": "text/html"}, follow_redirects=False)
    assert replayed.status_code == 303 and replayed.headers["location"].startswith("/login")
    assert httpx.get(f"{url}/runs", headers=as_cookie(kept)).status_code == 401
    assert httpx.get(f"{url}/v1/diagnoses", headers=as_cookie(kept)).status_code == 401
    assert httpx.get(f"{url}/v1/diagnoses", headers=as_cookie(other)).status_code == 200  # another session goes on


def _proxied_server(tmp_path, trusted: list[str]) -> ProcessorServer:
    return ProcessorServer(ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "api_token": API, "grpc_enabled": False,
                  "auth_failures": {"burst": 3, "per_minute": 1}, "trusted_proxies": trusted},
        store={"path": str(tmp_path / "store.sqlite")}))


def test_a_same_host_client_forging_x_forwarded_for_is_throttled_by_its_own_address(tmp_path):
    """Nothing is trusted by default, not even 127.0.0.1: a forged header neither escapes the
    throttle nor gets another address (the victim's) throttled."""
    with _proxied_server(tmp_path, []) as server, from_address("127.0.0.1") as client:
        url = f"{server.http_url}/v1/diagnoses"
        answers = [client.get(url, headers={**bearer(f"guess-{i}"), "X-Forwarded-For": f"10.0.0.{i}"}).status_code
                   for i in range(5)]
        assert answers == [401, 401, 401, 429, 429]
        forged = [client.get(url, headers={**bearer("guess"), "X-Forwarded-For": "127.0.0.5"}).status_code for _ in range(3)]
        assert forged == [429, 429, 429]  # still its own count, never the victim's
        with from_address("127.0.0.5") as victim:
            assert victim.get(url, headers=bearer(API)).status_code == 200


def test_a_configured_proxys_x_forwarded_for_is_honoured(tmp_path):
    with _proxied_server(tmp_path, ["127.0.0.6", "10.20.0.0/16"]) as server:
        url = f"{server.http_url}/v1/diagnoses"
        with from_address("127.0.0.6") as proxy:
            answers = [proxy.get(url, headers={**bearer("guess"), "X-Forwarded-For": "203.0.113.7"}).status_code
                       for _ in range(4)]
            assert answers == [401, 401, 401, 429]  # the client behind the proxy is throttled
            other_client = proxy.get(url, headers={**bearer(API), "X-Forwarded-For": "203.0.113.8"})
            assert other_client.status_code == 200  # not the proxy itself, nor its other clients
        with from_address("127.0.0.7") as untrusted:  # not a configured proxy: its header is ignored
            assert untrusted.get(url, headers={**bearer(API), "X-Forwarded-For": "203.0.113.7"}).status_code == 200


def test_trusted_proxies_must_be_addresses():
    with pytest.raises(ValueError, match="not an IP address or CIDR"):
        ProcessorConfig(receiver={"trusted_proxies": ["proxy.internal"]})


def test_the_throttle_forgets_the_oldest_addresses_and_refills():
    from mast_otel.processors.config import AuthFailureConfig
    from mast_otel.processors.service.auth.throttle import AuthThrottle, address_key

    now = [0.0]
    throttle = AuthThrottle(AuthFailureConfig(burst=2, per_minute=6, max_addresses=100), clock=lambda: now[0])
    for i in range(1000):
        throttle.judge(f"10.0.{i // 256}.{i % 256}", "/v1/traces", valid=False)
    assert throttle.addresses == 100
    assert [throttle.judge("10.9.9.9", "/", valid=False).status for _ in range(3)] == [401, 401, 429]
    assert throttle.judge("10.9.9.9", "/", valid=True).retry_after == 10  # one attempt back every 10 s
    now[0] += 10
    assert throttle.judge("10.9.9.9", "/", valid=True) is None
    assert address_key("2001:db8::1") == address_key("2001:db8::ffff") == "2001:db8::/64"
    assert address_key("::ffff:10.1.2.3") == "10.1.2.3"
