"""The processor's configuration: one typed model, from a YAML file plus environment variables.

Precedence: explicit keyword arguments > environment (``MAST_OTEL_<SECTION>__<FIELD>``, e.g.
``MAST_OTEL_RECEIVER__HTTP_PORT=14318``) > YAML file (``--config`` or ``MAST_OTEL_CONFIG``)
> defaults. Each pipeline component reads only its own section.
"""

from __future__ import annotations

import contextvars
import json
import os
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from mast_otel.processors.hints.settings import HintsConfig, ToolRule, valid_patterns  # noqa: F401 - ToolRule re-exported
from mast_otel.processors.conversations.settings import SessionDetectionConfig


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TLSConfig(_Section):
    """TLS on both receivers (and the API); unset: plain text."""

    cert_file: Path | None = Field(None, description="Server certificate (PEM); with key_file, turns TLS on.")
    key_file: Path | None = Field(None, description="The certificate's private key (PEM).")
    client_ca_file: Path | None = Field(None, description="Set to require client certificates signed by this CA (mTLS).")


class AuthFailureConfig(_Section):
    """How many wrong tokens or session cookies a client address may present (with a token set):
    a token bucket per address, shared by both receivers, the API and the web view's login."""

    burst: int = Field(10, gt=0, description="Failed attempts an address may make in a row before it is refused (429 with Retry-After).")
    per_minute: float = Field(6.0, gt=0, description="Failed attempts an address earns back per minute.")
    max_addresses: int = Field(10_000, gt=0, description=(
        "Addresses whose failures are remembered (about 250 bytes each); beyond it the least recently failed is forgotten."))


class DecodeConfig(_Section):
    """Input limits of the OTLP decoder: what hostile or broken input may cost."""

    content_chars: int = Field(8192, gt=0, description="Cap on each captured content field of a span (messages, arguments, results).")
    max_string_chars: int = Field(256 * 1024, gt=0, description="Longer attribute strings are truncated, not rejected.")
    max_name_chars: int = Field(1024, gt=0, description="Longer span names and status messages are truncated.")
    max_array_items: int = Field(1024, gt=0, description="Longer attribute arrays are truncated.")
    max_attributes: int = Field(1024, gt=0, description="A span with more attributes is rejected.")
    max_value_depth: int = Field(8, gt=0, description="Arrays and key-value lists nested deeper reject the span.")
    max_spans: int = Field(100_000, gt=0, description="Spans beyond this in one request body are rejected.")
    min_time_ns: int = Field(946_684_800 * 10**9, ge=0, description="Earliest plausible timestamp (2000-01-01); earlier ones reject the span.")
    max_time_ns: int = Field(4_102_444_800 * 10**9, gt=0, description="Latest plausible timestamp (2100-01-01).")
    max_messages: int = Field(10, ge=0, description="Distinct rejection details kept for the OTLP partial-success message.")
    max_events: int = Field(128, ge=0, description="Events read per span (exceptions, GenAI message events); later ones are ignored.")


