//! Integration tests of the roles in process: the deadline scheduler over the real stores
//! (`scheduler.rs`, PostgreSQL at 127.0.0.1:5432 through `juegoland-testkit`) with a test
//! game that has a turn clock (`clocked.rs`); the webhook deliverer over the real stores and a
//! real HTTP receiver (`webhooks.rs`). The cross-process tests of the roles live in
//! `services/juegoland/tests/it`.

mod audit;
mod clocked;
mod scheduler;
mod webhooks;
