-- Webhook endpoints as data (SQLite twin of ../0016_webhook_endpoints.sql, kept in step;
-- types as in 0004: bytea → blob).
CREATE TABLE webhook_endpoints (
    id                text PRIMARY KEY,
    url               text NOT NULL,
    kinds             text NULL,
    secret            blob NOT NULL,
    previous_secret   blob NULL,
    previous_until_ms integer NULL,
    origin            text NOT NULL CHECK (origin IN ('api', 'config')),
    version           integer NOT NULL,
    created_ms        integer NOT NULL,
    updated_ms        integer NOT NULL
);
