"""Every Prometheus metric the processor exposes, registered on its own registry.

Names and labels are documented in docs/processor.md. Each attribute is named like its metric without the
``mast_`` prefix (``metrics.traces_total`` is ``mast_traces_total``). The counting rules
(once per run, once per (run, mode)) live in the merge stage (``service/pipeline/merge.py``); this module only
declares the metrics and bounds label cardinality.
"""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mast_otel.processors.config import MetricsConfig

OTHER = "other"
UNKNOWN = "unknown"
# A longer service, agent or model name is reported as ``other``: label values are held by the
# registry for the process's life and written into every scrape, so their length is bounded too.
MAX_LABEL_CHARS = 256
_RUN = ("service_name", "agent", "model")
# why a log record was not joined to a span (mast_log_records_dropped_total{reason})
LOG_DROP_REASONS = ("not_genai", "no_span_id", "invalid", "span_never_came", "run_already_diagnosed", "over_budget",
                    "normalize_failed")
_LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)


class Metrics:
    """The processor's metrics on ``registry`` (a fresh one by default, never the global one)."""

    def __init__(self, config: MetricsConfig | None = None, registry: CollectorRegistry | None = None) -> None:
        self.config = config or MetricsConfig()
        self.registry = registry if registry is not None else CollectorRegistry()
        self._limits = {"model": self.config.max_models, "agent": self.config.max_agents, "service": self.config.max_services}
        self._seen: dict[str, set[str]] = {kind: set() for kind in self._limits}
        self._lock = threading.Lock()
        r = self.registry

        # --- diagnoses -----------------------------------------------------------------
        self.traces_total = Counter("mast_traces_total", "Agent runs diagnosed, counted once per run at its first diagnosis.", _RUN, registry=r)
        self.failure_mode_traces_total = Counter(
            "mast_failure_mode_traces_total",
            "Runs showing a failure mode, once per (run, mode) under the source that found it first.",
            (*_RUN, "mode", "mode_name", "category", "severity", "source"),
            registry=r,
        )
        self.failure_mode_agents_total = Counter(
            "mast_failure_mode_agents_total",
            "Failure modes by the agent whose decision they concern, once per (run, mode): in a team, the member "
            "blamed (team is the run's agent); in a one-agent run, that agent.",
            ("service_name", "team", "agent", "model", "mode"),
            registry=r,
        )
        self.outcomes_total = Counter("mast_outcomes_total", "Runs whose outcome became known, once per run.", (*_RUN, "outcome"), registry=r)
        self.failure_mode_outcomes_total = Counter(
            "mast_failure_mode_outcomes_total",
            "Runs with a failure mode and a known outcome, once per (run, mode).",
            (*_RUN, "mode", "category", "severity", "outcome"),
            registry=r,
        )
        self.failure_modes_per_trace = Histogram(
            "mast_failure_modes_per_trace", "Distinct failure modes per run at its first diagnosis.", _RUN,
            buckets=tuple(range(15)), registry=r,
        )
        self.live_detections_total = Counter(
            "mast_live_detections_total", "Failure modes raised while the run was still going.", (*_RUN, "mode"), registry=r
        )
        self.guard_interventions_total = Counter(
            "mast_guard_interventions_total",
            "Interventions agent-side guards recorded (observe: would have acted; enforce: acted), once per event.",
            (*_RUN, "mode", "guard", "action"), registry=r,
        )
        self.diagnosis_latency_seconds = Histogram(
            "mast_diagnosis_latency_seconds", "Time from the run's root span end to its first diagnosis.", buckets=_LATENCY_BUCKETS, registry=r
        )

        # --- sessions (conversations): no session-id label, so cardinality stays bounded ----------
        self.sessions_total = Counter(
            "mast_sessions_total", "Sessions (conversations of several turns, each its own trace) seen, once per session.",
            ("service_name",), registry=r)
        self.session_failure_mode_total = Counter(
            "mast_session_failure_mode_total", "Sessions showing a cross-turn failure mode, once per (session, mode).",
            ("service_name", "mode", "mode_name", "category", "severity"), registry=r)
        self.sessions_open = Gauge("mast_sessions_open", "Sessions this process holds open (a turn within sessions.quiet_seconds).",
                                   registry=r)
        self.sessions_completed_early_total = Counter(
            "mast_sessions_completed_early_total", "Open sessions completed before sessions.quiet_seconds, by reason "
            "(max_open_sessions; memory: open sessions passed their share of the memory budget, as under a flood of "
            "new session ids).", ("reason",), registry=r)
        for reason in ("max_open_sessions", "memory"):  # known reasons: a series at 0 until one happens
            self.sessions_completed_early_total.labels(reason)
        self.session_turns_dropped_total = Counter(
            "mast_session_turns_dropped_total", "Turns left out of their session's diagnosis, by reason (queue_full, "
            "over_budget, unusable_id, refused: not grouped; max_turns: the oldest of a long session).", ("reason",), registry=r)

        # --- ingest and assembly ------------------------------------------------------------
        self.spans_received_total = Counter("mast_spans_received_total", "Spans accepted, duplicates excluded.", ("protocol",), registry=r)
        self.spans_rejected_total = Counter("mast_spans_rejected_total", "Spans rejected or dropped, by reason.", ("reason",), registry=r)
        self.log_records_received_total = Counter(
            "mast_log_records_received_total", "OTLP log records received (every record of an accepted logs request).",
            ("protocol",), registry=r)
        self.log_records_joined_total = Counter(
            "mast_log_records_joined_total", "GenAI log records whose content was joined to their span.", registry=r)
        self.log_records_dropped_total = Counter(
            "mast_log_records_dropped_total", "Log records not joined to a span, by reason: not_genai (not a GenAI event), "
            "no_span_id, invalid (over the decode bounds), span_never_came, run_already_diagnosed, over_budget, "
            "normalize_failed (reading its content raised: a fault of the processor, logged).",
            ("reason",), registry=r)
        self.log_records_parked_total = Counter(
            "mast_log_records_parked_total", "GenAI log records whose span never reached this replica, parked in the "
            "shared store for the replica that diagnoses their run.", registry=r)
        for protocol in ("http", "grpc"):
            self.log_records_received_total.labels(protocol)
        for reason in LOG_DROP_REASONS:
            self.log_records_dropped_total.labels(reason)
        self.duplicate_spans_total = Counter("mast_duplicate_spans_total", "Spans received again (exporter retries), counted once.", ("protocol",), registry=r)
        self.ingest_refused_requests_total = Counter(
            "mast_ingest_refused_requests_total", "Export requests refused (and gRPC connections closed), by reason. "
            "Backpressure and shutdown answer 429/503 (gRPC RESOURCE_EXHAUSTED/UNAVAILABLE) so the exporter retries; "
            "body_too_large (HTTP 413) is final: the exporter drops that batch.",
            ("protocol", "reason"), registry=r,
        )
        self.request_bytes_in_flight = Gauge(
            "mast_request_bytes_in_flight", "Bytes of export request bodies being read or decoded (receiver.max_bytes_in_flight).",
            registry=r,
        )
        self.client_disconnects_total = Counter(
            "mast_client_disconnects_total", "Requests whose client went away before its body was read.", ("protocol",), registry=r,
        )
        self.traces_in_flight = Gauge("mast_traces_in_flight", "Traces buffered, waiting for completion.", registry=r)
        self.buffered_bytes = Gauge("mast_buffered_bytes", "Estimated bytes held by in-flight traces.", registry=r)
        self.traces_evicted_total = Counter("mast_traces_evicted_total", "Traces diagnosed early to free memory or the write-ahead log, by reason.", ("reason",), registry=r)
        self.late_spans_total = Counter(
            "mast_late_spans_total", "Spans that arrived after their run was diagnosed: rediagnosed, or dropped after retention.",
            ("reason",), registry=r,
        )
        self.traces_completed_total = Counter("mast_traces_completed_total", "Traces completed, by how they completed.", ("completion",), registry=r)
        self.traces_lost_total = Counter(
            "mast_traces_lost_total", "Runs acknowledged but never diagnosed: in flight when the processor last died (counted at start).",
            ("reason",), registry=r,
        )
        self.store_errors_total = Counter(
            "mast_store_errors_total", "Diagnosis store writes that failed (disk full, read-only); ingest and metrics carry on.",
            ("operation",), registry=r,
        )
        self.store_set_aside_total = Counter(
            "mast_store_set_aside_total", "Runs the store refused on their own (a value it cannot hold) after "
            "store.max_save_attempts saves, set aside in store.set_aside_path so the runs behind them are stored.",
            registry=r,
        )
        self.deferred_runs_released_total = Counter(
            "mast_deferred_runs_released_total", "Runs a failed store look-up deferred past merge.max_deferred_runs: let "
            "go of in memory, kept unsettled in the log and diagnosed when the processor next starts.",
            registry=r,
        )

        self.finish_errors_total = Counter(
            "mast_finish_errors_total", "Runs whose diagnosis or one of whose outputs failed, by stage; the other runs carry on.",
            ("stage",), registry=r,
        )
        self.webhook_notifications_total = Counter(
            "mast_webhook_notifications_total", "Webhook notifications, by status (sent, failed, queue_full).", ("status",), registry=r,
        )

        # --- re-export ----------------------------------------------------------------------
        self.exported_spans_total = Counter("mast_exported_spans_total", "Enriched spans re-exported over OTLP, by endpoint.",
                                            ("endpoint",), registry=r)
        self.export_dropped_spans_total = Counter("mast_export_dropped_spans_total", "Spans the re-exporter gave up on, by reason.", ("reason",), registry=r)

        # --- LLM judge (used by the judge service) ------------------------------------------
        self.judge_requests_total = Counter("mast_judge_requests_total", "LLM judge requests, by judge model and status.", ("judge_model", "status"), registry=r)
        self.judge_tokens_total = Counter("mast_judge_tokens_total", "Tokens spent by the LLM judge.", ("judge_model", "status"), registry=r)
        self.judge_cost_usd_total = Counter("mast_judge_cost_usd_total", "Estimated US dollars spent by the LLM judge.", ("judge_model", "status"), registry=r)

    def bounded(self, kind: str, value: str | None) -> str:
        """``value`` as a label: ``unknown`` when missing, ``other`` beyond the configured limit or
        past ``MAX_LABEL_CHARS`` characters."""
        if not value:
            return UNKNOWN
        if len(value) > MAX_LABEL_CHARS:
            return OTHER
        seen = self._seen[kind]
        if value in seen:
            return value
        with self._lock:
            if len(seen) < self._limits[kind]:
                seen.add(value)
                return value
        return OTHER

    def run_labels(self, service_name: str | None, agent: str | None, model: str | None) -> tuple[str, str, str]:
        """The bounded (service_name, agent, model) label values of one run."""
        return self.bounded("service", service_name), self.bounded("agent", agent), self.bounded("model", model)
