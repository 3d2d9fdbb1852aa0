-- SQLite's 0009 moves the embedded store to one row per revision (`revisions`, with the
-- outbox as a per-match watermark). PostgreSQL keeps its per-command tables until its own
-- migration to the same shape; this version exists so both sets keep the same numbering.
SELECT 1;
