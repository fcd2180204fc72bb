"""Receivers and exporters are built through factories: a type name, a config model, a build function."""

from __future__ import annotations

import pytest

from mast_otel.processors.config import ProcessorConfig, WebhookConfig
from mast_otel.processors.service.factories import (
    EXPORTERS, RECEIVERS, ExporterContext, build, exporter_entries, receiver_entries,
)
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.server import ProcessorServer


def _config(tmp_path, **sections) -> ProcessorConfig:
    sections.setdefault("store", {"path": str(tmp_path / "d.sqlite")})
    return ProcessorConfig(receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0}, **sections)


def test_the_config_lists_become_entries_in_start_order(tmp_path) -> None:
    config = _config(tmp_path, store={"enabled": False, "path": str(tmp_path / "d.sqlite"), "recent_runs": 5},
                     exporters={"otlp": [{"endpoint": "http://a:4318/v1/traces"}, {"endpoint": "http://b:4318/v1/traces"},
                                         {"endpoint": "http://c:4318/v1/traces", "enabled": False}],
                                "webhook": {"enabled": True, "url": "http://hook"}})
    assert [t for t, _ in exporter_entries(config)] == ["recent", "prometheus", "otlp", "otlp", "webhook", "sessions"]
    assert [t for t, _ in receiver_entries(config)] == ["otlp_grpc", "otlp_http"]
    assert [t for t, _ in receiver_entries(config.model_copy(update={"receiver": config.receiver.model_copy(
        update={"grpc_enabled": False})}))] == ["otlp_http"]
    built = build(EXPORTERS, exporter_entries(config), ExporterContext(config, Metrics(config.metrics), None))
    assert [c.name for c in built] == ["recent", "prometheus", "otlp", "webhook", "sessions"]
    assert [e.config.endpoint for e in built[2].endpoints] == ["http://a:4318/v1/traces", "http://b:4318/v1/traces"]
    assert built[0].capacity == 5


def test_every_factory_names_its_type_and_config_model() -> None:
    for factories in (EXPORTERS, RECEIVERS):
        for type_name, factory in factories.items():
            assert factory.type == type_name and callable(factory.build)
            assert "description" in str(factory.config_model.model_json_schema())  # a typed, documented model


def test_unknown_types_and_wrong_configs_are_refused(tmp_path) -> None:
    config = _config(tmp_path)
    ctx = ExporterContext(config, Metrics(config.metrics), None)
    with pytest.raises(ValueError, match="no factory for component type 'kafka'"):
        build(EXPORTERS, [("kafka", WebhookConfig())], ctx)
    with pytest.raises(TypeError, match="takes ExporterConfig"):
        build(EXPORTERS, [("otlp", WebhookConfig())], ctx)
    with pytest.raises(ValueError, match="needs the store"):
        build(EXPORTERS, [("store", config.store)], ctx)


def test_the_host_builds_its_components_through_the_factories(tmp_path) -> None:
    server = ProcessorServer(_config(tmp_path), builtin_components=False)
    with server:
        assert [e.name for e in server.exporters] == ["store", "prometheus", "sessions"]
        assert server.http_port and server.grpc_port
