//! PostgreSQL outages on a private throwaway server (`initdb` into a temp dir, `pg_ctl` on a
//! free port; about a second), which the test crashes and restarts: a commit that meets an
//! outage is `Unavailable`, leaves nothing half-written, and succeeds when retried.

use std::time::{Duration, Instant};

use juegoland_store::{PgStore, Store, StoreError};
use juegoland_testkit::ThrowawayPg;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use uuid::Uuid;

use crate::game::{Game, current};

#[track_caller]
fn assert_unavailable<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "expected Unavailable, got {result:?}");
}

#[tokio::test]
async fn outages_are_unavailable_and_leave_nothing_half_committed() {
    let pg = ThrowawayPg::start();
    let options: PgConnectOptions = pg.url().parse().unwrap();
    let pool = PgPoolOptions::new().max_connections(4).acquire_timeout(Duration::from_secs(1));
    let store = PgStore::connect_with(pool, options).await.expect("connect the throwaway server");

    let id = Uuid::from_u128(0x0bad_0474);
    let (mut game, create) = Game::create(id);
    store.commit(&create).await.unwrap();
    let first = game.drop_disc(0);
    store.commit(&first).await.unwrap();
    let stored_before = store.load(id).await.unwrap();
    let undispatched_before = store.undispatched(100, Duration::ZERO).await.unwrap();

    // 1. The server crashes in the MIDDLE of a commit: the fences passed and the revision
    //    insert waits on the same revision, which another transaction is inserting.
    let pending = game.decide_drop(1);
    let receipt = pending.commit.receipt.clone().unwrap();
    let revision = i64::try_from(pending.commit.log.as_ref().unwrap().revision).unwrap();
    let mut blocker = PgConnection::connect(&pg.url()).await.unwrap();
    sqlx::query("BEGIN").execute(&mut blocker).await.unwrap();
    sqlx::query(
        "INSERT INTO revisions (match_id, revision, instant_ms, entry, publications) VALUES ($1, $2, 0, '{}', '[]')",
    )
    .bind(id)
    .bind(revision)
    .execute(&mut blocker)
    .await
    .unwrap();
    let committing = tokio::spawn({
        let (store, commit) = (store.clone(), pending.commit.clone());
        async move { store.commit(&commit).await }
    });
    let waited = Instant::now();
    loop {
        // The only lock the commit can wait for is the blocker's revision row.
        let (waiting,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM pg_locks WHERE NOT granted").fetch_one(&mut blocker).await.unwrap();
        if waiting > 0 {
            break;
        }
        if waited.elapsed() > Duration::from_secs(10) {
            let activity: Vec<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT state, wait_event_type, query FROM pg_stat_activity WHERE backend_type = 'client backend'",
            )
            .fetch_all(&mut blocker)
            .await
            .unwrap();
            panic!(
                "the commit never reached the revision insert: {activity:#?}; commit finished: {}",
                committing.is_finished()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pg.crash();
    assert_unavailable(committing.await.unwrap());
    drop(blocker);

    // 2. A commit while the server is down.
    assert_unavailable(store.commit(&pending.commit).await);
    assert_unavailable(store.load(id).await);

    // 3. After the restart nothing of either attempt is there, and the same commit succeeds.
    pg.restart();
    assert_eq!(store.load(id).await.unwrap(), stored_before, "half a commit survived");
    assert_eq!(store.receipt(&receipt.key).await.unwrap(), None);
    assert_eq!(store.log(id).await.unwrap().len(), 2);
    assert_eq!(store.undispatched(100, Duration::ZERO).await.unwrap(), undispatched_before);
    store.commit(&pending.commit).await.expect("the retried commit");
    let second = game.advance(pending);
    assert_eq!(current(&store, id).await.as_ref(), second.state.as_deref());
    assert_eq!(store.receipt(&receipt.key).await.unwrap(), Some(receipt));
    store.close().await;
}
