"""The host: builds the processor's components from the typed config and owns their start
and shutdown order. ``ProcessorServer`` is the whole processor in-process (HTTP + gRPC +
stages + exporters), for ``serve``, the demo and tests.

Components, in start order (shutdown runs it backwards)::

    exporters   store (or recent diagnoses in memory), prometheus, otlp (one queue per endpoint),
                webhook, sessions (conversations grouped from their turns), judge trigger
    wal         the write-ahead log of accepted spans (replayed by the ingest stage's start)
    pipeline    ingest stage + sweeper -> merge stage -> exporters
    receivers   OTLP/HTTP (+ API, /metrics, web view), OTLP/gRPC

Shutdown begins with a drain: readiness turns false, new requests get 503 + ``Retry-After``
(gRPC ``UNAVAILABLE``) while the HTTP listener stays open, and the requests already let in
finish. Then the gRPC receiver stops, the pipeline diagnoses what is buffered (and settles it
in the log), the log closes, the judge stops and the exporters drain; the HTTP receiver stops
last, so a client is never refused a connection while the processor is still there. Receivers and exporters are
built through their types' factories (``service/factories.py``). A start that fails shuts
down what had started, then raises.

The judge (when ``judge.model`` is set) and the web view (when ``web.enabled`` and the web
package is installed) are built in; ``builtin_components=False`` leaves both
out. Other components and routers plug in before ``start()``::

    server = ProcessorServer(config)
    server.add_component(component, router=component_router)
    with server:  # start() ... shutdown()
        print(server.http_url, server.grpc_port)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Sequence

from fastapi import APIRouter

from mast_otel.processors.config import DetectionConfig, ProcessorConfig
from mast_otel.processors.service.pipeline.assembler import LiveObserver
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.component import DEFAULT_SHUTDOWN_SECONDS, Component, Lifecycle
from mast_otel.processors.service.api.conversations import sessions_router
from mast_otel.processors.service.receivers.drain import Drain
from mast_otel.processors.service.factories import (
    EXPORTERS, RECEIVERS, ExporterContext, ReceiverContext, build, exporter_entries, receiver_entries,
)
from mast_otel.processors.service.memory.account import MemoryAccount
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import DiagnosisExporter
from mast_otel.processors.service.outputs.conversations import SessionTracker
from mast_otel.processors.service.outputs.recent import RecentDiagnoses
from mast_otel.processors.service.outputs.store import DiagnosisReader
from mast_otel.processors.service.pipeline.ingest_stage import DiagnoseFn, IngestStage
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.service.wal import SpanLog

if TYPE_CHECKING:  # imported when the judge is configured, and when the receivers start
    from mast_otel.processors.judge.service import JudgeService
    from mast_otel.processors.service.receivers.components import GRPCReceiver, HTTPReceiver

log = logging.getLogger(__name__)
# addresses that listen on every interface -> the loopback address to reach them locally
ALL_INTERFACES = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def build_exporters(config: ProcessorConfig, metrics: Metrics, store: DiagnosisStore | None,
                    memory: MemoryAccount | None = None) -> list[DiagnosisExporter]:
    """The exporters the config switches on, each built by its type's factory (the judge trigger
    is added by the host)."""
    return build(EXPORTERS, exporter_entries(config), ExporterContext(config, metrics, store, memory))  # type: ignore[return-value]


class ProcessorServer(Lifecycle):
    def __init__(
        self,
        config: ProcessorConfig,
        extra_routers: Sequence[APIRouter] = (),
        *,
        diagnose: DiagnoseFn | None = None,
        live_detection: Callable[[DetectionConfig], LiveObserver] | None = None,
        builtin_components: bool = True,
    ) -> None:
        self.config = config
        self.metrics = Metrics(config.metrics)
        self.store = DiagnosisStore.from_config(config.store, config.merge) if config.store.enabled else None
        self.memory = MemoryAccount(config.assembly.max_buffered_bytes)  # one account for every holder
        self.exporters = build_exporters(config, self.metrics, self.store, self.memory)
        wal_directory = config.wal.resolve_directory(config.store.path if config.store.enabled else None)
        self.wal = SpanLog(config.wal, wal_directory, self.metrics.registry) if wal_directory is not None else None
        self.ingest = IngestStage(config, self.metrics, self.store, self.exporters, diagnose=diagnose,
                                  live_detection=live_detection, wal=self.wal, memory=self.memory)
        # what the API and the web view read: the store, else the in-memory recent diagnoses
        self.reader: DiagnosisReader = self.store if self.store is not None else next(
            e for e in self.exporters if isinstance(e, RecentDiagnoses))
        self.auth_throttle = AuthThrottle(config.receiver.auth_failures)  # one per process: HTTP, gRPC and the web view
        if self.store is not None:  # logouts recorded where every replica, and a restart, read them
            self.auth_throttle.revoked_sessions.shared = self.store
        self._routers: list[APIRouter] = list(extra_routers)
        self._web_routers: list[APIRouter] = []  # check the API token themselves (login form)
        self._components: list[Component] = []
        self._started: list[Component] = []
        self._ready = False
        self._drain = Drain()
        self._http: HTTPReceiver | None = None
        self._grpc: GRPCReceiver | None = None
        self.judge: JudgeService | None = None
        # sessions (conversations) grouped by the ``sessions`` exporter, read by their API
        self.sessions: SessionTracker | None = next((e for e in self.exporters if isinstance(e, SessionTracker)), None)
        if self.sessions is not None:
            self._routers.append(sessions_router(self.sessions.store, self.reader, config))
        if builtin_components:
            self._add_builtin_components()

    def _add_builtin_components(self) -> None:
        """The LLM judge (when a judge model is configured) and the web view (when switched on and installed)."""
        if self.config.judge.model and self.config.exporters.judge.enabled:
            from mast_otel.processors.judge.service import JudgeService
            from mast_otel.processors.service.outputs.judge import JudgeTrigger

            shared = self.store if self.store is not None and self.store.shared else None  # verdicts replicas share
            # completed sessions too, when grouped and judge.judge_sessions is on
            sessions = self.sessions if self.config.judge.judge_sessions else None
            self.judge = judge = JudgeService(self.config.judge, self.ingest, self.metrics, findings=self.ingest.merge,
                                              shared_verdicts=shared, memory=self.memory, sessions=sessions)
            if sessions is not None:
                sessions.on_complete = judge.submit_session
            trigger = JudgeTrigger(judge)
            self.ingest.add_exporter(trigger)
            self.exporters.append(trigger)  # last: shut down first, while the others still take its findings
            self.add_router(judge.router())
        if self.config.web.enabled:
            try:
                from mast_otel.processors.web import build_router
            except ModuleNotFoundError as exc:  # the web view is optional; other import errors are bugs
                if not (exc.name or "").startswith("mast_otel.processors.web"):
                    raise
            else:
                self._web_routers.append(build_router(self.reader, self.ingest, self.config, self.auth_throttle,
                                                      self.sessions.store if self.sessions is not None else None))

    # --- extension -----------------------------------------------------------------------------
    def add_router(self, router: APIRouter) -> None:
        """Mount ``router`` on the HTTP app (behind the API token); call before ``start()``."""
        self._routers.append(router)

    def add_component(self, component: Component, router: APIRouter | None = None) -> None:
        """Start ``component`` after the pipeline and shut it down after the final flush."""
        self._components.append(component)
        if router is not None:
            self.add_router(router)

    # --- lifecycle -----------------------------------------------------------------------------
    def _order(self) -> list[Component]:
        from mast_otel.processors.service.api.app import create_app
        from mast_otel.processors.service.receivers.components import GRPCReceiver, HTTPReceiver

        app = create_app(self.ingest, self.config, self._routers, ready=lambda: self.ready, reader=self.reader,
                         web_routers=self._web_routers, throttle=self.auth_throttle, drain=self._drain,
                         sessions=self.sessions.store if self.sessions is not None else None)
        receivers = build(RECEIVERS, receiver_entries(self.config),
                          ReceiverContext(self.config, self.ingest, app, self.auth_throttle))
        self._http = next(r for r in receivers if isinstance(r, HTTPReceiver))
        self._grpc = next((r for r in receivers if isinstance(r, GRPCReceiver)), None)
        return [*self.exporters, *([self.wal] if self.wal is not None else []), self.ingest, *self._components, *receivers]

    def _start(self) -> None:
        for component in self._order():
            component.start()
            self._started.append(component)
        self._ready = True
        rc = self.config.receiver
        if rc.host in ALL_INTERFACES and rc.api_token is None:
            log.warning("listening on all interfaces (receiver.host %r) without receiver.api_token: anyone who can reach "
                        "port %s can read diagnoses; set an API token or listen on 127.0.0.1", rc.host, self.http_port)
        grpc = f"OTLP/gRPC on port {self.grpc_port}" if self.grpc_port is not None else "OTLP/gRPC off"
        log.info("mast-otel processor listening: OTLP/HTTP and API on %s, %s", self.http_url, grpc)

    def _shutdown(self, timeout: float) -> None:
        """Refuse new requests (listening still), let those in progress finish, diagnose what is
        buffered, stop the judge, drain the exporters, then close the HTTP listener."""
        self._ready = False
        self.ingest.refuse_new()
        self._drain.begin()
        if not self._drain.wait_idle(timeout):
            log.warning("HTTP requests still in progress after %g s; shutting down without them", timeout)
        # start order backwards, but the HTTP receiver last: it answers 503 meanwhile
        order = sorted(reversed(self._started), key=lambda c: c is self._http)
        self._started.clear()
        for component in order:
            try:
                shutdown = getattr(component, "shutdown", None)
                shutdown(timeout) if shutdown is not None else getattr(component, "stop")()  # noqa: B009 - start()/stop() components, which Component does not type
            except Exception:
                log.exception("component %r failed to shut down", component)

    def stop(self, timeout: float = DEFAULT_SHUTDOWN_SECONDS) -> None:
        self.shutdown(timeout)

    def shutdown(self, timeout: float = DEFAULT_SHUTDOWN_SECONDS) -> None:
        super().shutdown(timeout)
        if self.store is not None:
            self.store.close()  # opened in __init__: closed even when never started (closing twice is harmless)

    @property
    def ready(self) -> bool:
        """Started, not stopping, and the write-ahead log (when on) can take requests."""
        return self._ready and (self.wal is None or self.wal.healthy)

    @property
    def http_port(self) -> int | None:
        return self._http.port if self._http is not None else None

    @property
    def grpc_port(self) -> int | None:
        return self._grpc.port if self._grpc is not None else None

    @property
    def http_url(self) -> str:
        rc = self.config.receiver
        host = ALL_INTERFACES.get(rc.host, rc.host)
        if ":" in host:
            host = f"[{host}]"
        scheme = "https" if rc.tls.cert_file else "http"
        return f"{scheme}://{host}:{self.http_port}"

    def __enter__(self) -> ProcessorServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


Host = ProcessorServer  # the name that says what it is