class ReceiverConfig(_Section):
    """OTLP/HTTP and OTLP/gRPC ingest, and the HTTP API that shares the HTTP port."""

    host: str = Field("127.0.0.1", description=(
        "Address both receivers listen on; 0.0.0.0 (all interfaces) is needed in containers, and then set api_token."))
    http_port: int = Field(4318, ge=0, le=65535, description="OTLP/HTTP, the API, /metrics and the web view; 0 picks a free port.")
    grpc_port: int = Field(4317, ge=0, le=65535, description="OTLP/gRPC; 0 picks a free port.")
    grpc_enabled: bool = Field(True, description="Run the OTLP/gRPC receiver.")
    grpc_workers: int = Field(4, gt=0, description=(
        "OTLP/gRPC requests decoded and ingested at once; as many more threads wait for messages to arrive, at most "
        "grpc_workers of them for one client address (one more waits up to admission_wait_seconds for its address's "
        "slot, then gets RESOURCE_EXHAUSTED with RetryInfo)."))
    max_grpc_connections: int = Field(1000, gt=0, description=(
        "Open OTLP/gRPC connections; beyond it new connections are refused until one closes."))
    max_grpc_connections_per_address: int = Field(100, gt=0, description=(
        "Open OTLP/gRPC connections from one client address; the newest idle ones past it are closed within half a "
        "second (Linux; elsewhere only max_grpc_connections holds)."))
    max_body_bytes: int = Field(16 * 1024 * 1024, gt=0, description="Largest request body, after decompression; larger ones get 413 (RESOURCE_EXHAUSTED on gRPC).")
    ingest_token: SecretStr | None = Field(None, description="Bearer token required on /v1/traces, /v1/logs and gRPC; unset: none.")
    api_token: SecretStr | None = Field(None, description="Bearer token required on the API and the web view; unset: none.")
    tls: TLSConfig = TLSConfig()
    auth_failures: AuthFailureConfig = AuthFailureConfig()
    trusted_proxies: list[str] = Field(default_factory=list, description=(
        "Addresses or CIDR ranges (10.0.0.5, 10.0.0.0/8, ::1) of the reverse proxies in front of the HTTP port: only a "
        "request from one of them has its X-Forwarded-For (the client address the auth throttle and the per-client "
        "limits count) and X-Forwarded-Proto headers believed. Empty: no one's, not even 127.0.0.1's."))
    retry_after_seconds: int = Field(2, ge=1, description="Retry-After sent with 429/503 under memory pressure, over the connection limit or while shutting down.")
    max_bytes_in_flight: int | None = Field(None, gt=0, description=(
        "Bytes of export request bodies being read or decoded at once, over both receivers; a request that does not fit "
        "waits up to admission_wait_seconds, then gets 429 (RESOURCE_EXHAUSTED). One request always fits when none is in "
        "flight. Bytes are reserved as they arrive, never as a client declares them. Unset: half of "
        "assembly.max_buffered_bytes."))
    max_bytes_in_flight_per_peer: int | None = Field(None, gt=0, description=(
        "The share of max_bytes_in_flight one client address may hold (its first request always fits); unset: half "
        "of max_bytes_in_flight."))
    admission_wait_seconds: float = Field(1.0, ge=0, description=(
        "How long a request waits for bytes in flight to be released before it is refused."))
    header_timeout_seconds: float = Field(10.0, gt=0, description=(
        "An HTTP connection must send a complete request head within this many seconds of opening (or of its first "
        "byte after a keep-alive pause), else it is closed."))
    body_timeout_seconds: float = Field(30.0, gt=0, description=(
        "An HTTP request body (an OTLP/gRPC message) must arrive in full within this many seconds of its head, else "
        "408 and the connection is closed (CANCELLED on gRPC, freeing its worker)."))
    keep_alive_seconds: int = Field(5, gt=0, description="Idle HTTP keep-alive connections are closed after this many seconds.")
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field("auto", description=(
        "The HTTP receiver's event loop: uvloop (libuv, in C) spends less CPU per request than Python's asyncio; "
        "auto: uvloop when it is installed (it is with the processor extra, except on Windows), else asyncio."))
    max_http_connections: int = Field(1000, gt=0, description=(
        "Open HTTP connections (or requests in progress) beyond which new requests get 503 with Retry-After."))
    max_api_body_bytes: int = Field(1024 * 1024, gt=0, description=(
        "Largest request body on the API routes (everything but /v1/traces and /v1/logs); larger ones get 413."))
    grpc_idle_seconds: float = Field(300.0, gt=0, description="Idle OTLP/gRPC connections are closed after this many seconds.")
    grpc_idle_seconds_near_cap: float = Field(10.0, gt=0, description=(
        "While open OTLP/gRPC connections reach three quarters of max_grpc_connections, connections without a call "
        "for this many seconds are closed (Linux)."))
    grpc_stall_seconds: float = Field(2.0, gt=0, description=(
        "While an OTLP/gRPC call waits for a thread, a call whose message has not arrived after this many seconds is "
        "cancelled to free its thread (reason stalled), from the client address with the most such calls first."))
    refusal_log_seconds: float = Field(60.0, gt=0, description=(
        "Refused export input (400, 408, 413, 415, 429, 503, their gRPC codes, spans an accepted request lost) is "
        "logged at WARNING with its reason and the client address, one line per (reason, address) per this many "
        "seconds; the next line for that pair counts the ones left out. Never credentials or request content."))
    decode: DecodeConfig = DecodeConfig()

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        import ipaddress

        for item in value:
            try:
                ipaddress.ip_network(item.strip(), strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or CIDR range (10.0.0.5, 10.0.0.0/8, ::1)") from None
        return [item.strip() for item in value]


class AssemblyConfig(_Section):
    """Per-trace buffering: when a run counts as complete, and how much may be held."""

    grace_seconds: float = Field(2.0, ge=0, description="Quiet time after the root agent span ended before the run is diagnosed.")
    team_grace_seconds: float = Field(30.0, ge=0, description=(
        "Quiet time before a team run (spans of two agents, or a handoff) is diagnosed when only an agent span with "
        "a parent ended: that may be a sub-agent finishing while the team goes on. The trace's parentless root ending "
        "ends the wait (grace_seconds)."))
    idle_timeout_seconds: float = Field(300.0, gt=0, description="No spans for this long: diagnose anyway (completion abandoned when the run's root never arrived).")
    max_spans_per_trace: int = Field(5000, gt=0, description="Spans buffered per trace; more are dropped and counted (agent spans are exempt).")
    max_bytes_per_trace: int = Field(8 * 1024 * 1024, gt=0, description="Estimated bytes buffered per trace; more are dropped and counted.")
    max_traces_in_flight: int = Field(20000, gt=0, description="Traces buffered at once; beyond it the eviction policy diagnoses one early.")
    max_buffered_bytes: int = Field(512 * 1024 * 1024, gt=0, description=(
        "The memory budget: bytes held for senders in all (buffered spans with every attribute, id sets, retained "
        "runs, request bodies as they arrive, the re-export, judge and webhook queues); at it ingest answers 429 "
        "(backpressure)."))
    pressure_eviction_seconds: float = Field(5.0, ge=0, description=(
        "Over max_buffered_bytes for this long: evict (eviction_policy) down to eviction_target of it."))
    eviction_target: float = Field(0.9, gt=0, le=1, description="Share of max_buffered_bytes that pressure eviction brings the buffer down to.")
    hard_limit_factor: float = Field(1.25, ge=1, description=(
        "Over this multiple of max_buffered_bytes (large concurrent requests after backpressure started) traces are evicted at once."))
    span_overhead_bytes: int = Field(650, ge=0, description=(
        "Fixed memory of one buffered span besides what its serialized size (or, past 4 KiB, its strings and "
        "containers) accounts for, and its raw bytes (measured in benchmarks/bench_ingest.py: about 1,080 bytes per "
        "span in all, of which 650 fixed)."))
    retention_seconds: float = Field(600.0, ge=0, description="Diagnosed runs are held this long so late spans re-diagnose them; 0: off.")
    eviction_policy: Literal["oldest_first", "largest_first"] = Field("oldest_first", description="Which trace is diagnosed early when a limit is hit.")
    sweep_interval_seconds: float = Field(0.5, gt=0, description="How often the sweeper looks for complete runs.")


class StoreConfig(_Section):
    """The diagnosis store: embedded SQLite, or PostgreSQL that replicas share (see docs/store.md).

    Off, metrics, re-export and the judge still work. The diagnoses API and the web view read
    it; with it off they read the most recent diagnoses kept in memory (``recent_runs``)."""

    enabled: bool = Field(True, description="Keep diagnoses in the store (the API and the web view read it).")
    path: Path = Field(Path("mast-otel.sqlite"), description="The SQLite file; created with its folder when missing.")
    url: SecretStr | None = Field(None, description=(
        "postgresql://user:password@host:port/database: a PostgreSQL store every replica shares (diagnoses, step lists, "
        "outcomes, metric accounting, the judge's verdicts, runs' spans); unset: SQLite at path. Masked when printed."))
    retention_days: float | None = Field(None, gt=0, description=(
        "Runs diagnosed longer ago than this are deleted (at most prune_batch per pass); unset: kept until max_rows."))
    max_rows: int = Field(1_000_000, gt=0, description="Diagnoses kept; the oldest are pruned beyond this.")
    prune_every: int = Field(1000, gt=0, description="Saves between two pruning passes (max_rows, retention_days).")
    prune_batch: int = Field(5000, gt=0, description="Most runs one pruning pass deletes, so it never holds the store for long.")
    prune_interval_seconds: float = Field(300.0, gt=0, description=(
        "Time between two pruning passes when few runs arrive (a quiet replica still applies retention_days)."))
    pool_size: int = Field(4, gt=0, description=(
        "PostgreSQL: most connections the pipeline (diagnoses, outcomes, merges) of one replica opens; the API "
        "and the web view have their own pool (api_pool_size), so readers never hold the pipeline's."))
    api_pool_size: int = Field(4, gt=0, description=(
        "PostgreSQL: most connections the API and the web view of one replica open, apart from the pipeline's."))
    api_statement_timeout_seconds: float = Field(10.0, gt=0, description=(
        "PostgreSQL: longest an API or web view query runs before the database cancels it (the request answers 503)."))
    connect_timeout_seconds: float = Field(60.0, ge=0, description=(
        "PostgreSQL: how long a replica starting while the database does not accept connections yet keeps "
        "retrying (with backoff) before it exits; 0: exit at the first refusal."))
    retry_interval_seconds: float = Field(1.0, gt=0, description=(
        "First pause before diagnoses the store refused are written again on a timer (doubling to 30 s), "
        "so they are stored once the database is back even when no new traffic arrives."))
    max_save_attempts: int = Field(5, gt=0, description=(
        "Saves a run may fail while the runs saved with it succeed before it is set aside (written to the "
        "set-aside file for inspection, counted in mast_store_set_aside_total) so the runs behind it are stored."))
    set_aside_path: Path = Field(Path("mast-otel.set-aside.jsonl"), description=(
        "File (JSON lines, appended) keeping the runs the store refused on their own: trace id, the error, "
        "the diagnosis summary and the spans, for inspection."))
    recent_runs: int = Field(10_000, gt=0, description=(
        "With the store off: the latest diagnoses (and step lists) kept in memory for the API and the web view; "
        "older ones are dropped."))
    max_step_list_bytes: int = Field(1024 * 1024, ge=16 * 1024, description=(
        "Largest step list kept per run (its timeline: one entry per agent, model and tool span, about 150 bytes each). "
        "A longer one has its long names shortened, then steps folded: the steps the findings point at are kept, "
        "then the first and the last; the page and the API say how many were folded."))


class WALConfig(_Section):
    """The write-ahead log of accepted spans: runs in flight survive a crash or a kill.

    A request is acknowledged only once its spans are in the log; when the log cannot take
    them (disk full, I/O error, max_bytes reached) the request gets 503 / UNAVAILABLE and the
    exporter retries. On start the log is replayed, so runs in flight resume."""

    enabled: bool = Field(True, description=(
        "Keep the log (off: runs in flight at a crash or kill are lost, and not counted)."))
    directory: Path | None = Field(None, description=(
        "Folder of the log's segment files; unset: next to the store file (store.path with the suffix .wal); "
        "with the store off or in memory and no folder set, the log is off."))
    segment_bytes: int = Field(64 * 1024 * 1024, gt=0, description=(
        "Size at which a new segment file is started; a segment is deleted once every run it holds is diagnosed and exported."))
    max_bytes: int = Field(2 * 1024 * 1024 * 1024, gt=0, description=(
        "Largest total size of the log; beyond it requests are refused (503 / UNAVAILABLE) until runs complete."))
    evict_at: float = Field(0.75, gt=0, le=1, description=(
        "Share of max_bytes past which the runs still in flight in the oldest segment are diagnosed early "
        "(evicted, reason wal_max_bytes) so it can be deleted: a run that never ends cannot pin the log until "
        "every request is refused."))
    fsync: Literal["always", "interval", "never"] = Field("always", description=(
        "always: acknowledge after an fsync (concurrent requests share one); interval: acknowledge once written "
        "(survives a killed process) and fsync every fsync_interval_seconds; never: leave it to the operating system."))
    fsync_interval_seconds: float = Field(0.2, gt=0, description="Time between two fsyncs with fsync: interval.")

    def resolve_directory(self, store_path: Path | None) -> Path | None:
        """Where the log lives, or ``None`` when it is off."""
        if not self.enabled:
            return None
        if self.directory is not None:
            return self.directory
        if store_path is None or str(store_path) == ":memory:":
            return None
        return store_path.with_name(store_path.name + ".wal") if store_path.suffix == ".wal" else store_path.with_suffix(".wal")


class ExporterConfig(_Section):
    """One OTLP endpoint that receives the enriched spans (Tempo, Jaeger, a collector)."""

    enabled: bool = Field(True, description="Send to this endpoint.")
    endpoint: str | None = Field(None, description="e.g. http://tempo:4318/v1/traces or grpc://tempo:4317; unset: off.")
    protocol: Literal["http/protobuf", "grpc"] = Field("http/protobuf", description="OTLP transport.")
    headers: dict[str, str] = Field({}, description="Sent with every request (e.g. an authorization header).")
    timeout_seconds: float = Field(10.0, gt=0, description="Per export request.")
    queue_size: int = Field(2048, gt=0, description="Requests queued for this endpoint; beyond it they are dropped and counted.")
    queue_bytes: int | None = Field(None, gt=0, description=(
        "Bytes queued (or being sent) for this endpoint, charged to the memory budget; beyond it new requests are "
        "dropped and counted. Unset: an eighth of assembly.max_buffered_bytes (64 MiB by default)."))
    export_all_spans: bool = Field(True, description="Also pass through spans that belong to no agent run; False: only agent runs.")
    merge_requests: int = Field(64, gt=0, description="Queued requests merged into one export call.")
    max_attempts: int = Field(4, gt=0, description="Tries per export call before its spans are dropped and counted.")
    backoff_seconds: float = Field(0.2, ge=0, description="Wait before the first retry; doubled per retry, with jitter.")
    max_backoff_seconds: float = Field(5.0, ge=0, description="Longest wait between retries.")

    @model_validator(mode="after")
    def _http_endpoint_is_a_url(self) -> ExporterConfig:
        if self.protocol == "http/protobuf" and self.endpoint and not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"endpoint {self.endpoint!r}: an http:// or https:// URL is needed for protocol http/protobuf")
        return self


