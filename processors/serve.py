"""``mast-otel serve``: run the processor until SIGTERM/SIGINT, then flush and exit.

Configuration comes from one typed model (``--config`` YAML, ``MAST_OTEL_*`` environment,
these flags on top). Logs never carry message content or credentials: the service logs
counts, ports and trace ids only, and secrets are ``SecretStr`` in the configuration.
"""

from __future__ import annotations

import argparse
import gc
import logging
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

from mast_otel.processors import usage

log = logging.getLogger("mast_otel.serve")
# HTTP and model clients: at DEBUG they log whole payloads (message content, prompts), at INFO a
# line or two per judge call or export. The service's own log says what matters: WARNING and up.
CLIENT_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "openai", "httpcore", "httpx")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="YAML configuration file (also MAST_OTEL_CONFIG)")
    parser.add_argument("--host", help="address to listen on (receiver.host, default 127.0.0.1; 0.0.0.0 for all interfaces)")
    parser.add_argument("--http-port", type=int, help="OTLP/HTTP and API port (receiver.http_port, default 4318)")
    parser.add_argument("--grpc-port", type=int, help="OTLP/gRPC port (receiver.grpc_port, default 4317)")
    parser.add_argument("--no-grpc", action="store_true", help="do not start the OTLP/gRPC receiver")
    parser.add_argument("--store", metavar="PATH", help="SQLite diagnosis store (store.path)")
    parser.add_argument("--export-endpoint", metavar="URL", action="append",
                        help="re-export enriched spans here too (adds to exporters.otlp; repeatable)")
    parser.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="log verbosity (log_level, default INFO); message content is never logged")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Flags as configuration sections (only those given)."""
    sections: dict[str, dict[str, Any]] = {}
    flags = {
        ("receiver", "host"): args.host, ("receiver", "http_port"): args.http_port, ("receiver", "grpc_port"): args.grpc_port,
        ("receiver", "grpc_enabled"): False if args.no_grpc else None, ("store", "path"): args.store,
    }
    for (section, key), value in flags.items():
        if value is not None:
            sections.setdefault(section, {})[key] = value
    return sections


def load_config(args: argparse.Namespace):
    """The configuration: file and environment, with the flags applied on top (a :class:`UsageError` if invalid)."""
    data = usage.load_config(args.config).model_dump()
    for section, values in _overrides(args).items():
        data[section].update(values)
    for endpoint in args.export_endpoint or ():
        data["exporters"]["otlp"].append({"endpoint": endpoint})
    if args.log_level:
        data["log_level"] = args.log_level
    return usage.validate_config(data)


def ready_line(server) -> str:
    """What ``serve`` prints once it accepts spans (scripts wait for it): the listeners, then the
    store and the log folder in use, so a replica started with a misplaced setting says so at once."""
    grpc = f"OTLP/gRPC port {server.grpc_port}" if server.grpc_port is not None else "OTLP/gRPC off"
    return f"mast-otel processor ready: OTLP/HTTP + API {server.http_url}, {grpc}; {in_use(server)}"


def in_use(server) -> str:
    """The store (a PostgreSQL URL without its password, or the SQLite file) and the log folder."""
    if server.store is None:
        store = "store off (recent diagnoses in memory)"
    elif server.store.shared or server.store.where == ":memory:":
        store = f"store {server.store.where}"
    else:
        store = f"store {Path(server.store.where).absolute()}"
    wal = f"log folder {server.wal.directory.absolute()}" if server.wal is not None else "log off"
    return f"{store}, {wal}"


def tune_garbage_collector(young_threshold: int) -> None:
    """Fewer collector passes over a heap of buffered spans: most of what ingest allocates is
    freed by reference counting, so frequent young passes find little, and each full pass walks
    every buffered span. Start-up objects (modules, configuration) are frozen out of the passes."""
    if young_threshold <= 0:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, 50, 100)


# Blocks from this size up are mapped from the operating system and given back when freed.
MMAP_THRESHOLD_BYTES = 128 * 1024
MALLOC_ARENAS = 2  # heaps the threads share (glibc's default: 8 per core)
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8  # glibc's mallopt parameters


def tune_allocator(threshold: int = MMAP_THRESHOLD_BYTES, arenas: int = MALLOC_ARENAS) -> bool:
    """Large blocks (request bodies and their chunks, ids of hundreds of kilobytes) go back to the
    operating system when freed, and few heaps keep the rest. glibc raises its mmap threshold to
    the largest block freed (up to 32 MiB), after which such blocks come from a heap, whose freed
    space the process keeps, and each busy thread gets a heap of its own: under clients sending
    large bodies and long ids all the time, RSS settled far above what the memory account held
    (docs/reliability.md, Hostile clients). Called before the server's threads start. Skipped
    where ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_ARENA_MAX`` is set (the operator's choice) or the
    C library is not glibc; whether it was set."""
    import ctypes
    import os

    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold)) and bool(libc.mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


def files_to_create(config) -> list[Path]:
    """What starting would create on disk and is not there yet: for the store file and the log's
    folder, the outermost missing folder on their path (or the path itself). A start that fails
    (a port in use) removes them again, so a mistyped port leaves nothing behind."""
    store = config.store.path if config.store.enabled and str(config.store.path) != ":memory:" else None
    wal = config.wal.resolve_directory(store)
    created = []
    for path in (p for p in (store, wal) if p is not None):
        path = path.absolute()
        missing = None
        while not path.exists() and path != path.parent:
            missing, path = path, path.parent
        if missing is not None and missing not in created:
            created.append(missing)
    return created


def remove_created(paths: list[Path]) -> None:
    """Delete what :func:`files_to_create` listed (with SQLite's companion files)."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        for leftover in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
            if leftover.is_file():
                leftover.unlink(missing_ok=True)


def configure_logging(level: str) -> None:
    """The service's log at ``level``; the clients' at WARNING or above, whatever ``level`` is."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(level)))


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    configure_logging(config.log_level)
    from mast_otel.processors.service.server import ProcessorServer
    from mast_otel.processors.service.wal import WALInUse

    fresh = files_to_create(config)
    tune_allocator()
    server = ProcessorServer(config)  # wires in the judge (if configured) and the web view
    stop = threading.Event()

    def on_signal(signum, _frame) -> None:
        log.info("received %s: flushing buffered runs and stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            server.start()
        except (OSError, usage.UsageError) as exc:  # a port in use, an address not on this host, a log in use
            server.stop()
            if not isinstance(exc, WALInUse):  # lost the race for the log folder: what is there is the winner's
                remove_created(fresh)
            if isinstance(exc, usage.UsageError):
                raise
            raise usage.UsageError(f"cannot listen: {exc}") from None
        tune_garbage_collector(config.gc_young_threshold)
        print(ready_line(server), flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    log.info("stopped")
    return 0
