-- One row per revision on PostgreSQL: SQLite's 0009 shape (issue 19; docs/decisions.md §
-- Storage). A revision's log entry (its command or lifecycle event, captured instant,
-- randomness trace and internal events), the receipt of the command that made it (key and
-- fingerprint; the outcome is "applied at this revision") and every recipient's publication
-- are one row, appended. `match_log`, `outbox` and the applied rows of `receipts` move here;
-- `receipts` keeps the final rejections, which make no revision. The match's state is
-- written to `matches` only at snapshot points (creation, every 32 revisions, the end):
-- `matches.revision` is the snapshot's, and the revisions after it are the match's tail.
--
-- `publications` is a JSON array, in the order the publications were decided, of
-- {"recipient": seat or null (authorized spectators), "payload": the encoded snapshot,
--  "traceContext": W3C traceparent or null}.
--
-- The fences are keys: `revisions_pkey` takes a revision once per match (the compare-and-set:
-- a commit appends revision r + 1 after finding r), `revisions_receipt` a command's receipt
-- key once. The outbox is a watermark: every row of a match past
-- `outbox_watermarks.dispatched` waits for dispatch; a match has a watermark row from its
-- creation until it is finished and dispatched through its last revision.

CREATE TABLE revisions (
    match_id     uuid NOT NULL,
    revision     bigint NOT NULL,
    principal    text NULL,
    command_id   uuid NULL,
    fingerprint  text NULL,
    instant_ms   bigint NOT NULL,
    written_at   timestamptz NOT NULL DEFAULT now(),
    entry        text NOT NULL,
    publications text NOT NULL,
    PRIMARY KEY (match_id, revision)
);

CREATE UNIQUE INDEX revisions_receipt ON revisions (match_id, principal, command_id) WHERE command_id IS NOT NULL;

CREATE TABLE outbox_watermarks (
    match_id   uuid PRIMARY KEY,
    dispatched bigint NOT NULL
);

INSERT INTO revisions (match_id, revision, principal, command_id, fingerprint, instant_ms, written_at, entry, publications)
SELECT l.match_id, l.revision, r.principal, r.command_id, r.fingerprint, l.instant_ms,
       COALESCE((SELECT min(o.created_at) FROM outbox AS o WHERE o.match_id = l.match_id AND o.revision = l.revision),
                now()),
       l.entry,
       COALESCE((SELECT json_agg(json_build_object(
                            'recipient', CASE o.recipient WHEN '' THEN NULL ELSE o.recipient END,
                            'payload', o.payload::json,
                            'traceContext', o.trace_context) ORDER BY o.ordinal)::text
                   FROM outbox AS o WHERE o.match_id = l.match_id AND o.revision = l.revision),
                '[]')
FROM match_log AS l
LEFT JOIN receipts AS r
       ON r.match_id = l.match_id AND r.revision = l.revision AND (r.outcome::jsonb ->> 'status') = 'applied';

-- Pending publications are a suffix of each match's revisions (marks are "up to a revision").
INSERT INTO outbox_watermarks (match_id, dispatched)
SELECT m.match_id,
       COALESCE((SELECT min(o.revision) - 1 FROM outbox AS o WHERE o.match_id = m.match_id AND NOT o.dispatched),
                m.revision)
FROM matches AS m
WHERE m.status = 'active'
   OR EXISTS (SELECT 1 FROM outbox AS o WHERE o.match_id = m.match_id AND NOT o.dispatched);

DELETE FROM receipts WHERE (outcome::jsonb ->> 'status') = 'applied';
DROP TABLE match_log;
DROP TABLE outbox;
