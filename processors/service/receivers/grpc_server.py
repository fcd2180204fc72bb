"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export``, and
``opentelemetry.proto.collector.logs.v1.LogsService/Export`` (GenAI events sent as log records)
on the same server, with the same limits.

The method is registered with a bytes-in handler so the body goes through the same decoder
as OTLP/HTTP protobuf (which salvages spans from a request that does not parse as a whole).
Under memory pressure it answers RESOURCE_EXHAUSTED, during shutdown UNAVAILABLE, both with
a ``google.rpc.RetryInfo`` trailer that the OpenTelemetry exporters honour. Oversized
messages are refused by gRPC itself (``grpc.max_receive_message_length``).

The unary method is served as a client stream of one message, so the handler decides before
the message is received: one client address may have at most ``grpc_workers`` messages
arriving at once, each reserving ``max_body_bytes`` of the bytes-in-flight budget shared with
OTLP/HTTP (the gRPC core reads a message into memory as it arrives; within the address's
share of the budget), and the message must arrive within ``body_timeout_seconds``, after which
the call is cancelled, its thread and bytes freed. Once received, only the message's real
size stays reserved until its spans are ingested; at most ``grpc_workers`` requests are
decoded and ingested at once, by as many threads again as wait for messages, so a sender that
sends the headers and part of a message, then stalls, holds one waiting thread until the
deadline and never more than its address's share, and the others keep being served.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Callable, Iterator

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.processors.config import ReceiverConfig
from mast_otel.processors.service.memory.admission import Reservation, decode_cost
from mast_otel.processors.service.auth.tokens import authorized
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.receivers.grpc_connections import ConnectionSweeper
from mast_otel.processors.service.receivers.grpc_pool import FairPool, peer_address
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage, Receipt, Refusal

if TYPE_CHECKING:
    from mast_otel.processors.ingest.decode import DecodeResult
    from mast_otel.processors.ingest.log_records import LogBatch

log = logging.getLogger(__name__)

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"


class Deadlines:
    """Calls a function once its deadline passes unless disarmed first; one thread for all."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], object]]] = []
        self._armed: set[int] = set()
        self._ids = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, call: Callable[[], object]) -> int:
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mast-otel-grpc-deadlines", daemon=True)
                self._thread.start()
            token = next(self._ids)
            heapq.heappush(self._heap, (time.monotonic() + seconds, token, call))
            self._armed.add(token)
            self._changed.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._changed:
            self._armed.discard(token)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._changed.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                _, token, call = heapq.heappop(self._heap)
                if token not in self._armed:
                    continue
                self._armed.discard(token)
            try:
                call()
            except Exception:  # a call already gone
                log.debug("cancelling a stalled gRPC call failed", exc_info=True)


class PeerSlots:
    """At most ``limit`` calls per client address at once (messages arriving); one more waits
    for a slot of its own address, so a gateway's concurrent exports queue instead of being refused."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, int] = {}
        self._changed = threading.Condition()

    def take(self, peer: str, timeout: float = 0.0) -> bool:
        with self._changed:
            if not self._changed.wait_for(lambda: self._held.get(peer, 0) < self.limit, timeout):
                return False
            self._held[peer] = self._held.get(peer, 0) + 1
            return True

    def give_back(self, peer: str) -> None:
        with self._changed:
            held = self._held.pop(peer, 1) - 1
            if held:
                self._held[peer] = held
            self._changed.notify_all()