class PrometheusExporterConfig(_Section):
    """Counting diagnoses into the mast_* Prometheus metrics served on /metrics."""

    enabled: bool = Field(True, description="Count runs, failure modes and outcomes (ingest metrics are always on).")


class JudgeTriggerConfig(_Section):
    """Handing diagnosed runs to the LLM judge (which runs only when judge.model is set)."""

    enabled: bool = Field(True, description="Offer diagnosed runs to the judge's policy.")


class WebhookConfig(_Section):
    """A JSON POST per diagnosis that found a failure mode (ids, modes, outcome; never content)."""

    enabled: bool = Field(False, description="Send notifications (needs url).")
    url: str | None = Field(None, description="Where to POST.")
    headers: dict[str, SecretStr] = Field({}, description="Sent with every POST (e.g. an authorization header); masked when printed.")
    timeout_seconds: float = Field(5.0, gt=0, description="Per POST.")
    queue_size: int = Field(1000, gt=0, description="Notifications queued; beyond it they are dropped and counted.")
    all_runs: bool = Field(False, description="Also notify runs with no failure mode.")

    @model_validator(mode="after")
    def _url_when_enabled(self) -> WebhookConfig:
        if self.enabled and not self.url:
            raise ValueError("exporters.webhook.url must be set when the webhook is enabled")
        return self


