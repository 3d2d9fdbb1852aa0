//! Integration tests of the bus: ONE behaviour suite (`suite.rs`) run against every backend,
//! plus what only the Redis backend has — its stream format, bounded length, trimming gaps
//! and idempotent re-publication (`streams.rs`) — and a Redis outage on a private server
//! (`outage.rs`).
//!
//! Redis: the suite and `streams.rs` use the REAL server at `redis://127.0.0.1:6379/`
//! (`JUEGOLAND_TEST_REDIS_URL` overrides) with a random match id per test, and fail, never
//! skip, when it is down; the outage test starts its own `redis-server` on a free port.

mod backends;
mod outage;
mod streams;
mod suite;
mod support;

mod local {
    crate::bus_suite!(crate::backends::LocalBackend);
}

mod redis {
    crate::bus_suite!(crate::backends::RedisBackend);
}
