//! Test support: the Redis servers, random match ids, publications and bounded waits.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt};
use juegoland_bus::BusItem;
use juegoland_core::Publication;
pub use juegoland_testkit::PrivateRedis;
use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use uuid::Uuid;

pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/";

/// How long a test waits for an item that should come.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The server the Redis tests share.
pub fn redis_url() -> String {
    std::env::var("JUEGOLAND_TEST_REDIS_URL").unwrap_or_else(|_| DEFAULT_REDIS_URL.to_string())
}

/// A connection to `url` that has answered PING.
pub async fn connect(url: &str) -> Result<MultiplexedConnection, String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let mut conn = client.get_multiplexed_async_connection_with_config(&config).await.map_err(|e| e.to_string())?;
    let _: String = redis::cmd("PING").query_async(&mut conn).await.map_err(|e| e.to_string())?;
    Ok(conn)
}

/// A connection to the shared test server, or a failed test saying how to start it.
pub async fn shared_redis() -> MultiplexedConnection {
    let url = redis_url();
    connect(&url).await.unwrap_or_else(|e| {
        panic!(
            "the Redis tests need a running server at {url} ({e}).\n\
             Start the local one with:\n    \
             redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save \"\" --appendonly no\n\
             check it with `redis-cli -h 127.0.0.1 ping`,\n\
             or point JUEGOLAND_TEST_REDIS_URL at another server"
        )
    })
}

/// A match id no other test (or earlier run) uses.
pub fn random_match() -> Uuid {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS's entropy");
    Uuid::new_v8(bytes)
}

/// The publications of one revision: one per recipient (`None` is a spectator).
pub fn revision(match_id: Uuid, revision: u64, recipients: &[Option<&str>]) -> Vec<Publication> {
    recipients
        .iter()
        .map(|recipient| {
            let seat = recipient.unwrap_or("");
            let encoded = format!(
                r#"{{"protocolVersion":1,"type":"game.snapshot","matchId":"{match_id}","subscriptionId":"","revision":{revision},"seat":"{seat}","note":"ñandú ♟"}}"#
            );
            Publication {
                match_id,
                revision,
                recipient: recipient.map(str::to_owned),
                encoded: encoded.into(),
                trace_context: None,
            }
        })
        .collect()
}

/// The publications of revisions `revisions`, each for `recipients`, in order.
pub fn revisions(
    match_id: Uuid,
    revisions: std::ops::RangeInclusive<u64>,
    recipients: &[Option<&str>],
) -> Vec<Vec<Publication>> {
    revisions.map(|r| revision(match_id, r, recipients)).collect()
}

/// The next item, failing the test when none comes within [`PATIENCE`] or the stream ends.
pub async fn next(sub: &mut BoxStream<'static, BusItem>) -> BusItem {
    match tokio::time::timeout(PATIENCE, sub.next()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("the subscription ended"),
        Err(_) => panic!("no item within {PATIENCE:?}"),
    }
}

/// The next item, which must be a publication.
pub async fn next_publication(sub: &mut BoxStream<'static, BusItem>) -> Arc<Publication> {
    match next(sub).await {
        BusItem::Publication(p) => p,
        BusItem::Gap => panic!("a gap where a publication was expected"),
    }
}

/// The next `n` items, which must all be publications.
pub async fn publications(sub: &mut BoxStream<'static, BusItem>, n: usize) -> Vec<Publication> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(Publication::clone(&*next_publication(sub).await));
    }
    out
}

/// Fails the test if anything arrives within `quiet`.
pub async fn assert_quiet(sub: &mut BoxStream<'static, BusItem>, quiet: Duration) {
    if let Ok(item) = tokio::time::timeout(quiet, sub.next()).await {
        panic!("expected nothing more, got {item:?}");
    }
}

/// A random number below `bound` (`bound` > 0), from the OS's entropy: tests need no seeds.
pub fn random_below(bound: usize) -> usize {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS's entropy");
    (u64::from_le_bytes(bytes) % bound as u64) as usize
}

/// Shuffles `items` in place (Fisher–Yates).
pub fn shuffle<T>(items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, random_below(i + 1));
    }
}
