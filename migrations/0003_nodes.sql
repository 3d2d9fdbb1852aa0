-- The cluster's membership registry (PostgreSQL): one row per node, kept alive by a lease
-- measured on the DATABASE clock (`now()`), so the nodes' clocks do not matter. Owned by
-- `libs/cluster` (`membership.rs`). Keep in step with sqlite/0003_nodes.sql.

CREATE TABLE nodes (
    node_id     text PRIMARY KEY,
    -- A new random uuid every time the node joins: a restarted node is a new incarnation,
    -- and a lease can only be renewed, drained or released by the incarnation that holds it.
    incarnation uuid NOT NULL,
    -- The node's gRPC URL (`http://127.0.0.2:7100`).
    address     text NOT NULL,
    -- The node is a live member while lease_until > now() and it is not draining.
    lease_until timestamptz NOT NULL,
    draining    boolean NOT NULL DEFAULT false,
    started_at  timestamptz NOT NULL DEFAULT now()
);
