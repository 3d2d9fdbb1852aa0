-- The platform's feed of match lifecycle events (`GET /v1/feed`, `Store::feed`): a match
-- created, a seat changed (a withdrawal that did not end it), a match finished or cancelled.
-- Each row is written by the commit that caused it, in the same statement (the group
-- commit's `fed` clause), so no result is ever lost and none is written for a commit that
-- lost its fence. `body` is the match's summary at that revision (juegoland_api::MatchSummary).
--
-- Order: `seq` alone is not commit order (two transactions take numbers and commit in the
-- other order), so a reader pages by (txid, seq) and reads only rows of transactions older
-- than every transaction still running (`pg_snapshot_xmin(pg_current_snapshot())`): a row it
-- has passed can never appear behind it. Keep in step with sqlite/0014_match_events.sql.
CREATE TABLE match_events (
    seq      bigserial NOT NULL,
    txid     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    match_id uuid NOT NULL,
    revision bigint NOT NULL,
    kind     text NOT NULL CHECK (kind IN ('created', 'seatChanged', 'finished', 'cancelled')),
    at       timestamptz NOT NULL DEFAULT now(),
    body     text NOT NULL,
    PRIMARY KEY (txid, seq)
);
