-- Conversations (a3s messages) as a history that can branch: fork, rewind
-- and compaction records.
--
-- Lineage (not the a3s conversation's own parent_id field, which is data
-- the caller keeps): a conversation may name the history it was forked
-- from (lineage_parent) and how many positions it reads from it
-- (fork_next): its messages with seq < fork_next are read from the
-- parent's view, its own rows all have seq >= fork_next, so a fork copies
-- no messages. first_seq is where the conversation's view starts (a trim
-- of a conversation whose earlier messages others read).
--
-- lineage_parent names either a conversation or a retired history in
-- conversation_retired: the messages a deleted conversation's forks still
-- read (kind 1), or the messages a rewind superseded (kind 2,
-- superseded_of names the conversation, superseded_from the first
-- superseded position). Retired ids begin with U+001F, which conversation
-- ids never contain, so no conversation call can reach one. Both kinds of
-- parent can themselves have a lineage parent.
--
-- Compaction records: compact_to IS NOT NULL marks a summary written by
-- the store's compaction call, covering positions compact_from..compact_to.

-- +goose Up
ALTER TABLE conversations ADD COLUMN lineage_parent TEXT;
ALTER TABLE conversations ADD COLUMN fork_next INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN first_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX conversations_lineage ON conversations (lineage_parent) WHERE lineage_parent IS NOT NULL;

ALTER TABLE conversation_messages ADD COLUMN compact_from INTEGER;
ALTER TABLE conversation_messages ADD COLUMN compact_to INTEGER;
CREATE INDEX conversation_messages_compactions ON conversation_messages (session_id, seq) WHERE compact_to IS NOT NULL;

CREATE TABLE conversation_retired (
    id              TEXT    NOT NULL PRIMARY KEY,
    kind            INTEGER NOT NULL CHECK (kind IN (1, 2)),
    lineage_parent  TEXT,
    fork_next       INTEGER NOT NULL DEFAULT 0,
    superseded_of   TEXT,
    superseded_from INTEGER NOT NULL DEFAULT 0,
    -- the conversation's version the rewind made: orders its runs
    rewound_version INTEGER NOT NULL DEFAULT 0,
    created_at_ms   INTEGER NOT NULL
) STRICT;
CREATE INDEX conversation_retired_lineage ON conversation_retired (lineage_parent) WHERE lineage_parent IS NOT NULL;
CREATE INDEX conversation_retired_superseded ON conversation_retired (superseded_of, rewound_version) WHERE superseded_of IS NOT NULL;

CREATE TABLE conversation_retired_messages (
    holder_id     TEXT    NOT NULL REFERENCES conversation_retired (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL CHECK (seq >= 0),
    role          TEXT    NOT NULL,
    content       TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    compact_from  INTEGER,
    compact_to    INTEGER,
    PRIMARY KEY (holder_id, seq)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE conversation_retired_messages;
DROP TABLE conversation_retired;
DROP INDEX conversation_messages_compactions;
ALTER TABLE conversation_messages DROP COLUMN compact_to;
ALTER TABLE conversation_messages DROP COLUMN compact_from;
-- Forks lose what they read from their parents: the old schema has no lineage.
DROP INDEX conversations_lineage;
ALTER TABLE conversations DROP COLUMN first_seq;
ALTER TABLE conversations DROP COLUMN fork_next;
ALTER TABLE conversations DROP COLUMN lineage_parent;