class ExportersConfig(_Section):
    """The outputs of each diagnosis besides the store, each switchable."""

    otlp: list[ExporterConfig] = Field([], description="OTLP endpoints for the enriched spans, any number; empty: no re-export.")
    prometheus: PrometheusExporterConfig = PrometheusExporterConfig()
    judge: JudgeTriggerConfig = JudgeTriggerConfig()
    webhook: WebhookConfig = WebhookConfig()


class MergeConfig(_Section):
    """The merge stage: what it remembers so metrics count each run and mode once, store or not."""

    remembered_runs: int = Field(100_000, gt=0, description=(
        "Recent runs whose diagnosis and counting state are kept in memory, within an eighth of "
        "assembly.max_buffered_bytes as well (the store, when on, is read for older ones)."))
    pending_outcomes: int = Field(100_000, gt=0, description=(
        "Outcomes posted before their run was diagnosed, kept at most (in the store, or in memory when it is off)."))
    pending_outcome_ttl_seconds: float = Field(86_400.0, gt=0, description=(
        "An outcome posted for a trace that is never diagnosed is dropped after this many seconds."))
    max_deferred_runs: int = Field(10_000, gt=0, description=(
        "Runs held in memory while a failed store look-up defers them; past it the newest without a taken outcome are "
        "let go of, kept unsettled in the log (which a restart replays) and counted (mast_deferred_runs_released_total). "
        "With the log off all are held (charged to the memory budget)."))


