-- Listing matches for the platform API (`GET /v1/matches`, `Store::list_matches`): newest
-- first, a page at a time, keyed on (created_at, match_id). Keep in step with
-- ../0013_matches_by_creation.sql.
CREATE INDEX matches_by_creation ON matches (created_at DESC, match_id DESC);
