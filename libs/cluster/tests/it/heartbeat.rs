//! The heartbeat keeps a lease and reports its loss (self-fencing).

use std::time::{Duration, Instant};

use juegoland_cluster::{Heartbeat, LeaseLost, join, live_members};

use crate::db::Db;

const TTL: Duration = Duration::from_millis(600);

#[tokio::test]
async fn a_heartbeat_keeps_the_lease_alive() {
    let db = Db::start("hb_alive").await;
    let lease = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join");
    let heartbeat = Heartbeat::start(db.pool.clone(), lease);
    tokio::time::sleep(TTL * 3).await;
    assert_eq!(heartbeat.is_lost(), None);
    assert!(heartbeat.lease().is_valid());
    assert_eq!(live_members(&db.pool).await.expect("list").len(), 1, "still live after three ttls");
    let lease = heartbeat.stop().await;
    assert!(lease.release(&db.pool).await.expect("release"));
    assert!(live_members(&db.pool).await.expect("list").is_empty());
    db.finish().await;
}

#[tokio::test]
async fn a_heartbeat_reports_a_lease_taken_by_a_new_incarnation() {
    let db = Db::start("hb_taken").await;
    let lease = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join");
    let heartbeat = Heartbeat::start(db.pool.clone(), lease);
    let mut lost = heartbeat.subscribe();
    let _new = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join again");
    let reason = tokio::time::timeout(TTL, heartbeat.lost()).await.expect("the loss is seen within one ttl");
    assert_eq!(reason, LeaseLost::Taken);
    assert_eq!(*lost.borrow_and_update(), Some(LeaseLost::Taken));
    assert!(!heartbeat.lease().is_valid());
    db.finish().await;
}

#[tokio::test]
async fn a_heartbeat_that_cannot_reach_the_database_fences_before_the_lease_lapses() {
    let db = Db::start("hb_expired").await;
    let own = db.second_pool().await;
    let lease = join(&own, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join");
    let heartbeat = Heartbeat::start(own.clone(), lease);
    tokio::time::sleep(TTL / 2).await;
    // The node loses the database; its lease keeps running on the database clock.
    own.close().await;
    let reason = tokio::time::timeout(TTL * 2, heartbeat.lost()).await.expect("the loss is reported");
    let reported = Instant::now();
    assert_eq!(reason, LeaseLost::Expired);
    assert!(reported >= heartbeat.lease().valid_until(), "reported once the local deadline passed");
    // The local deadline is never later than the database's: the row is not live for long
    // after the node fenced itself (and it may already be gone).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(live_members(&db.pool).await.expect("list").is_empty(), "the lease lapsed on the database too");
    let lease = heartbeat.stop().await;
    assert!(!lease.renew(&db.pool).await.expect("renew"), "a lapsed lease stays lost");
    db.finish().await;
}

#[tokio::test]
async fn a_dropped_heartbeat_stops_renewing() {
    let db = Db::start("hb_dropped").await;
    let lease = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join");
    drop(Heartbeat::start(db.pool.clone(), lease));
    tokio::time::sleep(TTL * 2).await;
    assert!(live_members(&db.pool).await.expect("list").is_empty(), "nobody renewed the lease");
    db.finish().await;
}