class WebConfig(_Section):
    """The built-in web view at / (reads the store, or recent diagnoses in memory with the store off)."""

    enabled: bool = Field(True, description="Serve the web view.")
    overview_window: int = Field(5000, gt=0, description="The overview summarises this many most recently diagnosed runs (in the chosen time range).")
    overview_models: int = Field(20, gt=0, description="Models per overview page, busiest first; the others are folded into one row.")
    runs_page_size: int = Field(50, gt=0, le=1000, description="Runs per page on /runs.")
    timeline_rows: int = Field(300, gt=0, le=5000, description=(
        "Steps drawn on a run page; a longer run is folded (the steps the findings point at, then the first and "
        "the last are drawn) and each fold links to a page of the steps it holds."))
    severity_min_outcomes: int = Field(20, gt=0, description="Runs with a known outcome (some failed, some successful) a model needs before its modes' lift and suggested severity are shown.")
    session_hours: float = Field(12.0, gt=0, description="How long a web login lasts (with receiver.api_token set).")
    trace_url: str | None = Field(None, description=(
        "Link each run page to the trace in your tracing UI (Grafana with Tempo, Jaeger, ...): a URL with "
        "{trace_id} where the trace id goes, e.g. https://grafana.example.com/explore?... or "
        "http://jaeger:16686/trace/{trace_id}. Unset: no link."))

    @field_validator("trace_url")
    @classmethod
    def _trace_url_names_the_trace(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"web.trace_url must be an http(s) URL, got {value!r}")
        if "{trace_id}" not in value:
            raise ValueError("web.trace_url must contain {trace_id}, where the run's trace id goes")
        return value


