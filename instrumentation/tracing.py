"""One-call setup: send mast-otel's spans to a processor over OTLP.

Works beside an application's own tracing: when an SDK ``TracerProvider`` is already in place
(passed in, or set globally) only a batch span processor with an OTLP exporter is added to it;
otherwise a provider is created and set globally. Calling it again with the same endpoint and
protocol adds nothing.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace

from mast_otel.instrumentation.errors import logger
from mast_otel.instrumentation.litellm_support import auto_instrument_litellm
from mast_otel.instrumentation.settings import configure

PROTOCOLS = ("http/protobuf", "grpc")
DEFAULT_ENDPOINTS = {"http/protobuf": "http://localhost:4318/v1/traces", "grpc": "http://localhost:4317"}
TRACES_PATH = "/v1/traces"

_exporting: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def resolve_endpoint(endpoint: str | None, protocol: str) -> str:
    """The traces URL: the argument, else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (+ ``/v1/traces`` over HTTP), else the local default."""
    http = protocol == "http/protobuf"
    if endpoint:
        bare = urlsplit(endpoint).path in ("", "/")
        return endpoint.rstrip("/") + TRACES_PATH if http and bare else endpoint
    specific = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if specific:
        return specific
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if base:
        return base.rstrip("/") + TRACES_PATH if http else base
    return DEFAULT_ENDPOINTS[protocol]


def _exporter(endpoint: str, protocol: str, headers: dict[str, str] | None) -> Any:
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GRPCSpanExporter
        except ImportError as exc:
            raise ImportError("OTLP over gRPC needs the grpc extra: pip install 'mast-otel[grpc]'") from exc
        return GRPCSpanExporter(endpoint=endpoint, headers=headers)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint, headers=headers)


def _provider(tracer_provider: Any, service_name: str | None) -> Any:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider

    candidate = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if isinstance(candidate, TracerProvider):
        current = candidate.resource.attributes.get(SERVICE_NAME)
        if service_name and current != service_name:
            logger.warning("mast-otel: keeping the existing tracer provider's service.name %r (asked: %r)",
                           current, service_name)
        return candidate
    if tracer_provider is not None:
        raise TypeError("tracer_provider must be an opentelemetry.sdk.trace.TracerProvider")
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name} if service_name else {}))
    if isinstance(candidate, trace.ProxyTracerProvider):  # nothing set globally yet
        trace.set_tracer_provider(provider)
    else:
        logger.warning("mast-otel: the global tracer provider is not an SDK provider; using a separate one")
    return provider


def setup_tracing(
    endpoint: str | None = None,
    *,
    protocol: str = "http/protobuf",
    service_name: str | None = None,
    capture_content: bool | None = None,
    tracer_provider: Any = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """Export agent spans over OTLP (batched) to ``endpoint``; return the SDK ``TracerProvider`` used.

    ``service_name`` names a provider created here (default: ``OTEL_SERVICE_NAME``);
    ``capture_content=None`` leaves content capture to
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. litellm, once the application
    imports it, is hooked automatically.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got {protocol!r}")
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    url = resolve_endpoint(endpoint, protocol)
    with _lock:
        provider = _provider(tracer_provider, service_name)
        targets = _exporting.setdefault(provider, set())
        if (url, protocol) not in targets:
            provider.add_span_processor(BatchSpanProcessor(_exporter(url, protocol, headers)))
            targets.add((url, protocol))
    configure(tracer_provider=provider, capture_content=capture_content)
    auto_instrument_litellm()
    return provider
