-- PostgreSQL dialect of the SQLite migration with the same number: BIGINT
-- for INTEGER, DOUBLE PRECISION for REAL, BOOLEAN for 0/1 flags, and the "C"
-- (byte-order) collation on every key that lists are ordered or paged by.
--
-- Conversation persistence (a3s): session data, an append-only message
-- history, cost records, artifacts, trace events, run records with their
-- events, and verification reports. Every child table cascades from
-- conversations, so deleting a conversation deletes everything it owns in
-- the same transaction. Times are UTC unix milliseconds; JSON columns hold
-- compact JSON the store does not interpret.

-- +goose Up
CREATE TABLE conversations (
    id                     TEXT COLLATE "C"    NOT NULL PRIMARY KEY,
    version                BIGINT  NOT NULL CHECK (version >= 1),
    name                   TEXT    NOT NULL DEFAULT '',
    workspace              TEXT    NOT NULL DEFAULT '',
    system_prompt          TEXT    NOT NULL DEFAULT '',
    max_context_length     BIGINT  NOT NULL DEFAULT 0 CHECK (max_context_length >= 0),
    auto_compact           BOOLEAN NOT NULL DEFAULT false,
    auto_compact_threshold DOUBLE PRECISION    NOT NULL DEFAULT 0.8 CHECK (auto_compact_threshold BETWEEN 0 AND 1),
    storage_type           TEXT    NOT NULL DEFAULT 'file',
    queue_config           TEXT,
    confirmation_policy    TEXT,
    permission_policy      TEXT,
    config_parent_id       TEXT COLLATE "C"    NOT NULL DEFAULT '',
    security_config        TEXT,
    planning_mode          TEXT    NOT NULL DEFAULT 'auto',
    goal_tracking          BOOLEAN NOT NULL DEFAULT false,
    state                  TEXT    NOT NULL CHECK (state IN ('unknown', 'active', 'paused', 'completed', 'error')),
    context_used_tokens    BIGINT  NOT NULL DEFAULT 0 CHECK (context_used_tokens >= 0),
    context_max_tokens     BIGINT  NOT NULL DEFAULT 200000 CHECK (context_max_tokens >= 0),
    context_percent        DOUBLE PRECISION    NOT NULL DEFAULT 0,
    context_turns          BIGINT  NOT NULL DEFAULT 0 CHECK (context_turns >= 0),
    prompt_tokens          BIGINT  NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens      BIGINT  NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    total_tokens           BIGINT  NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cache_read_tokens      BIGINT  CHECK (cache_read_tokens >= 0),
    cache_write_tokens     BIGINT  CHECK (cache_write_tokens >= 0),
    total_cost             DOUBLE PRECISION    NOT NULL DEFAULT 0 CHECK (total_cost >= 0),
    model_name             TEXT    NOT NULL DEFAULT '',
    tool_names             TEXT    NOT NULL DEFAULT '[]',
    thinking_enabled       BOOLEAN NOT NULL DEFAULT false,
    thinking_budget        BIGINT  CHECK (thinking_budget >= 0),
    -- provider, model and base URL only: the API key is never stored.
    llm_config             TEXT,
    tasks                  TEXT    NOT NULL DEFAULT '[]',
    parent_id              TEXT COLLATE "C"    NOT NULL DEFAULT '',
    message_count          BIGINT  NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    created_at_ms          BIGINT  NOT NULL,
    updated_at_ms          BIGINT  NOT NULL
);

-- List with a parent filter, in id order.
CREATE INDEX conversations_parent ON conversations (parent_id, id);
-- Retention: conversations not updated since a time, oldest first.
CREATE INDEX conversations_updated ON conversations (updated_at_ms, id);

-- The history: one row per message, appended. seq is 0-based and gapless per
-- conversation; the next one is max(seq) + 1, found through the unique index.
CREATE TABLE conversation_messages (
    session_id    TEXT COLLATE "C"    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq           BIGINT  NOT NULL CHECK (seq >= 0),
    role          TEXT    NOT NULL,
    content       TEXT    NOT NULL,
    created_at_ms BIGINT  NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE conversation_cost_records (
    session_id        TEXT COLLATE "C"    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq               BIGINT  NOT NULL CHECK (seq >= 0),
    model             TEXT    NOT NULL,
    provider          TEXT    NOT NULL,
    prompt_tokens     BIGINT  NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens BIGINT  NOT NULL CHECK (completion_tokens >= 0),
    total_tokens      BIGINT  NOT NULL CHECK (total_tokens >= 0),
    cost_usd          DOUBLE PRECISION,
    at_ms             BIGINT  NOT NULL,
    record_session_id TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE conversation_artifacts (
    session_id     TEXT COLLATE "C"    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    uri            TEXT COLLATE "C"    NOT NULL,
    artifact_id    TEXT    NOT NULL DEFAULT '',
    tool_name      TEXT    NOT NULL DEFAULT '',
    content        TEXT    NOT NULL,
    original_bytes BIGINT  NOT NULL DEFAULT 0 CHECK (original_bytes >= 0),
    shown_bytes    BIGINT  NOT NULL DEFAULT 0 CHECK (shown_bytes >= 0),
    created_at_ms  BIGINT  NOT NULL,
    updated_at_ms  BIGINT  NOT NULL,
    UNIQUE (session_id, uri)
);

CREATE TABLE conversation_trace_events (
    session_id    TEXT COLLATE "C"    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq           BIGINT  NOT NULL CHECK (seq >= 0),
    kind          TEXT    NOT NULL,
    name          TEXT    NOT NULL DEFAULT '',
    event         TEXT    NOT NULL,
    created_at_ms BIGINT  NOT NULL,
    UNIQUE (session_id, seq)
);

-- Run snapshots: the columns are authoritative for what they hold; the
-- snapshot document keeps the rest.
CREATE TABLE conversation_runs (
    session_id    TEXT COLLATE "C"    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id        TEXT COLLATE "C"    NOT NULL,
    status        TEXT    NOT NULL,
    event_count   BIGINT  NOT NULL DEFAULT 0 CHECK (event_count >= 0),
    snapshot      TEXT    NOT NULL,
    created_at_ms BIGINT  NOT NULL,
    updated_at_ms BIGINT  NOT NULL,
    PRIMARY KEY (session_id, run_id)
);

CREATE INDEX conversation_runs_created ON conversation_runs (session_id, created_at_ms, run_id);

CREATE TABLE conversation_run_events (
    session_id TEXT COLLATE "C"    NOT NULL,
    run_id     TEXT COLLATE "C"    NOT NULL,
    seq        BIGINT  NOT NULL CHECK (seq >= 0),
    at_ms      BIGINT  NOT NULL,
    event      TEXT    NOT NULL,
    UNIQUE (session_id, run_id, seq),
    FOREIGN KEY (session_id, run_id) REFERENCES conversation_runs (session_id, run_id) ON DELETE CASCADE
);

CREATE TABLE conversation_reports (
    session_id    TEXT COLLATE "C"    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq           BIGINT  NOT NULL CHECK (seq >= 0),
    subject       TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    report        TEXT    NOT NULL,
    created_at_ms BIGINT  NOT NULL,
    UNIQUE (session_id, seq)
);

-- +goose Down
DROP TABLE conversation_reports;
DROP TABLE conversation_run_events;
DROP INDEX conversation_runs_created;
DROP TABLE conversation_runs;
DROP TABLE conversation_trace_events;
DROP TABLE conversation_artifacts;
DROP TABLE conversation_cost_records;
DROP TABLE conversation_messages;
DROP INDEX conversations_updated;
DROP INDEX conversations_parent;
DROP TABLE conversations;
