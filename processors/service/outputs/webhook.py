"""An optional webhook: each diagnosis with at least one failure mode POSTed as JSON.

A bounded queue and one sender thread keep the endpoint's latency off the sweeper; a full
queue or a failed POST drops the notification and counts it
(``mast_export_dropped_spans_total`` is for spans; this uses ``mast_webhook_notifications_total``).
What is queued is charged to the memory account.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from mast_otel.processors.config import WebhookConfig
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.memory.account import Charge, MemoryAccount, held_bytes
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch

log = logging.getLogger(__name__)


def payload(item) -> dict:
    """The JSON body for one run (ids, modes, outcome; never content)."""
    d = item.diagnosis
    return {
        "trace_id": d.trace_id, "change": item.change, "revision": d.revision, "service_name": d.service_name,
        "agent": d.agent, "model": d.model, "modes": list(d.modes), "fatal": d.fatal, "sources": d.sources,
        "outcome": d.outcome,
    }


class WebhookExporter(Lifecycle):
    name = "webhook"

    def __init__(self, config: WebhookConfig, metrics: Metrics, memory: MemoryAccount | None = None) -> None:
        if not config.url:
            raise ValueError("exporters.webhook.url is not set")
        self.url: str = config.url
        self.config = config
        self.metrics = metrics
        self._queue: queue.Queue[tuple[dict, int] | None] = queue.Queue(maxsize=config.queue_size)
        self.queued = memory.charge("webhook_queue") if memory is not None else Charge("webhook_queue")
        self._thread: threading.Thread | None = None

    def _start(self) -> None:
        import httpx

        self._client = httpx.Client(timeout=self.config.timeout_seconds)
        self._thread = threading.Thread(target=self._loop, name="mast-otel-webhook", daemon=True)
        self._thread.start()

    def _shutdown(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
        self._client.close()

    def export(self, batch: Batch) -> None:
        for item in batch.runs:
            if item.change == "diagnosis" and not item.diagnosis.modes and not self.config.all_runs:
                continue
            body = payload(item)
            size = held_bytes(body)
            try:
                self._queue.put_nowait((body, size))
            except queue.Full:
                self.metrics.webhook_notifications_total.labels("queue_full").inc()
                continue
            self.queued.add(size)

    def _loop(self) -> None:
        headers = {**{k: v.get_secret_value() for k, v in self.config.headers.items()}, "Content-Type": "application/json"}
        while True:
            item = self._queue.get()
            if item is None:
                return
            body, size = item
            self.queued.add(-size)
            try:
                response = self._client.post(self.url, json=body, headers=headers)
                status = "sent" if response.status_code < 300 else "failed"
            except Exception as exc:  # connection errors: counted, not retried (notifications, not data)
                log.debug("webhook POST failed: %s", type(exc).__name__)
                status = "failed"
            self.metrics.webhook_notifications_total.labels(status).inc()
