-- Listing matches for the platform API (`GET /v1/matches`, `Store::list_matches`): newest
-- first, a page at a time, keyed on (created_at, match_id) so a page costs the same wherever
-- it starts. `created_at` never changes, so the index costs one entry per created match and
-- does not stop a snapshot's update from being HOT. Keep in step with
-- sqlite/0013_matches_by_creation.sql.
CREATE INDEX matches_by_creation ON matches (created_at DESC, match_id DESC);
