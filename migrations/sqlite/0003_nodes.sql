-- The cluster's membership registry (SQLite twin of ../0003_nodes.sql, kept in step so both
-- sets have the same versions; only PostgreSQL-backed clusters use it, the embedded store
-- is for one process). Types as in 0001: uuid → text here (the incarnation is only ever
-- compared, never joined with the blob ids of matches), timestamptz → text (ISO 8601,
-- UTC), boolean → integer 0/1.

CREATE TABLE nodes (
    node_id     text PRIMARY KEY NOT NULL,
    incarnation text NOT NULL,
    address     text NOT NULL,
    lease_until text NOT NULL,
    draining    integer NOT NULL DEFAULT 0 CHECK (draining IN (0, 1)),
    started_at  text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