class MetricsConfig(_Section):
    """Label cardinality bounds for the Prometheus metrics."""

    max_models: int = Field(50, gt=0, description="Distinct model label values; further models are reported as \"other\".")
    max_agents: int = Field(50, gt=0, description="Distinct agent label values; further agents are reported as \"other\".")
    max_services: int = Field(50, gt=0, description="Distinct service_name label values; further services are reported as \"other\".")


from mast_otel.processors.detectors.settings import (  # noqa: F401 - re-exported: one config model
    ContentConfig, DetectionConfig, HistoryConfig, PrematureConfig, RepetitionConfig, TerminationConfig,
    _THRESHOLD_GROUPS, _Thresholds,
)


class JudgeConfig(_Section):
    """The LLM judge tier (off unless a model is set)."""

    model: str | None = Field(None, description="Any litellm model string; unset: no judge.")
    api_base: str | None = Field(None, description="The model server's base URL, when not the provider's default.")
    api_key: SecretStr | None = Field(None, description="The model's API key; masked when printed.")
    judge_failed_runs: bool = Field(True, description="Judge runs whose outcome is a failure.")
    judge_fatal_runs: bool = Field(True, description="Judge runs the rules found a fatal mode in.")
    judge_sessions: bool = Field(True, description=(
        "Judge each session of two turns or more when it completes (sessions.quiet_seconds without a turn, or closed "
        "early beyond sessions.max_open_sessions): one request over its turns, within this section's budget; a later "
        "turn that reopens it gets it judged again when it completes."))
    sample_rate: float = Field(0.0, ge=0, le=1, description="Share of the other runs judged at random.")
    tokens_per_minute: int = Field(200_000, gt=0, description="Token budget; runs beyond it are skipped and counted.")
    usd_per_hour: float = Field(5.0, ge=0, description="Spending budget in US dollars; runs beyond it are skipped and counted.")
    max_concurrency: int = Field(4, gt=0, description="Judge requests in flight (worker threads).")
    max_queue: int = Field(100, gt=0, description="Runs waiting to be judged; beyond it runs are skipped and counted.")
    timeout_seconds: float = Field(60.0, gt=0, description="Per judge request.")
    max_retries: int = Field(2, ge=0, description="Retries of a failed judge request.")
    prompt_token_budget: int = Field(12_000, gt=0, description="Largest prompt; longer runs are abridged to fit.")
    allow_content: bool = Field(True, description="The judge may read captured content (always redacted).")
    allow_structure_only_runs: bool = Field(True, description="Judge runs captured without content, on their structure.")
    redaction_patterns: list[str] = Field([], description="Extra regular expressions; matches become [REDACTED:custom].")
    circuit_breaker_failures: int = Field(5, gt=0, description="Consecutive failures that open the circuit breaker.")
    circuit_breaker_reset_seconds: float = Field(60.0, gt=0, description="How long an open breaker stays open.")
    output_mode: Literal["auto", "json_schema", "json", "tool"] = Field("auto", description=(
        "How the model is asked for structured output: auto uses a JSON schema where litellm says the model supports "
        "one, else JSON mode; tool forces a function call."))
    max_output_tokens: int = Field(2048, gt=0, description="Largest judge answer.")
    min_confidence: float = Field(0.5, ge=0, le=1, description="Judge verdicts below this are not reported.")
    retry_backoff_seconds: float = Field(1.0, ge=0, description="Wait before a retry; doubled per retry, with jitter.")
    cache_size: int = Field(1024, ge=0, description="Judged runs remembered by content hash; 0 disables the cache.")
    field_max_chars: int | None = Field(
        None, gt=0, description="Optional hard cap on one message, argument or result, in characters; by default "
        "texts are cut only as far as the run's prompt budget requires, longest first.")
    extra_params: dict[str, Any] = Field({}, description="Passed to litellm.completion (e.g. aws_region_name).")

    @field_validator("redaction_patterns", mode="after")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        return valid_patterns(value, "redaction pattern")


