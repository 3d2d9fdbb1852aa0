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

    use std::sync::Arc;

    use juegoland_bus::{Bus, BusItem, LocalBus};

    use crate::support::{next, random_match, revision};

    /// Subscriptions of many matches opened at once on several threads each keep their
    /// channel: none ends at once, none misses a publication. (A subscribe's clean-up of
    /// unwatched channels once dropped another's between its creation and its receiver.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_subscriptions_each_keep_their_channel() {
        let bus = Arc::new(LocalBus::default());
        for _ in 0..50 {
            let opening: Vec<_> = (0..200)
                .map(|_| {
                    let bus = Arc::clone(&bus);
                    tokio::spawn(async move {
                        let m = random_match();
                        (m, bus.subscribe(m).await.expect("subscribe"))
                    })
                })
                .collect();
            for task in opening {
                let (m, mut sub) = task.await.expect("subscribe task");
                bus.publish(&revision(m, 1, &[Some("p0")])).await.expect("publish");
                assert!(matches!(next(&mut sub).await, BusItem::Publication(p) if p.match_id == m));
            }
        }
    }
}

mod redis {
    crate::bus_suite!(crate::backends::RedisBackend);
}
