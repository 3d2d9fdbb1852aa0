-- The durable state of matches (PostgreSQL). Keep in step with sqlite/0001_core_tables.sql.

CREATE TABLE matches (
    match_id      uuid PRIMARY KEY,
    game_id       text NOT NULL,
    rules_version text NOT NULL,
    game_version  text NOT NULL,
    -- The compare-and-set fence: every accepted change increments it exactly once.
    revision      bigint NOT NULL CHECK (revision >= 0),
    phase_epoch   bigint NOT NULL CHECK (phase_epoch >= 0),
    status        text NOT NULL CHECK (status IN ('active', 'finished')),
    -- The whole MatchState, as serde encodes it.
    state         jsonb NOT NULL,
    -- Reserved for ownership fencing: the node that owns the match and its lease epoch.
    owner         text NULL,
    owner_epoch   bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX matches_active ON matches (game_id) WHERE status = 'active';

CREATE TABLE participants (
    match_id    uuid NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    seat        text NOT NULL,
    -- Exactly one of principal (a platform principal) and bot_profile (a built-in bot).
    principal   text NULL,
    bot_profile text NULL,
    status      text NOT NULL CHECK (status IN ('active', 'withdrawn')),
    PRIMARY KEY (match_id, seat),
    CHECK ((principal IS NULL) <> (bot_profile IS NULL))
);

CREATE INDEX participants_principal ON participants (principal) WHERE principal IS NOT NULL;

CREATE TABLE receipts (
    match_id    uuid NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    principal   text NOT NULL,
    command_id  uuid NOT NULL,
    -- Hex SHA-256 of the JCS of the whole validated command envelope.
    fingerprint text NOT NULL,
    outcome     jsonb NOT NULL,
    -- The revision the command produced (applied) or was judged against (rejected).
    revision    bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (match_id, principal, command_id)
);

CREATE TABLE match_log (
    match_id   uuid NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    revision   bigint NOT NULL,
    instant_ms bigint NOT NULL,
    -- The whole LogEntry: operation, randomness trace and internal events.
    entry      jsonb NOT NULL,
    PRIMARY KEY (match_id, revision)
);

CREATE TABLE deadlines (
    match_id    uuid NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    deadline_id text NOT NULL,
    generation  bigint NOT NULL,
    due_ms      bigint NOT NULL,
    payload     jsonb NOT NULL,
    state       text NOT NULL CHECK (state IN ('pending', 'fired', 'cancelled')),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (match_id, deadline_id, generation)
);

CREATE INDEX deadlines_due ON deadlines (due_ms) WHERE state = 'pending';

CREATE TABLE outbox (
    match_id   uuid NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    revision   bigint NOT NULL,
    -- The seat, or '' for authorized spectators.
    recipient  text NOT NULL,
    ordinal    integer NOT NULL,
    payload    text NOT NULL,
    dispatched boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (match_id, revision, recipient)
);

CREATE INDEX outbox_undispatched ON outbox (match_id, revision, ordinal) WHERE NOT dispatched;
