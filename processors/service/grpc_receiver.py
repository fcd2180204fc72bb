"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export``.

The method is registered with a bytes-in handler so the body goes through the same decoder
as OTLP/HTTP protobuf (which salvages spans from a request that does not parse as a whole).
Under memory pressure it answers RESOURCE_EXHAUSTED, during shutdown UNAVAILABLE, both with
a ``google.rpc.RetryInfo`` trailer that the OpenTelemetry exporters honour. Oversized
messages are refused by gRPC itself (``grpc.max_receive_message_length``).

The unary method is served as a client stream of one message, so the handler decides before
the message is received: it reserves ``max_body_bytes`` of the bytes-in-flight budget shared
with OTLP/HTTP (waiting up to ``admission_wait_seconds``), receives, then keeps only the
message's real size until its spans are ingested. At most ``grpc_workers`` requests are
received at once; the others wait, unread, in gRPC's own queue.
"""

from __future__ import annotations

import socket
import time
from concurrent import futures

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from typing import Iterator

from mast_otel.processors.config import ReceiverConfig
from mast_otel.processors.service.admission import Reservation
from mast_otel.processors.service.auth import authorized
from mast_otel.processors.service.auth_throttle import AuthThrottle
from mast_otel.processors.service.ingest_stage import IngestStage, Refusal

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"


def peer_address(peer: str) -> str | None:
    """The address in a gRPC peer string (``ipv4:10.0.0.5:43210``, ``ipv6:[::1]:43210``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rsplit(":", 1)[0]
    if kind == "ipv6":
        return rest.rsplit(":", 1)[0].strip("[]")
    return None


class TraceReceiver:
    """The Export handler; holds no state beyond the stage it feeds."""

    def __init__(self, stage: IngestStage, config: ReceiverConfig, throttle: AuthThrottle) -> None:
        from mast_otel.processors.ingest.decode import DecodeError, decode_protobuf

        self.ingest = stage
        self.config = config
        self.throttle = throttle
        self._decode = decode_protobuf
        self._decode_error = DecodeError
        self._options = stage.decode_options

    @staticmethod
    def _abort_retry(context: grpc.ServicerContext, code: grpc.StatusCode, message: str, seconds: int) -> None:
        """End the call with ``code`` and a ``RetryInfo`` trailer, so the exporter waits ``seconds``."""
        retry = RetryInfo(retry_delay=Duration(seconds=seconds))
        context.set_trailing_metadata(((RETRY_INFO_KEY, retry.SerializeToString()),))
        context.abort(code, message)

    def _refuse(self, refusal: Refusal, context: grpc.ServicerContext) -> None:
        self.ingest.refused(refusal, "grpc")
        code = grpc.StatusCode.UNAVAILABLE if refusal.unavailable else grpc.StatusCode.RESOURCE_EXHAUSTED
        self._abort_retry(context, code, refusal.message, refusal.retry_after_seconds)

    def export(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        if self.config.ingest_token is not None:
            header = dict(context.invocation_metadata()).get("authorization")
            denied = self.throttle.judge(peer_address(context.peer()), "gRPC Export", authorized(header, self.config.ingest_token),
                                         header is not None)
            if denied is not None and denied.throttled:
                self._abort_retry(context, grpc.StatusCode.RESOURCE_EXHAUSTED, denied.message, denied.retry_after)
            if denied is not None:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, denied.message)
        refusal = self.ingest.admission()
        if refusal is not None:
            self._refuse(refusal, context)
        pool = self.ingest.request_bytes
        deadline = time.monotonic() + self.config.admission_wait_seconds
        while not pool.acquire(self.config.max_body_bytes, min(0.05, max(0.0, deadline - time.monotonic()))):
            refusal = self.ingest.admission()  # the buffer may fill while this request waits: no point waiting on
            if refusal is not None or time.monotonic() >= deadline:
                self._refuse(refusal or self.ingest.bytes_refusal(), context)
        reservation = Reservation(pool, self.config.max_body_bytes)
        try:
            refusal = self.ingest.admission()  # again, now that it holds its bytes
            if refusal is not None:
                self._refuse(refusal, context)
            body = next(requests, None)
            if body is None:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no request message")
            reservation.shrink_to(len(body))
            try:
                result = self._decode(body, self._options)
            except self._decode_error as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"undecodable OTLP protobuf body: {exc}")
            receipt = self.ingest.ingest(result, "grpc", body)  # the log has the body now
            del body
        finally:
            reservation.release()
        refusal = self.ingest.durable(receipt)
        if refusal is not None:  # the write-ahead log could not take it: not acknowledged
            self._refuse(refusal, context)
        return self.ingest.answer(result, receipt.dropped) or ExportTraceServiceResponse()


def _credentials(config: ReceiverConfig) -> grpc.ServerCredentials | None:
    tls = config.tls
    if tls.cert_file is None or tls.key_file is None:
        return None
    root = tls.client_ca_file.read_bytes() if tls.client_ca_file else None
    return grpc.ssl_server_credentials(
        [(tls.key_file.read_bytes(), tls.cert_file.read_bytes())], root_certificates=root, require_client_auth=root is not None
    )


def _check_free(host: str, port: int) -> None:
    """Raise a plain ``OSError`` naming the address if it cannot be bound (grpcio would log a C-core error first)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds: a TIME_WAIT socket is no conflict
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise OSError(f"OTLP/gRPC receiver on {host}:{port}: {exc.strerror or exc}") from None


def build_grpc_server(stage: IngestStage, config: ReceiverConfig, workers: int | None = None,
                      throttle: AuthThrottle | None = None) -> tuple[grpc.Server, int]:
    """A gRPC server bound to ``config.grpc_port`` (not started yet) and the port it bound."""
    receiver = TraceReceiver(stage, config, throttle or AuthThrottle(config.auth_failures))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers or config.grpc_workers, thread_name_prefix="mast-otel-grpc"),
        options=[
            ("grpc.max_receive_message_length", config.max_body_bytes), ("grpc.so_reuseport", 0),
            ("grpc.max_connection_idle_ms", int(config.grpc_idle_seconds * 1000)),
            ("grpc.server_handshake_timeout_ms", int(config.header_timeout_seconds * 1000)),
            # Without BDP probing each stream's flow-control window stays at gRPC's 64 KiB, so the
            # messages of requests waiting for a worker stay with their senders instead of being
            # read into memory (with it, 40 waiting 12 MB requests took 650 MB instead of 300 MB).
            # The cost: a stream moves at most 64 KiB per round trip, ample next to a gateway.
            ("grpc.http2.bdp_probe", 0),
        ],
    )
    handler = grpc.stream_unary_rpc_method_handler(
        receiver.export, request_deserializer=None, response_serializer=ExportTraceServiceResponse.SerializeToString
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),))
    address = f"{config.host}:{config.grpc_port}"
    _check_free(config.host, config.grpc_port)
    credentials = _credentials(config)
    try:
        port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    except RuntimeError:  # grpcio raises instead of returning 0 when the port is taken
        port = 0
    if port == 0:
        raise OSError(f"OTLP/gRPC receiver on {address}: address already in use or not available")
    return server, port
