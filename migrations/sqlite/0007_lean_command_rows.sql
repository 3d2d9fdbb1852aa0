-- PostgreSQL's 0007 drops the foreign keys of the per-command tables and stores the JSON
-- documents as text. SQLite already stores them as text, and its foreign-key check is an
-- in-process index probe; dropping a constraint would mean rebuilding the tables. This
-- version exists so both sets keep the same numbering.
SELECT 1;
