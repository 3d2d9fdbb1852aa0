-- Webhook endpoints' cursors into the platform feed and their deliverers' leases (SQLite twin
-- of ../0015_webhook_cursors.sql, kept in step). Types as in 0004: timestamptz → text
-- (ISO 8601, UTC, on SQLite's clock, which compares in time order as text). `txid` is always
-- 0 here: one writer commits in order, so `seq` alone is the feed's order.
CREATE TABLE webhook_cursors (
    endpoint    text PRIMARY KEY,
    txid        integer NOT NULL DEFAULT 0,
    seq         integer NOT NULL DEFAULT 0,
    claimed_by  text NULL,
    claim_until text NULL,
    claim_epoch integer NOT NULL DEFAULT 0,
    advanced_at text NULL
);