class Receiving:
    """The calls whose message is arriving, each holding a thread. While another call waits for a
    thread, one whose message has not arrived within ``stall_seconds`` is cancelled for it, from
    the address with the most such calls first, then the longest waiting: stalled streams from any
    number of addresses hold the pool for ``stall_seconds`` at most while others need it, and a
    sender whose messages arrive (a gateway) is never cut off. An address whose call stalled
    lately gets no such grace."""

    def __init__(self, stall_seconds: float, waiting: Callable[[], int], on_preempt: Callable[[str], object],
                 stalled_lately: Callable[[str], bool] = lambda peer: False) -> None:
        self.stall_seconds = stall_seconds
        self._stalled_lately = stalled_lately  # such an address's calls get no grace while others wait
        self._waiting = waiting  # calls waiting for a thread
        self._on_preempt = on_preempt
        self._calls: dict[int, tuple[str, float, Callable[[], object]]] = {}
        self._preempted: set[int] = set()
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def enter(self, peer: str, cancel: Callable[[], object]) -> int:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="mast-otel-grpc-stalls", daemon=True)
                self._thread.start()
            token = next(self._ids)
            self._calls[token] = (peer, time.monotonic(), cancel)
            return token

    def leave(self, token: int) -> bool:
        """Whether the call was cancelled to free its thread."""
        with self._lock:
            self._calls.pop(token, None)
            if token in self._preempted:
                self._preempted.discard(token)
                return True
            return False

    def stalled(self, wanted: int, now: float) -> list[tuple[str, Callable[[], object]]]:
        """Up to ``wanted`` calls to cancel (address, cancel), marked as cancelled: stalled past ``stall_seconds``,
        from the address with the most receiving calls first, oldest first within it."""
        with self._lock:
            per_peer: dict[str, int] = {}
            for peer, _, _ in self._calls.values():
                per_peer[peer] = per_peer.get(peer, 0) + 1
            stale = [(-per_peer[peer], started, token, cancel) for token, (peer, started, cancel) in self._calls.items()
                     if token not in self._preempted
                     and (now - started >= self.stall_seconds or self._stalled_lately(peer))]
            chosen = [(token, cancel) for _, _, token, cancel in sorted(stale, key=lambda c: c[:3])[:wanted]]
            self._preempted.update(token for token, _ in chosen)
            return [(self._calls[token][0], cancel) for token, cancel in chosen]

    def _watch(self) -> None:
        tick = min(0.25, self.stall_seconds / 4)
        while True:
            time.sleep(tick)
            wanted = self._waiting()
            if not wanted:
                continue
            for peer, cancel in self.stalled(wanted, time.monotonic()):
                self._on_preempt(peer)
                try:
                    cancel()
                except Exception:  # a call already gone
                    log.debug("cancelling a stalled gRPC call failed", exc_info=True)


