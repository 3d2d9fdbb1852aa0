-- PostgreSQL's 0002 sets a storage parameter SQLite does not have; this version exists so
-- both sets keep the same numbering.
SELECT 1;
