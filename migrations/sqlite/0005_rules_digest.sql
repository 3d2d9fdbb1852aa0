-- The rules module's digest pinned at creation (SHA-256 of the JCS of its descriptor and
-- generated schemas; see juegoland_core::registry::rules_digest). The whole state JSON
-- carries it too; the column lets operators find matches pinned to a given module. Empty
-- for matches created before digests were pinned. Keep in step with ../0005_rules_digest.sql.
ALTER TABLE matches ADD COLUMN rules_digest text NOT NULL DEFAULT '';
