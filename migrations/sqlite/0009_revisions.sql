-- One row per revision: the log is the write (issue 19; docs/decisions.md § Storage). A
-- revision's log entry (its command or lifecycle event, captured instant, randomness trace
-- and internal events), the receipt of the command that made it (its key and fingerprint;
-- the outcome is "applied at this revision") and every recipient's publication are one row,
-- appended. `match_log`, `outbox` and the applied rows of `receipts` move here; `receipts`
-- keeps the final rejections, which make no revision.
--
-- `publications` is a JSON array, in the order the publications were decided, of
-- {"recipient": seat or null (authorized spectators), "payload": the encoded snapshot, "traceContext": W3C traceparent or null}.
-- `written_ms` is when the row was written, on this machine's clock (the outbox backlog's age).
--
-- The table is a rowid table, so the appends of every match fill the same last pages, and
-- ONE index serves every lookup by match: the revision fence (SQLite has one writer, and a
-- commit's `BEGIN IMMEDIATE` holds it, so the fence is a read of the match's last entry in
-- the same transaction), the receipt-key check (the match's entries sit side by side), and
-- activation. PostgreSQL, with many writers, has its own unique key (kept in step there).
--
-- The outbox is a watermark: every row of a match past `outbox_watermarks.dispatched` is
-- waiting for dispatch. A match has a watermark row from its creation until it is finished
-- and dispatched through its last revision.

CREATE TABLE revisions (
    match_id     blob NOT NULL,
    revision     integer NOT NULL,
    principal    text NULL,
    command_id   blob NULL,
    fingerprint  text NULL,
    instant_ms   integer NOT NULL,
    written_ms   integer NOT NULL,
    entry        text NOT NULL,
    publications text NOT NULL
);

CREATE INDEX revisions_by_match ON revisions (match_id, revision, principal, command_id);

CREATE TABLE outbox_watermarks (
    match_id   blob PRIMARY KEY NOT NULL,
    dispatched integer NOT NULL
) WITHOUT ROWID;

INSERT INTO revisions (match_id, revision, principal, command_id, fingerprint, instant_ms, written_ms, entry, publications)
SELECT l.match_id, l.revision, r.principal, r.command_id, r.fingerprint, l.instant_ms,
       CAST((julianday(COALESCE(
           (SELECT min(o.created_at) FROM outbox AS o WHERE o.match_id = l.match_id AND o.revision = l.revision),
           'now')) - 2440587.5) * 86400000.0 AS integer),
       l.entry,
       (SELECT json_group_array(json_object(
                   'recipient', CASE o.recipient WHEN '' THEN NULL ELSE o.recipient END,
                   'payload', json(o.payload),
                   'traceContext', o.trace_context) ORDER BY o.ordinal)
          FROM outbox AS o WHERE o.match_id = l.match_id AND o.revision = l.revision)
FROM match_log AS l
LEFT JOIN receipts AS r
       ON r.match_id = l.match_id AND r.revision = l.revision AND json_extract(r.outcome, '$.status') = 'applied'
ORDER BY l.match_id, l.revision;

-- Pending publications are a suffix of each match's revisions (marks are "up to a revision").
INSERT INTO outbox_watermarks (match_id, dispatched)
SELECT m.match_id,
       COALESCE((SELECT min(o.revision) - 1 FROM outbox AS o WHERE o.match_id = m.match_id AND o.dispatched = 0),
                m.revision)
FROM matches AS m
WHERE m.status = 'active'
   OR EXISTS (SELECT 1 FROM outbox AS o WHERE o.match_id = m.match_id AND o.dispatched = 0);

DELETE FROM receipts WHERE json_extract(outcome, '$.status') = 'applied';
DROP TABLE match_log;
DROP TABLE outbox;