class SessionsConfig(_Section):
    """Conversations: runs with a session or conversation id grouped into sessions, each diagnosed across its turns.

    (Not the web view's login sessions.)"""

    enabled: bool = Field(True, description="Group runs into sessions by their session or conversation id and diagnose each session across its turns.")
    quiet_seconds: float = Field(1800.0, gt=0, description=(
        "A session completes after this many seconds without a new turn; a later turn opens it again."))
    max_turns: int = Field(200, gt=0, description=(
        "Turns kept per session (in memory and in the store); beyond it the oldest are dropped and the session's diagnosis says how many."))
    max_open_sessions: int = Field(10_000, gt=0, description=(
        "Sessions open at once in this process; beyond it the one quiet longest is completed early."))
    max_turn_bytes: int = Field(1024 * 1024, ge=1024, description=(
        "Largest stored form of one turn's spans; a larger turn keeps its root and as many of its earliest spans as fit."))
    max_held_bytes: int = Field(64 * 1024 * 1024, ge=0, description=(
        "Open sessions' turns kept parsed in memory (charged to the memory account), so a new turn does not read the "
        "earlier ones back; beyond it, or beyond an eighth of assembly.max_buffered_bytes, the least recently active "
        "session's are let go (read back when needed). Sessions of one turn are not held, nor anything while the "
        "memory account is over its budget. 0: none."))
    max_stored_sessions: int = Field(100_000, gt=0, description=(
        "Sessions kept in the store (in memory when the store is off); the least recently active are pruned beyond it."))
    detection: SessionDetectionConfig = Field(default_factory=SessionDetectionConfig, description=(
        "Thresholds of the cross-turn failure modes."))


