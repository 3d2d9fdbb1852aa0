-- Claims of due deadlines (SQLite twin of ../0004_deadline_claims.sql, kept in step so both
-- sets have the same versions). Types as in 0001: timestamptz → text (ISO 8601, UTC, on
-- SQLite's clock, which compares in time order as text).

ALTER TABLE deadlines ADD COLUMN claimed_by text NULL;
ALTER TABLE deadlines ADD COLUMN claim_until text NULL;
