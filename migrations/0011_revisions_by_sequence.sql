-- SQLite's 0011 keys its revisions by the match's creation order and compresses their
-- publications. Here the publications of new revision rows are compressed by TOAST with LZ4
-- instead of pglz: a move's row is over TOAST's 2 KB threshold, so PostgreSQL compresses its
-- publications on every insert, and `pglz_compress` was about 9% of PostgreSQL's CPU in the
-- cluster load test (perf, 2026-12-06); LZ4 does the same work several times faster, to about
-- the same size. Rows written before keep their pglz values (both read the same). A server
-- built without LZ4 refuses the setting (feature_not_supported) and keeps pglz.
DO $$
BEGIN
    ALTER TABLE revisions ALTER COLUMN publications SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this PostgreSQL server has no LZ4: revisions.publications keeps pglz';
END
$$;
