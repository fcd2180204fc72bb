"""The store's schema as numbered migrations, one text for SQLite and PostgreSQL alike.

Column types are the ones both databases read the same way (``BIGINT`` for nanoseconds,
``DOUBLE PRECISION`` for seconds and scores); ``{without_rowid}`` is SQLite's clustered
table, empty on PostgreSQL. A store records the versions it has applied in
``schema_migrations``; :func:`pending` lists what a store at a given version still needs.
Appending a migration is how the schema changes: an applied one is never edited.
"""

from __future__ import annotations

from typing import NamedTuple


class Migration(NamedTuple):
    version: int
    what: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "diagnoses, their modes, pending outcomes and step lists", """
CREATE TABLE IF NOT EXISTS diagnoses (
    trace_id     TEXT PRIMARY KEY,
    service_name TEXT,
    agent        TEXT,
    model        TEXT,
    root_span_id TEXT,
    outcome      TEXT,
    score        DOUBLE PRECISION,
    started_ns   BIGINT,
    ended_ns     BIGINT,
    diagnosed_at DOUBLE PRECISION NOT NULL,
    completion   TEXT NOT NULL,
    span_count   INTEGER NOT NULL,
    step_count   INTEGER NOT NULL,
    revision     INTEGER NOT NULL,
    fatal        INTEGER NOT NULL,
    mode_count   INTEGER NOT NULL,
    findings     TEXT NOT NULL,
    withdrawn    TEXT NOT NULL,
    accounting   TEXT NOT NULL,
    attribution  TEXT
);
CREATE INDEX IF NOT EXISTS diagnoses_time ON diagnoses (diagnosed_at);
CREATE INDEX IF NOT EXISTS diagnoses_model ON diagnoses (model, diagnosed_at);
CREATE INDEX IF NOT EXISTS diagnoses_agent ON diagnoses (agent, diagnosed_at);
CREATE TABLE IF NOT EXISTS diagnosis_modes (
    trace_id TEXT NOT NULL,
    mode     TEXT NOT NULL,
    PRIMARY KEY (mode, trace_id)
){without_rowid};
CREATE INDEX IF NOT EXISTS diagnosis_modes_trace ON diagnosis_modes (trace_id);
CREATE TABLE IF NOT EXISTS pending_outcomes (
    trace_id    TEXT PRIMARY KEY,
    outcome     TEXT NOT NULL,
    score       DOUBLE PRECISION,
    received_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_outcomes_time ON pending_outcomes (received_at);
CREATE TABLE IF NOT EXISTS run_steps (
    trace_id TEXT PRIMARY KEY,
    steps    TEXT NOT NULL
)"""),
    Migration(2, "a run's spans (shared store: the other half of a re-routed run) and the judge's verdicts", """
CREATE TABLE IF NOT EXISTS run_spans (
    trace_id TEXT PRIMARY KEY,
    spans    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judge_verdicts (
    cache_key  TEXT PRIMARY KEY,
    assessment TEXT NOT NULL,
    stored_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS judge_verdicts_time ON judge_verdicts (stored_at)"""),
    Migration(3, "conversations (sessions of turns, each turn a run), their turns' spans, modes and once-per-session counting", """
CREATE TABLE IF NOT EXISTS conversations (
    session_id    TEXT PRIMARY KEY,
    service_name  TEXT,
    started_ns    BIGINT,
    last_turn_at  DOUBLE PRECISION NOT NULL,
    completed_at  DOUBLE PRECISION,
    dropped_turns INTEGER NOT NULL,
    diagnosed_turns INTEGER NOT NULL,
    revision      INTEGER NOT NULL,
    mode_count    INTEGER NOT NULL,
    findings      TEXT NOT NULL,
    diagnosed_at  DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS conversations_time ON conversations (last_turn_at);
CREATE TABLE IF NOT EXISTS conversation_turns (
    session_id TEXT NOT NULL,
    trace_id   TEXT NOT NULL,
    started_ns BIGINT NOT NULL,
    spans      TEXT NOT NULL,
    PRIMARY KEY (session_id, trace_id)
){without_rowid};
CREATE INDEX IF NOT EXISTS conversation_turns_trace ON conversation_turns (trace_id);
CREATE TABLE IF NOT EXISTS conversation_modes (
    session_id TEXT NOT NULL,
    mode       TEXT NOT NULL,
    PRIMARY KEY (mode, session_id)
){without_rowid};
CREATE TABLE IF NOT EXISTS conversation_counted (
    session_id TEXT NOT NULL,
    counted    TEXT NOT NULL,
    PRIMARY KEY (session_id, counted)
){without_rowid}"""),
    Migration(4, "web sessions logged out before their expiry; which replica diagnoses a new run first", """
CREATE TABLE IF NOT EXISTS web_logouts (
    cookie_hash TEXT PRIMARY KEY,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS web_logouts_expiry ON web_logouts (expires_at);
CREATE TABLE IF NOT EXISTS run_claims (
    trace_id   TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    claimed_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS run_claims_time ON run_claims (claimed_at)"""),
    Migration(5, "GenAI log records parked by the replica they reached for the replica that holds their run", """
CREATE TABLE IF NOT EXISTS parked_log_records (
    trace_id  TEXT NOT NULL,
    span_id   TEXT NOT NULL,
    record    TEXT NOT NULL,
    parked_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS parked_log_records_trace ON parked_log_records (trace_id);
CREATE INDEX IF NOT EXISTS parked_log_records_time ON parked_log_records (parked_at)"""),
)

VERSIONS_TABLE = "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"


def pending(applied: set[int]) -> list[Migration]:
    """The migrations a store that has applied ``applied`` still needs, in order."""
    return [m for m in MIGRATIONS if m.version not in applied]


def statements(migration: Migration, *, without_rowid: str) -> list[str]:
    """The migration's statements, one each (PostgreSQL's extended protocol takes one at a time)."""
    text = migration.sql.format(without_rowid=without_rowid)
    return [s.strip() for s in text.split(";") if s.strip()]
