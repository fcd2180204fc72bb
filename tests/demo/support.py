"""A whole processor in-process on free loopback ports, for tests that need a real one."""

from __future__ import annotations

from pathlib import Path


def local_processor(folder: Path):
    """A ``ProcessorServer`` (not started) with its store in ``folder`` and quick run completion."""
    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.service.server import ProcessorServer

    config = ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "grpc_enabled": False},
        store={"path": folder / "diagnoses.sqlite"},
        assembly={"grace_seconds": 0.1, "sweep_interval_seconds": 0.05},
    )
    return ProcessorServer(config)
