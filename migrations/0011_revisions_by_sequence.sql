-- SQLite's 0011 keys its revisions by the match's creation order and compresses their
-- publications (bytes written per move of the embedded store); this version exists so both
-- sets keep the same numbering.
SELECT 1;
