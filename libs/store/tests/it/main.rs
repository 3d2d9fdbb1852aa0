//! Integration tests of the stores: ONE behaviour suite (`suite.rs`) run against every
//! backend, plus PostgreSQL outages on a private throwaway server (`outage.rs`) and group
//! commit batches of a forced composition (`group_commit.rs`), and the operators'
//! `participants` rows on both durable backends (`participants.rs`).
//!
//! PostgreSQL: the suite uses the server at `postgres://postgres@127.0.0.1:5432/test`
//! (`JUEGOLAND_TEST_DATABASE_URL` overrides) and fails, never skips, when it is down; the
//! outage tests start their own server with the binaries under `/usr/lib/postgresql/*/bin`
//! (`JUEGOLAND_TEST_PG_BIN` overrides). Both come from `juegoland-testkit`.

mod backends;
mod game;
mod group_commit;
mod memory_bound;
mod opening;
mod outage;
mod participants;
mod snapshots;
mod suite;

mod memory {
    crate::store_suite!(crate::backends::MemoryBackend);
}

mod sqlite {
    crate::store_suite!(crate::backends::SqliteBackend);
    crate::durable_store_suite!(crate::backends::SqliteBackend);
}

mod pg {
    crate::store_suite!(crate::backends::PgBackend);
    crate::durable_store_suite!(crate::backends::PgBackend);
}
