-- The durable state of matches (SQLite, the embedded single-process store). Keep in step
-- with ../0001_core_tables.sql: same tables, columns and keys. Types: uuid → 16-byte blob
-- (sqlx's SQLite encoding of uuid::Uuid), jsonb → text holding JSON, timestamptz → text
-- (ISO 8601, UTC), boolean → integer 0/1.

CREATE TABLE matches (
    match_id      blob PRIMARY KEY NOT NULL,
    game_id       text NOT NULL,
    rules_version text NOT NULL,
    game_version  text NOT NULL,
    revision      integer NOT NULL CHECK (revision >= 0),
    phase_epoch   integer NOT NULL CHECK (phase_epoch >= 0),
    status        text NOT NULL CHECK (status IN ('active', 'finished')),
    state         text NOT NULL,
    owner         text NULL,
    owner_epoch   integer NOT NULL DEFAULT 0,
    created_at    text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at    text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX matches_active ON matches (game_id) WHERE status = 'active';

CREATE TABLE participants (
    match_id    blob NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    seat        text NOT NULL,
    principal   text NULL,
    bot_profile text NULL,
    status      text NOT NULL CHECK (status IN ('active', 'withdrawn')),
    PRIMARY KEY (match_id, seat),
    CHECK ((principal IS NULL) <> (bot_profile IS NULL))
);

CREATE INDEX participants_principal ON participants (principal) WHERE principal IS NOT NULL;

CREATE TABLE receipts (
    match_id    blob NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    principal   text NOT NULL,
    command_id  blob NOT NULL,
    fingerprint text NOT NULL,
    outcome     text NOT NULL,
    revision    integer NOT NULL,
    created_at  text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (match_id, principal, command_id)
);

CREATE TABLE match_log (
    match_id   blob NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    revision   integer NOT NULL,
    instant_ms integer NOT NULL,
    entry      text NOT NULL,
    PRIMARY KEY (match_id, revision)
);

CREATE TABLE deadlines (
    match_id    blob NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    deadline_id text NOT NULL,
    generation  integer NOT NULL,
    due_ms      integer NOT NULL,
    payload     text NOT NULL,
    state       text NOT NULL CHECK (state IN ('pending', 'fired', 'cancelled')),
    updated_at  text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (match_id, deadline_id, generation)
);

CREATE INDEX deadlines_due ON deadlines (due_ms) WHERE state = 'pending';

CREATE TABLE outbox (
    match_id   blob NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    revision   integer NOT NULL,
    recipient  text NOT NULL,
    ordinal    integer NOT NULL,
    payload    text NOT NULL,
    dispatched integer NOT NULL DEFAULT 0 CHECK (dispatched IN (0, 1)),
    created_at text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (match_id, revision, recipient)
);

CREATE INDEX outbox_undispatched ON outbox (match_id, revision, ordinal) WHERE dispatched = 0;
