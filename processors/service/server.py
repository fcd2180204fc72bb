"""``ProcessorServer``: the whole processor in-process (HTTP + gRPC + pipeline), for ``serve``,
the demo and tests.

The judge service (when ``judge.model`` is set) and the web view (when installed) are wired
in by default (``builtin_components=False`` leaves them out). Other components with
``start()``/``stop()`` and extra routers plug in before ``start()``::

    server = ProcessorServer(config)
    server.add_component(component, router=component_router)
    with server:  # start() ... stop()
        print(server.http_url, server.grpc_port)

Ports 0 pick free ports; ``http_port``/``grpc_port`` report the bound ones. ``stop()`` stops
the receivers, diagnoses every buffered run, drains the exporter, then stops components.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from typing import Any, Callable, Protocol, Sequence

from fastapi import APIRouter

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.metrics import Metrics
from mast_otel.processors.service.pipeline import Pipeline
from mast_otel.processors.service.store import DiagnosisStore

log = logging.getLogger(__name__)


class Component(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


class ProcessorServer:
    def __init__(
        self,
        config: ProcessorConfig,
        extra_routers: Sequence[APIRouter] = (),
        *,
        diagnose: Callable | None = None,
        live_detection: Callable | None = None,
        builtin_components: bool = True,
    ) -> None:
        self.config = config
        self.metrics = Metrics(config.metrics)
        self.store = DiagnosisStore(config.store.path, config.store.max_rows)
        exporter = None
        if config.exporter.endpoint:
            from mast_otel.processors.service.exporter import OTLPReexporter

            exporter = OTLPReexporter(config.exporter, self.metrics)
        self.pipeline = Pipeline(config, self.metrics, self.store, exporter, diagnose=diagnose, live_detection=live_detection)
        self._routers: list[APIRouter] = list(extra_routers)
        self._components: list[Component] = []
        self._uvicorn: Any = None
        self._http_thread: threading.Thread | None = None
        self._grpc: Any = None
        self._ready = False
        self.http_port: int | None = None
        self.grpc_port: int | None = None
        self.judge: Any = None
        if builtin_components:
            self._add_builtin_components()

    def _add_builtin_components(self) -> None:
        """The LLM judge (when a judge model is configured) and the web view (when installed)."""
        if self.config.judge.model:
            from mast_otel.processors.judge.service import JudgeService

            self.judge = JudgeService(self.config.judge, self.pipeline, self.metrics)
            self.add_component(self.judge, router=self.judge.router())
        try:
            from mast_otel.processors.web import build_router
        except ModuleNotFoundError as exc:  # the web view is optional; other import errors are bugs
            if not (exc.name or "").startswith("mast_otel.processors.web"):
                raise
        else:
            self.add_router(build_router(self.store, self.pipeline))

    # --- extension -----------------------------------------------------------------------------
    def add_router(self, router: APIRouter) -> None:
        """Mount ``router`` on the HTTP app (behind the API token); call before ``start()``."""
        self._routers.append(router)

    def add_component(self, component: Component, router: APIRouter | None = None) -> None:
        """Start ``component`` with the server and stop it after the final flush."""
        self._components.append(component)
        if router is not None:
            self.add_router(router)

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        from mast_otel.processors.service.app import create_app

        self.pipeline.start()
        for component in self._components:
            component.start()
        app = create_app(self.pipeline, self.config, self._routers, ready=lambda: self._ready)
        self._start_http(app)
        if self.config.receiver.grpc_enabled:
            from mast_otel.processors.service.grpc_receiver import build_grpc_server

            self._grpc, self.grpc_port = build_grpc_server(self.pipeline, self.config.receiver)
            self._grpc.start()
        self._ready = True
        log.info("mast-otel processor listening: OTLP/HTTP and API on %s, OTLP/gRPC on port %s", self.http_url, self.grpc_port)

    def _start_http(self, app) -> None:
        import uvicorn

        rc = self.config.receiver
        family = socket.AF_INET6 if ":" in rc.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((rc.host, rc.http_port))
        self.http_port = sock.getsockname()[1]
        tls = rc.tls
        uv_config = uvicorn.Config(
            app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5,
            ssl_certfile=str(tls.cert_file) if tls.cert_file else None,
            ssl_keyfile=str(tls.key_file) if tls.key_file else None,
            ssl_ca_certs=str(tls.client_ca_file) if tls.client_ca_file else None,
            ssl_cert_reqs=ssl.CERT_REQUIRED if tls.client_ca_file else ssl.CERT_NONE,
        )
        self._uvicorn = uvicorn.Server(uv_config)
        self._http_thread = threading.Thread(target=self._uvicorn.run, kwargs={"sockets": [sock]}, name="mast-otel-http", daemon=True)
        self._http_thread.start()
        deadline = time.monotonic() + 30
        while not self._uvicorn.started:
            if not self._http_thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start; see the log")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop receiving, diagnose what is buffered, drain the exporter, stop components."""
        self._ready = False
        if self._grpc is not None:
            self._grpc.stop(grace=5).wait()
            self._grpc = None
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
            self._http_thread.join()
            self._uvicorn = None
        self.pipeline.stop(flush=True)
        for component in reversed(self._components):
            try:
                component.stop()
            except Exception:
                log.exception("component %r failed to stop", component)
        self.store.close()

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def http_url(self) -> str:
        rc = self.config.receiver
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(rc.host, rc.host)
        if ":" in host:
            host = f"[{host}]"
        scheme = "https" if rc.tls.cert_file else "http"
        return f"{scheme}://{host}:{self.http_port}"

    def __enter__(self) -> ProcessorServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
