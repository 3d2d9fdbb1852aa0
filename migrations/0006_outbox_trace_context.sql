-- The trace context of the commit that wrote each outbox row (PostgreSQL). Keep in step with
-- sqlite/0006_outbox_trace_context.sql.
--
-- A W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) naming the node's `store.commit`
-- span, written with the commit and carried with the publication to the bus, so that a
-- gateway delivering the revision (right after the commit, or after a sweeper's re-dispatch)
-- continues the trace of the command that produced it. NULL when the commit carried no trace
-- context (no OTLP exporter and no caller's context), and for rows written before this
-- migration. It never holds anything but ids and flags.

ALTER TABLE outbox ADD COLUMN trace_context text NULL;
