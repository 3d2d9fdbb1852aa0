-- The trace context of the commit that wrote each outbox row (SQLite twin of
-- ../0006_outbox_trace_context.sql, kept in step so both sets have the same versions): a W3C
-- `traceparent`, or NULL when the commit carried none.

ALTER TABLE outbox ADD COLUMN trace_context text NULL;
