"""The processor's configuration: one typed model, from a YAML file plus environment variables.

Precedence: explicit keyword arguments > environment (``MAST_OTEL_<SECTION>__<FIELD>``, e.g.
``MAST_OTEL_RECEIVER__HTTP_PORT=14318``) > YAML file (``--config`` or ``MAST_OTEL_CONFIG``)
> defaults. Each pipeline component reads only its own section.
"""

from __future__ import annotations

import contextvars
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from mast_otel.instrumentation.claims import DEFAULT_FAILURE_PATTERNS, DEFAULT_SUCCESS_PATTERNS
from mast_otel.processors.hints.limits import DEFAULT_LIMIT_PATTERNS


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TLSConfig(_Section):
    cert_file: Path | None = None
    key_file: Path | None = None
    client_ca_file: Path | None = None  # set to require client certificates (mTLS)


class ReceiverConfig(_Section):
    """OTLP/HTTP and OTLP/gRPC ingest, and the HTTP API that shares the HTTP port."""

    host: str = "0.0.0.0"
    http_port: int = Field(4318, ge=0, le=65535)  # 0 picks a free port
    grpc_port: int = Field(4317, ge=0, le=65535)
    grpc_enabled: bool = True
    max_body_bytes: int = Field(16 * 1024 * 1024, gt=0)  # decompressed; larger bodies get 413
    ingest_token: SecretStr | None = None  # bearer token required on /v1/traces and gRPC
    api_token: SecretStr | None = None  # bearer token required on /v1/diagnoses, /v1/outcomes
    tls: TLSConfig = TLSConfig()
    retry_after_seconds: int = Field(2, ge=1)  # sent with 429/503 under memory pressure


class AssemblyConfig(_Section):
    """Per-trace buffering: when a run counts as complete, and how much may be held."""

    grace_seconds: float = Field(2.0, ge=0)  # quiet time after the root agent span ended
    idle_timeout_seconds: float = Field(300.0, gt=0)  # no spans for this long: diagnose anyway
    max_spans_per_trace: int = Field(5000, gt=0)
    max_bytes_per_trace: int = Field(8 * 1024 * 1024, gt=0)
    max_traces_in_flight: int = Field(20000, gt=0)
    max_buffered_bytes: int = Field(512 * 1024 * 1024, gt=0)  # over this, ingest answers 429/503
    # over max_buffered_bytes for this long: evict (eviction_policy) down to 90% of it
    pressure_eviction_seconds: float = Field(5.0, ge=0)
    retention_seconds: float = Field(600.0, ge=0)  # late spans re-diagnose within this window
    eviction_policy: Literal["oldest_first", "largest_first"] = "oldest_first"
    sweep_interval_seconds: float = Field(0.5, gt=0)


class StoreConfig(_Section):
    """The diagnosis store: embedded SQLite."""

    path: Path = Path("mast-otel.sqlite")
    max_rows: int = Field(1_000_000, gt=0)  # oldest diagnoses are pruned beyond this


class ExporterConfig(_Section):
    """Enriched spans re-exported over OTLP (Tempo, Jaeger, a collector). Off when no endpoint."""

    endpoint: str | None = None  # e.g. http://tempo:4318/v1/traces or grpc://tempo:4317
    protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    headers: dict[str, str] = {}
    timeout_seconds: float = Field(10.0, gt=0)
    queue_size: int = Field(2048, gt=0)  # batches; beyond it batches are dropped and counted
    export_all_spans: bool = True  # False: only agent-related spans


class MetricsConfig(_Section):
    """Label cardinality bounds for the Prometheus metrics."""

    max_models: int = Field(50, gt=0)  # further model values are reported as "other"
    max_agents: int = Field(50, gt=0)
    max_services: int = Field(50, gt=0)


from mast_otel.processors.detectors.settings import (  # noqa: F401 - re-exported: one config model
    ContentConfig, DetectionConfig, HistoryConfig, PrematureConfig, RepetitionConfig, TerminationConfig,
    _THRESHOLD_GROUPS, _Thresholds,
)


