-- The outbox without its primary key (SQLite twin of ../0008_outbox_without_primary_key.sql,
-- which says why). SQLite cannot drop a table's key, so the table is rebuilt with the same
-- columns and rows, and its partial index again.

CREATE TABLE outbox_rebuilt (
    match_id      blob NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    revision      integer NOT NULL,
    recipient     text NOT NULL,
    ordinal       integer NOT NULL,
    payload       text NOT NULL,
    dispatched    integer NOT NULL DEFAULT 0 CHECK (dispatched IN (0, 1)),
    created_at    text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    trace_context text NULL
);

INSERT INTO outbox_rebuilt (match_id, revision, recipient, ordinal, payload, dispatched, created_at, trace_context)
SELECT match_id, revision, recipient, ordinal, payload, dispatched, created_at, trace_context FROM outbox
ORDER BY match_id, revision, ordinal;

DROP TABLE outbox;
ALTER TABLE outbox_rebuilt RENAME TO outbox;

CREATE INDEX outbox_undispatched ON outbox (match_id, revision, ordinal) WHERE dispatched = 0;
