//! Integration tests of the membership registry, the lease heartbeat and the ring watcher,
//! on the REAL PostgreSQL at `postgres://postgres@127.0.0.1:5432/test`
//! (`JUEGOLAND_TEST_DATABASE_URL` overrides). Each test gets its own schema with the
//! workspace migrations applied (`juegoland_testkit::TestSchema`), so tests run in parallel;
//! a server that is down FAILS the tests with the command that starts it: they never skip.
//!
//! The ring's own properties (balance, movement, order independence) are unit and property
//! tests in `src/ring.rs`.

mod db;
mod heartbeat;
mod registry;
mod watcher;
