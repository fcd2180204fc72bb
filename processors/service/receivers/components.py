"""The receivers as components: OTLP/HTTP (with the API on the same port) and OTLP/gRPC."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from typing import TYPE_CHECKING, Literal

from starlette.types import ASGIApp

from mast_otel.processors.config import ReceiverConfig
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.receivers.http_limits import uvicorn_limits
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage

if TYPE_CHECKING:  # imported when the receiver starts
    import grpc
    import uvicorn

    from mast_otel.processors.service.receivers.grpc_connections import ConnectionSweeper


def event_loop(setting: Literal["auto", "asyncio", "uvloop"]) -> Literal["asyncio", "uvloop"]:
    """The event loop ``receiver.event_loop`` names: ``auto`` is uvloop when it can be imported.
    uvloop runs the loop, its transports and timers in C, where asyncio's are Python: the HTTP
    side of a 130 KB OTLP request took about 15% less CPU, the server acknowledging the content-on
    corpus (no run diagnosed) about 5% less (docs/processor.md, Performance)."""
    if setting == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if setting == "uvloop":
            raise RuntimeError("receiver.event_loop is uvloop, which is not installed (pip install uvloop; "
                               "not available on Windows)") from None
        return "asyncio"
    return "uvloop"


class HTTPReceiver(Lifecycle):
    """uvicorn serving ``app`` on ``config.http_port`` (0: a free port, reported in ``port``)."""

    name = "http"

    def __init__(self, app: ASGIApp, config: ReceiverConfig) -> None:
        self.app = app
        self.config = config
        self.port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def _start(self) -> None:
        import uvicorn

        rc = self.config
        family = socket.AF_INET6 if ":" in rc.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((rc.host, rc.http_port))
        except OSError as exc:
            sock.close()
            raise OSError(f"OTLP/HTTP receiver on {rc.host}:{rc.http_port}: {exc.strerror or exc}") from None
        self.port = sock.getsockname()[1]
        tls = rc.tls
        uv_config = uvicorn.Config(
            self.app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5, **uvicorn_limits(rc),
            loop=event_loop(rc.event_loop),
            ssl_certfile=str(tls.cert_file) if tls.cert_file else None,
            ssl_keyfile=str(tls.key_file) if tls.key_file else None,
            ssl_ca_certs=str(tls.client_ca_file) if tls.client_ca_file else None,
            ssl_cert_reqs=ssl.CERT_REQUIRED if tls.client_ca_file else ssl.CERT_NONE,
            # X-Forwarded-For/-Proto believed from the configured proxies only (uvicorn trusts 127.0.0.1 by default)
            proxy_headers=bool(rc.trusted_proxies), forwarded_allow_ips=list(rc.trusted_proxies),
        )
        self._server = uvicorn.Server(uv_config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, name="mast-otel-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start; see the log")
            time.sleep(0.01)

    def _shutdown(self, timeout: float) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)


class GRPCReceiver(Lifecycle):
    """The OTLP/gRPC ``TraceService`` on ``config.grpc_port`` (0: a free port, reported in ``port``)."""

    name = "grpc"

    def __init__(self, stage: IngestStage, config: ReceiverConfig, throttle: AuthThrottle | None = None) -> None:
        self.ingest = stage
        self.config = config
        self.throttle = throttle or AuthThrottle(config.auth_failures)
        self.port: int | None = None
        self._server: grpc.Server | None = None
        self._connections: ConnectionSweeper | None = None

    def _start(self) -> None:
        from mast_otel.processors.service.receivers.grpc_server import build_grpc_server, connection_sweeper

        self._connections = connection_sweeper(self.ingest, self.config)
        self._server, self.port = build_grpc_server(self.ingest, self.config, throttle=self.throttle,
                                                    connections=self._connections)
        self._server.start()
        self._connections.start(self.port)

    def _shutdown(self, timeout: float) -> None:
        if self._connections is not None:
            self._connections.stop()
        if self._server is not None:
            self._server.stop(grace=min(5.0, timeout)).wait(timeout)
