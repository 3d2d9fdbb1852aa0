-- Every command rewrites its match's row. Leaving a third of each page free lets
-- PostgreSQL keep the new row version on the same page (a HOT update: no index entries
-- written, old versions pruned in place), which keeps commit latency flat under load.
-- Keep in step with sqlite/0002_matches_fillfactor.sql.
ALTER TABLE matches SET (fillfactor = 70);
