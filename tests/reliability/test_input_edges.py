"""Every input edge of the API and the web view answers 4xx, never a 500 with a traceback: query
parameters past what the store can compare, numbers past what ``int()`` parses, session cookies
that are no time at all. Against the real in-process server (API token set, one run stored)."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from soak import RunFactory, wait_for

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.auth.tokens import SESSION_COOKIE
from mast_otel.processors.service.server import ProcessorServer

TOKEN = "edge-api-token-61c2"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("edges")
    config = ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False, "api_token": TOKEN},
        assembly={"grace_seconds": 0.1, "sweep_interval_seconds": 0.1}, store={"path": str(path / "store.sqlite")},
    )
    with ProcessorServer(config) as running:
        body, trace_ids, _ = RunFactory(1).batch(2)
        assert httpx.post(f"{running.http_url}/v1/traces", content=body,
                          headers={"Content-Type": "application/x-protobuf"}).status_code == 200
        assert wait_for(lambda: all(running.store.get(t) for t in trace_ids), 30)
        running.trace_id = trace_ids[0]
        yield running


@pytest.mark.parametrize("path", [
    "/?since=0001-01-01", "/runs?until=0001-01-01", "/runs?since=99999999999", "/runs?page=9223372036854775807",
    "/?until=9999-12-31T23:59:59", "/severity?since=0001-01-01", "/runs?page=" + "9" * 5000, "/runs?page=\u00b2",
    "/?page=" + "9" * 5000, "/runs?since=" + "9" * 5000,
])
def test_web_filters_out_of_range_get_a_400_page(server, path):
    response = httpx.get(server.http_url + path, headers={**AUTH, "Accept": "text/html"})
    assert response.status_code == 400, response.text[:300]
    assert "Traceback" not in response.text


@pytest.mark.parametrize("expires", ["9" * 4400, "\u00b2", "1" * 13, "-5", ""])
def test_a_session_cookie_that_is_no_time_is_refused_not_a_500(server, expires):
    cookie = f"{SESSION_COOKIE}={expires}.{'ab' * 32}".encode()  # as bytes: a browser may send UTF-8
    response = httpx.get(f"{server.http_url}/v1/diagnoses", headers={"Cookie": cookie})
    assert response.status_code == 401


# parameters of every GET route, with the values that broke them or their neighbours
ROUTES = {
    "/v1/diagnoses": ("model", "agent", "service", "mode", "outcome", "fatal", "since", "until", "limit", "offset"),
    "/v1/severity": ("model", "since", "until", "min_outcomes"),
    "/v1/diagnoses/{trace_id}": ("include",),
    "/": ("since", "until", "page"),
    "/runs": ("model", "agent", "service", "mode", "outcome", "fatal", "since", "until", "page", "q"),
    "/runs/{trace_id}": ("steps",),
    "/severity": ("model", "since", "until"),
}
EDGE_VALUES = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["0001-01-01", "9999-12-31T23:59:59Z", "99999999999", "1e400", "nan", "-inf", "9" * 4400,
                     "\u00b2", "\u0661\u0662", "2026-11-24T10:30+99:00", "\x00", "%ff", "true", "FM-1.3", "steps", "1-999999999"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.sampled_from(sorted(ROUTES)), st.data())
def test_fuzzed_query_parameters_never_get_a_5xx(server, route, data):
    names = data.draw(st.lists(st.sampled_from(ROUTES[route]), min_size=1, max_size=3, unique=True))
    params = {name: data.draw(EDGE_VALUES) for name in names}
    path = route.replace("{trace_id}", data.draw(st.sampled_from([server.trace_id, "0" * 32, "x"])))
    response = httpx.get(server.http_url + path, params=params, headers={**AUTH, "Accept": "text/html"})
    assert response.status_code < 500, (path, params, response.text[:300])
