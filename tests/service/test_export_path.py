"""The OTLP export routes answered ahead of the framework (``ExportPath``): what the framework's
layers did for them still holds (the drain's count and refusal, 500 on an exception, 405 for
other methods), and the API's layers are no longer on their path."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request
from starlette.responses import Response

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.api.app import create_app
from mast_otel.processors.service.receivers.drain import Drain
from mast_otel.processors.service.receivers.otlp_export import ExportPath
from mast_otel.processors.service.server import ProcessorServer


def _scope(method: str, path: str, content_type: bytes = b"application/x-protobuf") -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"test"), (b"content-type", content_type), (b"content-length", b"0")],
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 4318)}


async def _call(app, scope: dict) -> list[dict]:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


class _Recorder:
    """ASGI middleware that notes every request it sees."""

    seen: list[tuple[str, str]] = []

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            _Recorder.seen.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)


@pytest.fixture
def app(tmp_path):
    config = ProcessorConfig.model_validate({"store": {"path": str(tmp_path / "store.sqlite")}, "receiver": {"grpc_enabled": False}})
    server = ProcessorServer(config, builtin_components=False)
    app = create_app(server.ingest, config, reader=server.reader, drain=Drain(), throttle=server.auth_throttle)
    app.add_middleware(_Recorder)
    _Recorder.seen = []
    yield app
    server.shutdown()


def test_export_posts_skip_the_api_layers_and_every_other_request_keeps_them(app):
    sent = asyncio.run(_call(app, _scope("POST", "/v1/traces", b"text/plain")))
    assert sent[0]["status"] == 415  # answered by the export handler itself
    asyncio.run(_call(app, _scope("POST", "/v1/logs", b"text/plain")))
    assert _Recorder.seen == []
    assert asyncio.run(_call(app, _scope("GET", "/v1/traces")))[0]["status"] == 405  # the route, through the framework
    assert asyncio.run(_call(app, _scope("GET", "/healthz")))[0]["status"] == 200
    assert _Recorder.seen == [("GET", "/v1/traces"), ("GET", "/healthz")]


def test_export_requests_are_counted_for_the_drain_and_still_answered_once_it_begins():
    drain = Drain()
    counts: list[int] = []

    async def handler(request: Request) -> Response:
        counts.append(drain._active)
        return Response(b"", status_code=200)

    path = ExportPath(handler, drain)
    assert asyncio.run(_call(path, _scope("POST", "/v1/traces")))[0]["status"] == 200
    assert counts == [1] and drain._active == 0 and drain.wait_idle(0)
    drain.begin()  # the handler refuses in the request's own encoding (the ingest stage says shutting_down): not counted
    assert asyncio.run(_call(path, _scope("POST", "/v1/traces")))[0]["status"] == 200
    assert counts == [1, 0] and drain._active == 0


def test_an_exception_in_an_export_handler_answers_500_and_reaches_the_server():
    drain = Drain()

    async def handler(request: Request) -> Response:
        raise RuntimeError("bug")

    sent: list[dict] = []

    async def run() -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        await ExportPath(handler, drain)(_scope("POST", "/v1/traces"), receive, send)

    with pytest.raises(RuntimeError, match="bug"):
        asyncio.run(run())
    assert sent[0]["status"] == 500 and drain._active == 0