class ProcessorConfig(BaseSettings):
    """Everything ``mast-otel serve`` reads."""

    model_config = SettingsConfigDict(
        env_prefix="MAST_OTEL_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    receiver: ReceiverConfig = ReceiverConfig()
    assembly: AssemblyConfig = AssemblyConfig()
    store: StoreConfig = StoreConfig()
    wal: WALConfig = WALConfig()
    exporters: ExportersConfig = ExportersConfig()
    merge: MergeConfig = MergeConfig()
    web: WebConfig = WebConfig()
    metrics: MetricsConfig = MetricsConfig()
    detection: DetectionConfig = DetectionConfig()
    hints: HintsConfig = HintsConfig()
    judge: JudgeConfig = JudgeConfig()
    sessions: SessionsConfig = SessionsConfig()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level of the service.")
    gc_young_threshold: int = Field(
        20_000, ge=0,
        description="Allocations between the garbage collector's young-generation passes in `mast-otel serve` "
                    "(Python's default is 700; buffered spans make each full pass long). 0 keeps Python's thresholds.")
    # Declared so YAML, keyword and MAST_OTEL_EXPORTER__* input is read; always moved into exporters.otlp.
    exporter: ExporterConfig | None = Field(None, exclude=True, description="Deprecated: use exporters.otlp.")

    @model_validator(mode="before")
    @classmethod
    def _deprecated_exporter(cls, data: object) -> object:
        """Map the deprecated single ``exporter:`` section onto ``exporters.otlp``."""
        if not isinstance(data, dict) or "exporter" not in data:
            return data
        data = dict(data)
        old = data.pop("exporter")
        if isinstance(old, BaseModel):
            old = old.model_dump()
        if isinstance(old, str):  # MAST_OTEL_EXPORTER as JSON
            old = json.loads(old)
        if old is None or (isinstance(old, dict) and not old.get("endpoint")):
            return data  # no endpoint: re-export was off
        warnings.warn("the exporter: section is deprecated: list endpoints under exporters.otlp instead",
                      FutureWarning, stacklevel=2)
        exporters = data.get("exporters") or {}
        if isinstance(exporters, BaseModel):
            exporters = exporters.model_dump()
        exporters = dict(exporters)
        exporters["otlp"] = [old, *list(exporters.get("otlp") or [])]
        data["exporters"] = exporters
        return data

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlSource(settings_cls))

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> ProcessorConfig:
        """Build the configuration; ``path`` (or ``MAST_OTEL_CONFIG``) names a YAML file."""
        token = None
        if path is not None:
            token = _CONFIG_PATH.set(Path(path))
        try:
            return cls(**overrides)
        finally:
            if token is not None:
                _CONFIG_PATH.reset(token)


_CONFIG_PATH: contextvars.ContextVar[Path | None] = contextvars.ContextVar("mast_otel_config_path", default=None)


class _YamlSource(PydanticBaseSettingsSource):
    """Reads the YAML configuration file, if one was named."""

    def _data(self) -> dict[str, Any]:
        path = _CONFIG_PATH.get() or (Path(os.environ["MAST_OTEL_CONFIG"]) if os.environ.get("MAST_OTEL_CONFIG") else None)
        if path is None:
            return {}
        import yaml

        try:
            data = yaml.safe_load(path.read_text()) or {}
        except FileNotFoundError:
            raise ValueError(f"configuration file {path} does not exist") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            raise ValueError(f"configuration file {path} is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"configuration file {path} must hold a mapping at the top level")
        return data

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data().get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return self._data()
