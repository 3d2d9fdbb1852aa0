-- The platform's feed of match lifecycle events (`GET /v1/feed`, `Store::feed`). One writer
-- commits in order, so `seq` is the feed's order. Keep in step with ../0014_match_events.sql.
CREATE TABLE match_events (
    seq      integer PRIMARY KEY AUTOINCREMENT,
    match_id blob NOT NULL,
    revision integer NOT NULL,
    kind     text NOT NULL CHECK (kind IN ('created', 'seatChanged', 'finished', 'cancelled')),
    at       text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    body     text NOT NULL
);
