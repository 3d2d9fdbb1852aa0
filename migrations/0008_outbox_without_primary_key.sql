-- The outbox without its primary key (PostgreSQL). Keep in step with
-- sqlite/0008_outbox_without_primary_key.sql.
--
-- (match, revision, recipient) is unique by construction: a commit writes the outbox rows of
-- the revision it created or compare-and-set in the same transaction, so no two commits write
-- the rows of one revision. The index behind the key was written on every publication (two
-- per Conecta 4 move) at a random place (keyed by match), and again on every "dispatched"
-- update, which is not HOT; nothing reads through it: the sweeper and the marks go through
-- `outbox_undispatched`. In the all-in-one's SQLite store it was a fifth of the pages each
-- move wrote.

ALTER TABLE outbox DROP CONSTRAINT outbox_pkey;
