-- The lock digest of the published package a match was pinned to at creation (the JCS
-- digest of its lock; see juegoland_core::packages). The package is the match's game at its
-- `game_version` (the engine refuses a pin naming another). The whole state JSON carries the
-- pin too; the column lets operators find the matches that still need a publication
-- (`Store::pinned_to`). Empty for matches created without a package registry and for every
-- match created before 0012: they keep loading unpinned. Keep in step with
-- sqlite/0012_lock_digest.sql.
ALTER TABLE matches ADD COLUMN lock_digest text NOT NULL DEFAULT '';
CREATE INDEX matches_by_lock_digest ON matches (lock_digest) WHERE lock_digest <> '';