class TraceReceiver:
    """The Export handler: the stage it feeds, the receipt deadlines and the per-address receipt slots."""

    def __init__(self, stage: IngestStage, config: ReceiverConfig, throttle: AuthThrottle,
                 pool: FairPool | None = None, connections: ConnectionSweeper | None = None) -> None:
        from mast_otel.processors.ingest.decode import DecodeError, decode_protobuf

        self.ingest = stage
        self.config = config
        self.throttle = throttle
        self._decode = decode_protobuf
        self._decode_error = DecodeError
        self._options = stage.decode_options
        self._deadlines = Deadlines()
        self._receiving = PeerSlots(config.grpc_workers)  # calls whose message is arriving, per client address
        self._working = threading.BoundedSemaphore(config.grpc_workers)  # calls being decoded and ingested
        self._pool = pool
        self._connections = connections  # told of each call, so it knows which connections are idle
        self._arriving = (Receiving(config.grpc_stall_seconds, pool.waiting, self._preempted, pool.stalled_lately)
                          if pool is not None else Receiving(config.grpc_stall_seconds, lambda: 0, self._preempted))

    def _preempted(self, peer: str) -> None:
        self.ingest.metrics.ingest_refused_requests_total.labels("grpc", "stalled").inc()
        if self._pool is not None:
            self._pool.stalled(peer)

    @staticmethod
    def _abort_retry(context: grpc.ServicerContext, code: grpc.StatusCode, message: str, seconds: int) -> None:
        """End the call with ``code`` and a ``RetryInfo`` trailer, so the exporter waits ``seconds``."""
        retry = RetryInfo(retry_delay=Duration(seconds=seconds))
        context.set_trailing_metadata(((RETRY_INFO_KEY, retry.SerializeToString()),))
        context.abort(code, message)

    def _refuse(self, refusal: Refusal, context: grpc.ServicerContext) -> None:
        self.ingest.refused(refusal, "grpc", peer_address(context.peer()))
        code = grpc.StatusCode.UNAVAILABLE if refusal.unavailable else grpc.StatusCode.RESOURCE_EXHAUSTED
        self._abort_retry(context, code, refusal.message, refusal.retry_after_seconds)

    def export(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        if self._connections is None:
            return self._export(requests, context)
        peer = context.peer()
        self._connections.call_started(peer)
        try:
            return self._export(requests, context)
        finally:
            self._connections.call_ended(peer)

    def _export(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> ExportTraceServiceResponse:
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
        peer = peer_address(context.peer())
        if not self._receiving.take(peer, self.config.admission_wait_seconds):
            self._refuse(self.ingest.peer_refusal(), context)
        reservation = Reservation(self.ingest.request_bytes, peer)
        try:
            try:
                # the gRPC core reads the message into memory as it arrives: the most it can hold is
                # reserved until it is whole (under a deadline), then its real size
                if not reservation.grow_to(self.config.max_body_bytes, self.config.admission_wait_seconds):
                    self._refuse(self.ingest.admission() or self.ingest.bytes_refusal(), context)
                body = self._receive(requests, context, peer)
            finally:
                self._receiving.give_back(peer)
            if body is None:
                return self._nothing()  # cancelled: nothing is sent
            reservation.shrink_to(len(body))
            # decoding costs several times the body for a moment: reserved in the memory account first
            if not reservation.decode(decode_cost(len(body), as_json=False, keep_raw=self._options.keep_raw),
                                      self.config.admission_wait_seconds):
                del body  # the abort's traceback keeps this frame: it must not keep the body
                self._refuse(self.ingest.admission() or self.ingest.decode_refusal(), context)
            with self._working:
                try:
                    result = self._decode(body, self._options)
                except self._decode_error as exc:
                    del body  # the abort's traceback keeps this frame: it must not keep the body
                    self.ingest.refusal_log.refused("grpc", "undecodable", peer, "INVALID_ARGUMENT",
                                                    f"undecodable OTLP protobuf body: {exc}")
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"undecodable OTLP protobuf body: {exc}")
                finally:
                    reservation.decoded()
                receipt = self._ingest(result, body)  # the log has the body now
                del body
        finally:
            reservation.release()
        refusal = self.ingest.durable(receipt)
        if refusal is not None:  # the write-ahead log could not take it: not acknowledged
            self._refuse(refusal, context)
        return self._answer(result, receipt, peer)

    # what differs between signals: the decoder (set in __init__), ingest and the answer
    def _ingest(self, result: DecodeResult, body: bytes) -> Receipt:
        return self.ingest.ingest(result, "grpc", body)

    def _answer(self, result: DecodeResult, receipt: Receipt, peer: str) -> ExportTraceServiceResponse:
        return self.ingest.answer_logged(result, receipt.dropped, "grpc", peer) or ExportTraceServiceResponse()

    @staticmethod
    def _nothing() -> ExportTraceServiceResponse:
        return ExportTraceServiceResponse()

    def _receive(self, requests: Iterator[bytes], context: grpc.ServicerContext, peer: str) -> bytes | None:
        """The request message, or ``None`` when it did not arrive within ``body_timeout_seconds``,
        or it stalled while other calls waited for its thread (the call is cancelled), or the
        client went away."""
        late: list[bool] = []

        def cancel() -> None:
            late.append(True)
            if self._pool is not None:
                self._pool.stalled(peer)
            context.cancel()

        timer = self._deadlines.arm(self.config.body_timeout_seconds, cancel)
        arriving = self._arriving.enter(peer, context.cancel)
        try:
            body = next(requests, None)
        except grpc.RpcError:  # cancelled, by a deadline, for a waiting call or by the client
            body = None
        finally:
            self._deadlines.disarm(timer)
            preempted = self._arriving.leave(arriving)
        if late:
            self.ingest.metrics.ingest_refused_requests_total.labels("grpc", "body_timeout").inc()
            self.ingest.refusal_log.refused("grpc", "body_timeout", peer, "CANCELLED",
                                            f"request message not received within {self.config.body_timeout_seconds:g} s "
                                            "(receiver.body_timeout_seconds)")
            return None
        if preempted:
            self.ingest.refusal_log.refused("grpc", "stalled", peer, "CANCELLED",
                                            f"request message still arriving after {self.config.grpc_stall_seconds:g} s while "
                                            "other calls waited for a thread (receiver.grpc_stall_seconds)")
            return None
        if body is None:
            if not context.is_active():  # the client went away
                self.ingest.metrics.client_disconnects_total.labels("grpc").inc()
                return None
            self.ingest.refusal_log.refused("grpc", "undecodable", peer, "INVALID_ARGUMENT", "no request message")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no request message")
        return body


class LogReceiver(TraceReceiver):
    """``LogsService/Export``: the trace receiver's limits and slots, log records in."""

    def __init__(self, stage: IngestStage, config: ReceiverConfig, throttle: AuthThrottle,
                 pool: FairPool | None = None, connections: ConnectionSweeper | None = None) -> None:
        from mast_otel.processors.ingest.log_records import decode_logs_protobuf

        super().__init__(stage, config, throttle, pool, connections)
        self._decode = decode_logs_protobuf  # type: ignore[assignment]

    def share_limits(self, traces: TraceReceiver) -> None:
        """Count this service's calls in the trace receiver's per-address and worker slots: one
        budget for both signals, as one sender's exports of either kind arrive on one connection."""
        self._deadlines, self._receiving, self._working, self._arriving = (
            traces._deadlines, traces._receiving, traces._working, traces._arriving)

    def _ingest(self, result: LogBatch, body: bytes) -> Receipt:  # type: ignore[override]
        return self.ingest.ingest_logs(result, "grpc", body)

    def _answer(self, result: LogBatch, receipt: Receipt, peer: str) -> ExportLogsServiceResponse:  # type: ignore[override]
        return self.ingest.answer_logs(result, receipt.dropped, "grpc", peer) or ExportLogsServiceResponse()

    @staticmethod
    def _nothing() -> ExportLogsServiceResponse:
        return ExportLogsServiceResponse()


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


def connection_sweeper(stage: IngestStage, config: ReceiverConfig) -> ConnectionSweeper:
    """The per-address connection cap and the near-cap idle limit of ``config``, dropped connections counted."""
    refused = stage.metrics.ingest_refused_requests_total
    return ConnectionSweeper(config.max_grpc_connections_per_address, config.max_grpc_connections,
                             config.grpc_idle_seconds_near_cap, lambda reason: refused.labels("grpc", reason).inc())


def build_grpc_server(stage: IngestStage, config: ReceiverConfig, workers: int | None = None,
                      throttle: AuthThrottle | None = None,
                      connections: ConnectionSweeper | None = None) -> tuple[grpc.Server, int]:
    """A gRPC server bound to ``config.grpc_port`` (not started yet) and the port it bound; ``connections``
    (started by the caller on that port) is told of every call."""
    # as many threads again wait for messages to arrive, so stalled senders leave the workers free
    pool = FairPool(2 * (workers or config.grpc_workers), "mast-otel-grpc", config.body_timeout_seconds)
    throttle = throttle or AuthThrottle(config.auth_failures)
    receiver = TraceReceiver(stage, config, throttle, pool, connections)
    logs = LogReceiver(stage, config, throttle, pool, connections)
    logs.share_limits(receiver)
    server = grpc.server(
        pool,
        options=[
            ("grpc.max_receive_message_length", config.max_body_bytes), ("grpc.so_reuseport", 0),
            ("grpc.max_allowed_incoming_connections", config.max_grpc_connections),
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
    logs_handler = grpc.stream_unary_rpc_method_handler(
        logs.export, request_deserializer=None, response_serializer=ExportLogsServiceResponse.SerializeToString
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),
                                     grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": logs_handler})))
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
