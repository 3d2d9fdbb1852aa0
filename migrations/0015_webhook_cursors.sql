-- Webhook endpoints' cursors into the platform feed (`match_events`, 0014) and the lease that
-- lets one deliverer at a time deliver each endpoint (`Store::claim_webhook`,
-- `advance_webhook`, `release_webhook`; libs/roles/src/webhooks.rs).
--
-- One row per configured endpoint, created by its first claim. (`txid`, `seq`) is the feed
-- cursor after the last event the endpoint answered 2xx for (0, 0: nothing yet, the whole
-- feed waits); it moves only forward and only through its claim. `claimed_by` names the
-- deliverer (a scheduler replica, or the all-in-one) holding the endpoint until
-- `claim_until`, on the DATABASE clock; another deliverer takes it only once that has passed
-- or the holder released it. `claim_epoch` grows each time the endpoint passes to a claimant
-- that did not hold it, so a holder that lost it (it stalled past its lease and another took
-- over) can no longer move the cursor. Keep in step with sqlite/0015_webhook_cursors.sql.
CREATE TABLE webhook_cursors (
    endpoint    text PRIMARY KEY,
    txid        bigint NOT NULL DEFAULT 0,
    seq         bigint NOT NULL DEFAULT 0,
    claimed_by  text NULL,
    claim_until timestamptz NULL,
    claim_epoch bigint NOT NULL DEFAULT 0,
    advanced_at timestamptz NULL
);
