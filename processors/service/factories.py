"""Component factories, as in the OpenTelemetry Collector: a type name, its config model and a
build function, one per receiver and exporter type. The host lists the configured entries of
each kind (``receiver_entries``, ``exporter_entries``: type name and config, in start order) and
builds every component through its type's factory, so adding a type is adding a factory.

A factory builds one component from all the configured entries of its type (the OTLP exporter
takes every endpoint at once: it encodes a run's enrichment once and queues it on each).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generic, Sequence, TypeVar

from pydantic import BaseModel

from mast_otel.processors.config import (
    ExporterConfig, PrometheusExporterConfig, ProcessorConfig, ReceiverConfig, SessionsConfig, StoreConfig, WebhookConfig,
)
from mast_otel.processors.service.component import Component
from mast_otel.processors.service.memory.account import MemoryAccount
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import DiagnosisExporter

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from mast_otel.processors.service.auth.throttle import AuthThrottle
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore

C = TypeVar("C", bound=BaseModel)
T = TypeVar("T", bound=Component)


@dataclass(frozen=True)
class ExporterContext:
    """What exporters are built with besides their own config."""

    config: ProcessorConfig
    metrics: Metrics
    store: DiagnosisStore | None
    memory: MemoryAccount | None = None  # what queues charge (the ingest stage's admission reads it)


@dataclass(frozen=True)
class ReceiverContext:
    """What receivers are built with: the stage they feed, the HTTP app they serve and the count of
    wrong credentials per address they share."""

    config: ProcessorConfig
    ingest: IngestStage
    app: ASGIApp
    auth_throttle: AuthThrottle


X = TypeVar("X", ExporterContext, ReceiverContext)


@dataclass(frozen=True)
class Factory(Generic[C, X, T]):
    """``type`` names the component kind in the config; ``build`` makes one component from
    every configured entry of that type (each an instance of ``config_model``)."""

    type: str
    config_model: builtins.type[C]  # ``type`` is the field above in this class body
    build: Callable[[Sequence[C], X], T]


# --- exporters -----------------------------------------------------------------------------------
def _store(entries: Sequence[StoreConfig], ctx: ExporterContext) -> DiagnosisExporter:
    from mast_otel.processors.service.outputs.store import StoreExporter

    if ctx.store is None:
        raise ValueError("the store exporter needs the store opened by the host")
    store = entries[0]
    return StoreExporter(ctx.store, ctx.metrics, store.max_step_list_bytes, store.prune_interval_seconds,
                         retry_interval_seconds=store.retry_interval_seconds, max_save_attempts=store.max_save_attempts,
                         set_aside_path=store.set_aside_path)


def _recent(entries: Sequence[StoreConfig], ctx: ExporterContext) -> DiagnosisExporter:
    from mast_otel.processors.service.outputs.recent import RecentDiagnoses

    return RecentDiagnoses(entries[0].recent_runs, entries[0].max_step_list_bytes)


def _prometheus(entries: Sequence[PrometheusExporterConfig], ctx: ExporterContext) -> DiagnosisExporter:
    from mast_otel.processors.service.outputs.metrics import MetricsExporter

    return MetricsExporter(ctx.metrics, ctx.config.detection)


def _otlp(entries: Sequence[ExporterConfig], ctx: ExporterContext) -> DiagnosisExporter:
    from mast_otel.processors.service.outputs.otlp_reexport import OTLPReexporter
    from mast_otel.processors.service.outputs.otlp import OTLPExporter

    return OTLPExporter([OTLPReexporter(c, ctx.metrics, ctx.memory) for c in entries])


def _webhook(entries: Sequence[WebhookConfig], ctx: ExporterContext) -> DiagnosisExporter:
    from mast_otel.processors.service.outputs.webhook import WebhookExporter

    return WebhookExporter(entries[0], ctx.metrics, ctx.memory)


def _sessions(entries: Sequence[SessionsConfig], ctx: ExporterContext) -> DiagnosisExporter:
    from mast_otel.processors.service.store.conversations import ConversationStore
    from mast_otel.processors.service.outputs.conversations import SessionTracker
    from mast_otel.processors.service.store.database import SQLiteDatabase

    config = entries[0]
    in_memory = ctx.store is None  # the store off: sessions kept in memory, charged to the account
    db = SQLiteDatabase(":memory:") if ctx.store is None else ctx.store.database
    store = ConversationStore(db, max_turns=config.max_turns, max_stored_sessions=config.max_stored_sessions)
    return SessionTracker(store, config, ctx.metrics, ctx.memory, in_memory_store=in_memory,
                          retry_seconds=ctx.config.store.retry_interval_seconds,
                          severity_overrides=ctx.config.detection.severity_overrides,
                          span_overhead_bytes=ctx.config.assembly.span_overhead_bytes)


EXPORTERS: dict[str, Factory] = {f.type: f for f in (
    Factory("store", StoreConfig, _store),
    Factory("recent", StoreConfig, _recent),
    Factory("prometheus", PrometheusExporterConfig, _prometheus),
    Factory("otlp", ExporterConfig, _otlp),
    Factory("webhook", WebhookConfig, _webhook),
    Factory("sessions", SessionsConfig, _sessions),
)}


def exporter_entries(config: ProcessorConfig) -> list[tuple[str, BaseModel]]:
    """The configured exporters as (type, config) entries, in start order (the judge trigger,
    which needs the judge, is added by the host)."""
    ex = config.exporters
    entries: list[tuple[str, BaseModel]] = [("store" if config.store.enabled else "recent", config.store)]
    if ex.prometheus.enabled:
        entries.append(("prometheus", ex.prometheus))
    entries += [("otlp", c) for c in ex.otlp if c.enabled and c.endpoint]
    if ex.webhook.enabled:
        entries.append(("webhook", ex.webhook))
    if config.sessions.enabled:
        entries.append(("sessions", config.sessions))
    return entries


# --- receivers -----------------------------------------------------------------------------------
def _http(entries: Sequence[ReceiverConfig], ctx: ReceiverContext) -> Component:
    from mast_otel.processors.service.receivers.components import HTTPReceiver

    return HTTPReceiver(ctx.app, entries[0])


def _grpc(entries: Sequence[ReceiverConfig], ctx: ReceiverContext) -> Component:
    from mast_otel.processors.service.receivers.components import GRPCReceiver

    return GRPCReceiver(ctx.ingest, entries[0], ctx.auth_throttle)


RECEIVERS: dict[str, Factory] = {f.type: f for f in (
    Factory("otlp_http", ReceiverConfig, _http),
    Factory("otlp_grpc", ReceiverConfig, _grpc),
)}


def receiver_entries(config: ProcessorConfig) -> list[tuple[str, BaseModel]]:
    """The configured receivers as (type, config) entries, in start order: gRPC first, so a taken
    gRPC port fails the start before uvicorn has logged anything."""
    entries: list[tuple[str, BaseModel]] = [("otlp_http", config.receiver)]
    if config.receiver.grpc_enabled:
        entries.insert(0, ("otlp_grpc", config.receiver))
    return entries


def build(factories: dict[str, Factory], entries: Sequence[tuple[str, BaseModel]], ctx: X) -> list[Component]:
    """One component per configured type, in the order its type first appears in ``entries``."""
    grouped: dict[str, list[BaseModel]] = {}
    for type_name, entry in entries:
        factory = factories.get(type_name)
        if factory is None:
            raise ValueError(f"no factory for component type {type_name!r} (known: {', '.join(sorted(factories))})")
        if not isinstance(entry, factory.config_model):
            raise TypeError(f"component type {type_name!r} takes {factory.config_model.__name__}, not {type(entry).__name__}")
        grouped.setdefault(type_name, []).append(entry)
    return [factories[type_name].build(group, ctx) for type_name, group in grouped.items()]
