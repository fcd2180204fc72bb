"""A web logout ends the session on every replica sharing the store, and after a restart.

Replicas here are whole ``ProcessorServer`` instances (HTTP receiver, API, web view) sharing a
real PostgreSQL database, or one SQLite file across a restart; the browser is an HTTP client
posting the login form and replaying a copied cookie."""

from __future__ import annotations

import time

import httpx

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.auth import tokens as auth
from mast_otel.processors.service.server import ProcessorServer
from mast_otel.processors.service.store.diagnoses import DiagnosisStore

API = "api-token-4e71b2"


def _replica(tmp_path, name: str, store: dict) -> ProcessorServer:
    return ProcessorServer(ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "api_token": API, "grpc_enabled": False},
        store=store, wal={"directory": str(tmp_path / f"{name}.wal")}))


def _log_in(url: str) -> str:
    answer = httpx.post(f"{url}/login", data={"token": API, "next": "/runs"}, follow_redirects=False)
    assert answer.status_code == 303
    return answer.cookies[auth.SESSION_COOKIE]


def _status(url: str, cookie: str) -> int:
    return httpx.get(f"{url}/v1/diagnoses", headers={"Cookie": f"{auth.SESSION_COOKIE}={cookie}"}).status_code


def _log_out(url: str, cookie: str) -> None:
    out = httpx.post(f"{url}/logout", headers={"Cookie": f"{auth.SESSION_COOKIE}={cookie}"}, follow_redirects=False)
    assert out.status_code == 303


def test_a_logout_on_one_replica_ends_the_session_on_the_other_and_after_a_restart(tmp_path, pg_url):
    store = {"url": pg_url}
    with _replica(tmp_path, "one", store) as one, _replica(tmp_path, "other", store) as other:
        kept, going_on = _log_in(one.http_url), _log_in(one.http_url)
        assert _status(other.http_url, kept) == 200  # replicas sharing a token accept each other's cookies
        _log_out(one.http_url, kept)
        assert _status(one.http_url, kept) == 401
        assert _status(other.http_url, kept) == 401  # the other replica never saw the logout
        assert _status(other.http_url, going_on) == 200  # another session goes on
    with _replica(tmp_path, "one", store) as restarted:
        assert _status(restarted.http_url, kept) == 401
        assert _status(restarted.http_url, going_on) == 200


def test_a_logout_survives_a_restart_of_a_single_processor(tmp_path):
    store = {"path": str(tmp_path / "store.sqlite")}
    with _replica(tmp_path, "only", store) as server:
        cookie = _log_in(server.http_url)
        _log_out(server.http_url, cookie)
        assert _status(server.http_url, cookie) == 401
    with _replica(tmp_path, "only", store) as restarted:
        assert _status(restarted.http_url, cookie) == 401


def test_logouts_are_kept_until_their_session_would_have_expired_and_hold_no_cookie(pg_url):
    store = DiagnosisStore(url=pg_url)
    try:
        now = int(time.time())
        store.revoke_session("a" * 64, now - 1)  # already expired: the next logout deletes it
        store.revoke_session("b" * 64, now + 3600)
        assert store.session_revoked("b" * 64) and not store.session_revoked("a" * 64)
        with store._db.session() as s:
            rows = s.execute("SELECT cookie_hash FROM web_logouts").fetchall()
        assert rows == [("b" * 64,)]  # a hash, never the cookie itself
    finally:
        store.close()
