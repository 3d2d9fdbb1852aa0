-- Webhook endpoints as data (libs/store/src/webhook_endpoints.rs): registered through the
-- platform API (`origin = 'api'`) or written from a deliverer's start-up configuration
-- (`origin = 'config'`, replaced by the configuration of the deliverer that starts last).
-- Deliverers read this table while they run, so an endpoint registered, changed or removed
-- takes effect without a restart. Its cursor and lease stay in `webhook_cursors` (0015),
-- under the same id.
--
-- `secret` signs every delivery; `previous_secret` (a rotated-out secret) signs them too
-- until `previous_until_ms`, so receivers switch secrets without losing a delivery. Secrets
-- are HMAC keys and must be readable to sign: guard the database as you guard them.
-- `kinds` is a JSON array of feed kinds, NULL for every kind. Times are ms since the Unix
-- epoch on the writer's clock. `version` grows with every change (a compare-and-set for
-- concurrent API calls). Keep in step with sqlite/0016_webhook_endpoints.sql.
CREATE TABLE webhook_endpoints (
    id                text PRIMARY KEY,
    url               text NOT NULL,
    kinds             text NULL,
    secret            bytea NOT NULL,
    previous_secret   bytea NULL,
    previous_until_ms bigint NULL,
    origin            text NOT NULL CHECK (origin IN ('api', 'config')),
    version           bigint NOT NULL,
    created_ms        bigint NOT NULL,
    updated_ms        bigint NOT NULL
);
