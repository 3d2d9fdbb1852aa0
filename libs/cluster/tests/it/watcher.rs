//! The membership watcher publishes the ring of the live members.

use std::sync::Arc;
use std::time::Duration;

use juegoland_cluster::{Membership, Ring, join};
use tokio::sync::watch;

use crate::db::Db;

const TTL: Duration = Duration::from_secs(30);
const REFRESH: Duration = Duration::from_millis(250);

fn ids(ring: &Ring) -> Vec<&str> {
    ring.members().iter().map(|m| m.node_id.as_str()).collect()
}

/// Waits up to two refresh periods for a ring whose members are `want`.
async fn wait_for(rx: &mut watch::Receiver<Arc<Ring>>, want: &[&str]) {
    let seen = tokio::time::timeout(REFRESH * 2, rx.wait_for(|r| ids(r) == want)).await.is_ok();
    assert!(seen, "no ring of {want:?} within two refresh periods; last was {:?}", ids(&rx.borrow()));
}

#[tokio::test]
async fn the_watcher_sees_a_join_and_a_leave() {
    let db = Db::start("watch_join_leave").await;
    let registry = prometheus::Registry::new();
    let membership = Membership::start(db.pool.clone(), REFRESH);
    membership.register(&registry).expect("register the metrics");
    membership.refresh_now().await;
    let mut rx = membership.subscribe();
    assert!(membership.ring().is_empty());

    let a = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join a");
    wait_for(&mut rx, &["node-a"]).await;
    let b = join(&db.pool, "node-b", "http://127.0.0.3:7100", TTL).await.expect("join b");
    wait_for(&mut rx, &["node-a", "node-b"]).await;
    assert_eq!(membership.ring().get("node-b"), Some(&b.member()));
    assert!(a.release(&db.pool).await.expect("release a"));
    wait_for(&mut rx, &["node-b"]).await;
    assert_eq!(ids(&membership.ring()), ["node-b"]);
    assert_eq!(membership.changes(), 3, "join, join, leave");

    let text = prometheus::TextEncoder::new().encode_to_string(&registry.gather()).expect("encode the metrics");
    assert!(text.contains("\njuegoland_ring_members 1\n"), "{text}");
    assert!(text.contains("\njuegoland_ring_changes_total 3\n"), "{text}");
    membership.shutdown().await;
    db.finish().await;
}

#[tokio::test]
async fn refresh_now_reloads_at_once() {
    let db = Db::start("watch_refresh_now").await;
    let membership = Membership::start(db.pool.clone(), Duration::from_secs(3600));
    membership.refresh_now().await;
    assert!(membership.ring().is_empty());
    let a = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join a");
    membership.refresh_now().await;
    assert_eq!(membership.ring().owner(uuid::Uuid::nil()), Some(&a.member()));
    assert!(a.set_draining(&db.pool).await.expect("drain"));
    membership.refresh_now().await;
    assert!(membership.ring().is_empty(), "a draining node leaves the ring");
    assert_eq!(membership.changes(), 2);
    db.finish().await;
}

#[tokio::test]
async fn an_unreachable_registry_keeps_the_last_ring() {
    let db = Db::start("watch_outage").await;
    let own = db.second_pool().await;
    let _a = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join a");
    let membership = Membership::start(own.clone(), REFRESH);
    membership.refresh_now().await;
    let before = membership.ring();
    assert_eq!(ids(&before), ["node-a"]);
    own.close().await;
    membership.refresh_now().await;
    tokio::time::sleep(REFRESH * 2).await;
    assert!(Arc::ptr_eq(&before, &membership.ring()), "the last ring stays published");
    assert_eq!(membership.changes(), 0);
    db.finish().await;
}

#[tokio::test]
async fn the_watcher_stops_on_shutdown_or_when_dropped() {
    let db = Db::start("watch_stop").await;
    let membership = Membership::start(db.pool.clone(), REFRESH);
    let mut rx = membership.subscribe();
    membership.shutdown().await;
    assert!(rx.changed().await.is_err(), "the publisher is gone after shutdown");
    membership.refresh_now().await; // Returns at once: nobody is listening.

    let membership = Membership::start(db.pool.clone(), REFRESH);
    let clone = membership.clone();
    let mut rx = membership.subscribe();
    drop(membership);
    clone.refresh_now().await;
    drop(clone);
    let ended = tokio::time::timeout(Duration::from_secs(2), async { while rx.changed().await.is_ok() {} }).await;
    assert!(ended.is_ok(), "the task ends when the last handle is dropped");
    db.finish().await;
}
