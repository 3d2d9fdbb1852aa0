-- Claims of due deadlines by scheduler replicas (PostgreSQL). Keep in step with
-- sqlite/0004_deadline_claims.sql.
--
-- A scheduler replica claims a batch of due pending deadlines for a lease: it sets
-- claimed_by to its claimant id and claim_until to the DATABASE clock plus the lease, so the
-- replicas' clocks do not matter. Another replica skips a claimed row until claim_until has
-- passed (a replica that died leaves claims that expire and are claimed again). A claim is
-- only a way to share the work: firing is safe without it, because the match checks the
-- generation under its lock and commits the row as `fired` with the transition.

ALTER TABLE deadlines
    ADD COLUMN claimed_by  text NULL,
    ADD COLUMN claim_until timestamptz NULL;