class ToolRule(_Section):
    """One tool catalog entry: which kind of action a tool is, optionally for one service or agent."""

    name: str = Field(description="the tool's name, or a shell-style pattern such as 'restart_*'")
    kind: Literal["read", "write", "verify", "clarify", "handoff", "other"] = Field(
        description="what the tool does: reads, changes, checks, asks a person, hands off to another agent")
    service: str | None = Field(None, description="only for spans of this service.name")
    agent: str | None = Field(None, description="only for runs of this agent")


class HintsConfig(_Section):
    """Hints derived from what frameworks emit where mast-otel's own ``mast.*`` hints are absent."""

    tools: list[ToolRule] = Field([], description="the tool catalog; the first matching entry wins over inference")
    infer_tool_kinds: bool = Field(True, description="infer a tool's kind from its name or description when no hint or catalog entry gives it")
    success_patterns: list[str] = Field(list(DEFAULT_SUCCESS_PATTERNS), description="regular expressions: a final answer matching one claims success")
    failure_patterns: list[str] = Field(list(DEFAULT_FAILURE_PATTERNS), description="regular expressions: a final answer matching one says the task was not done (wins over success)")
    limit_patterns: list[str] = Field(list(DEFAULT_LIMIT_PATTERNS), description="regular expressions over error types, error messages and final answers that mean a framework limit stopped the run")
    model_aliases: dict[str, str] = Field({}, description="model name -> the name to report it under; provider prefixes ('openai/gpt-4o-mini') are folded before")

    @field_validator("success_patterns", "failure_patterns", "limit_patterns", mode="after")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        import re

        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from None
        return value


class JudgeConfig(_Section):
    """The LLM judge tier (off unless a model is set)."""

    model: str | None = None  # any litellm model string
    api_base: str | None = None
    api_key: SecretStr | None = None
    judge_failed_runs: bool = True
    judge_fatal_runs: bool = True
    sample_rate: float = Field(0.0, ge=0, le=1)
    tokens_per_minute: int = Field(200_000, gt=0)
    usd_per_hour: float = Field(5.0, ge=0)
    max_concurrency: int = Field(4, gt=0)
    max_queue: int = Field(100, gt=0)
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0)
    prompt_token_budget: int = Field(12_000, gt=0)
    allow_content: bool = True  # judge may read captured content (always redacted)
    allow_structure_only_runs: bool = True  # judge runs captured without content on structure
    redaction_patterns: list[str] = []  # extra regular expressions; matches become [REDACTED:custom]
    circuit_breaker_failures: int = Field(5, gt=0)
    circuit_breaker_reset_seconds: float = Field(60.0, gt=0)
    # How the model is asked for structured output: "auto" uses a JSON schema where litellm
    # says the model supports one, else JSON mode; "tool" forces a function call.
    output_mode: Literal["auto", "json_schema", "json", "tool"] = "auto"
    max_output_tokens: int = Field(2048, gt=0)
    min_confidence: float = Field(0.5, ge=0, le=1)  # judge verdicts below this are not reported
    retry_backoff_seconds: float = Field(1.0, ge=0)  # doubled per retry, with jitter
    cache_size: int = Field(1024, ge=0)  # judged runs remembered by content hash; 0 disables
    field_max_chars: int = Field(800, gt=0)  # per message/argument/result before truncation
    extra_params: dict[str, Any] = {}  # passed to litellm.completion (e.g. aws_region_name)

    @field_validator("redaction_patterns", mode="after")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        import re

        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"redaction pattern {pattern!r} is not a valid regular expression: {exc}") from None
        return value


class ProcessorConfig(BaseSettings):
    """Everything ``mast-otel serve`` reads."""

    model_config = SettingsConfigDict(
        env_prefix="MAST_OTEL_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    receiver: ReceiverConfig = ReceiverConfig()
    assembly: AssemblyConfig = AssemblyConfig()
    store: StoreConfig = StoreConfig()
    exporter: ExporterConfig = ExporterConfig()
    metrics: MetricsConfig = MetricsConfig()
    detection: DetectionConfig = DetectionConfig()
    hints: HintsConfig = HintsConfig()
    judge: JudgeConfig = JudgeConfig()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

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
            raise ValueError(f"configuration file {path} is not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"configuration file {path} must hold a mapping at the top level")
        return data

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data().get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return self._data()
