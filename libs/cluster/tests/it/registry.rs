//! The `nodes` registry: join, renew, draining, release, lapse.

use std::time::Duration;

use juegoland_cluster::{MembershipError, join, live_members};

use crate::db::Db;

const TTL: Duration = Duration::from_secs(30);

async fn live_ids(db: &Db) -> Vec<String> {
    live_members(&db.pool).await.expect("list the live members").into_iter().map(|m| m.node_id).collect()
}

#[tokio::test]
async fn two_joined_nodes_are_both_live() {
    let db = Db::start("two_joined").await;
    let a = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join a");
    let b = join(&db.pool, "node-b", "http://127.0.0.3:7100", TTL).await.expect("join b");
    assert_ne!(a.incarnation(), b.incarnation());
    assert_eq!(a.incarnation().get_version_num(), 4, "incarnations are random uuids");
    let live = live_members(&db.pool).await.expect("list the live members");
    assert_eq!(live, vec![a.member(), b.member()]);
    assert!(a.is_valid() && b.is_valid());
    db.finish().await;
}

#[tokio::test]
async fn a_lease_not_renewed_lapses() {
    let db = Db::start("lapse").await;
    let ttl = Duration::from_millis(300);
    let lease = join(&db.pool, "node-a", "http://127.0.0.2:7100", ttl).await.expect("join");
    assert_eq!(live_ids(&db).await, ["node-a"]);
    assert!(lease.renew(&db.pool).await.expect("renew"), "a fresh lease renews");
    tokio::time::sleep(ttl * 2).await;
    assert!(live_ids(&db).await.is_empty(), "the lapsed node is no longer live");
    assert!(!lease.is_valid(), "the local deadline passed too");
    assert!(!lease.renew(&db.pool).await.expect("renew"), "a lapsed lease cannot be revived: join again");
    let again = join(&db.pool, "node-a", "http://127.0.0.2:7100", ttl).await.expect("join again");
    assert_ne!(again.incarnation(), lease.incarnation());
    assert_eq!(live_ids(&db).await, ["node-a"]);
    db.finish().await;
}

#[tokio::test]
async fn a_new_incarnation_fences_the_old_one() {
    let db = Db::start("fence").await;
    let old = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join");
    let new = join(&db.pool, "node-a", "http://127.0.0.9:7100", TTL).await.expect("join again");
    assert!(!old.renew(&db.pool).await.expect("renew the old lease"), "the old incarnation lost its lease");
    assert!(!old.is_valid(), "a failed renewal invalidates the local deadline");
    assert!(!old.set_draining(&db.pool).await.expect("drain the old lease"));
    assert!(!old.release(&db.pool).await.expect("release the old lease"), "the old incarnation deletes nothing");
    assert!(new.renew(&db.pool).await.expect("renew the new lease"));
    let live = live_members(&db.pool).await.expect("list the live members");
    assert_eq!(live, vec![new.member()], "the new incarnation");
    assert_eq!(live[0].address, "http://127.0.0.9:7100", "and its address");
    db.finish().await;
}

#[tokio::test]
async fn a_draining_node_is_not_live_but_keeps_its_lease() {
    let db = Db::start("draining").await;
    let a = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join a");
    let _b = join(&db.pool, "node-b", "http://127.0.0.3:7100", TTL).await.expect("join b");
    assert!(a.set_draining(&db.pool).await.expect("drain"));
    assert_eq!(live_ids(&db).await, ["node-b"]);
    assert!(a.renew(&db.pool).await.expect("renew"), "a draining node keeps renewing");
    assert_eq!(live_ids(&db).await, ["node-b"], "renewing does not undo draining");
    let back = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("rejoin");
    assert_ne!(back.incarnation(), a.incarnation());
    assert_eq!(live_ids(&db).await, ["node-a", "node-b"], "joining clears draining");
    db.finish().await;
}

#[tokio::test]
async fn release_removes_only_its_own_row() {
    let db = Db::start("release").await;
    let a = join(&db.pool, "node-a", "http://127.0.0.2:7100", TTL).await.expect("join a");
    let b = join(&db.pool, "node-b", "http://127.0.0.3:7100", TTL).await.expect("join b");
    assert!(a.release(&db.pool).await.expect("release a"));
    assert_eq!(live_ids(&db).await, ["node-b"]);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM nodes").fetch_one(&db.pool).await.expect("count");
    assert_eq!(rows, 1, "the row is deleted, not only hidden");
    assert!(b.renew(&db.pool).await.expect("renew b"));
    db.finish().await;
}

#[tokio::test]
async fn errors_are_classified() {
    let db = Db::unmigrated("errors").await;
    let e = live_members(&db.pool).await.expect_err("no nodes table");
    assert!(matches!(e, MembershipError::Corrupt(_)), "{e:?}");
    assert!(e.to_string().starts_with("membership registry error: list the live members: "), "{e}");
    let e = join(&db.pool, "node-a", "http://127.0.0.2:7100", Duration::ZERO).await.expect_err("a zero ttl");
    assert!(matches!(e, MembershipError::Corrupt(_)), "{e:?}");
    let closed = db.second_pool().await;
    closed.close().await;
    let e = live_members(&closed).await.expect_err("a closed pool");
    assert!(matches!(e, MembershipError::Unavailable(_)), "{e:?}");
    db.finish().await;
}
