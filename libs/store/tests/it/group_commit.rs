//! PostgreSQL group commit with ownership fencing, with the batch composition forced: the
//! committers are stalled on row locks while the commits under test queue up, so they all
//! share the next transaction.

use std::sync::Arc;
use std::time::Duration;

use juegoland_store::{Store, StoreError};
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use uuid::Uuid;

use crate::backends::PgBackend;
use crate::game::Game;
use crate::suite::Backend;

/// At least the group committer's task count (`pg_batch::COMMITTERS`).
const COMMITTERS: usize = 3;

/// The commits under test: with the blockers, fewer than `pg_batch::OVERLAP_AT` (16), so a
/// committer that holds some of them while another transaction is stalled waits for it
/// rather than starting a transaction without the rest.
const TESTED: usize = 10;

/// How many transactions wrote the newest revisions of `matches`.
async fn transactions(conn: &mut PgConnection, matches: &[Uuid]) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(DISTINCT xmin::text) FROM revisions AS r WHERE r.match_id = ANY($1)
           AND r.revision = (SELECT max(revision) FROM revisions WHERE match_id = r.match_id)",
    )
    .bind(matches)
    .fetch_one(conn)
    .await
    .unwrap();
    n
}

fn match_id(n: u128) -> Uuid {
    Uuid::from_u128(0x6c0_0000_0000 + n)
}

/// One batch carries a commit whose match another node claimed and commits of other
/// matches: only the fenced one is answered `Conflict`, the others commit (in the retry
/// transaction, all together).
#[tokio::test]
async fn a_batch_with_a_commit_fenced_by_ownership_commits_the_others() {
    let backend = PgBackend::start("batch_ownership_fence").await;
    let (a, b) = (Arc::new(backend.owned_pg("node-a")), backend.owned_pg("node-b"));
    let mut games = Vec::new();
    for n in 0..(COMMITTERS + TESTED) {
        let (game, create) = Game::create(match_id(n as u128));
        a.commit(&create).await.expect("create a match");
        games.push(game);
    }
    let (blockers, tested) = games.split_at_mut(COMMITTERS);

    // Stall every committer: each takes one commit of a blocker match, whose row this
    // connection holds locked, and waits.
    let mut holder = PgConnection::connect_with(&backend.options()).await.expect("connect");
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    let blocker_ids: Vec<Uuid> = blockers.iter().map(Game::match_id).collect();
    sqlx::query("SELECT 1 FROM matches WHERE match_id = ANY($1) FOR UPDATE")
        .bind(&blocker_ids)
        .execute(&mut holder)
        .await
        .unwrap();
    let mut stalled = Vec::new();
    for game in blockers.iter_mut() {
        let (a, commit) = (Arc::clone(&a), game.drop_disc(0));
        stalled.push(tokio::spawn(async move { a.commit(&commit).await }));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Node B claims the first tested match; node A's commits then queue up, that one first.
    let fenced = tested[0].match_id();
    assert_eq!(b.claim(fenced).await.unwrap(), Some(2));
    let commits: Vec<_> = tested.iter_mut().map(|g| g.drop_disc(3)).collect();
    let fenced_key = commits[0].receipt.as_ref().unwrap().key.clone();
    let mut tasks = Vec::new();
    for commit in commits {
        let a = Arc::clone(&a);
        tasks.push(tokio::spawn(async move { (commit.match_id, a.commit(&commit).await) }));
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();

    for t in stalled {
        t.await.expect("blocker task").expect("a stalled commit commits once released");
    }
    for t in tasks {
        let (id, result) = t.await.expect("commit task");
        if id == fenced {
            assert!(matches!(result, Err(StoreError::Conflict { match_id, .. }) if match_id == fenced), "{result:?}");
        } else {
            result.unwrap_or_else(|e| panic!("{id} failed with the fenced one: {e}"));
            assert_eq!(a.load(id).await.unwrap().unwrap().revision(), 1);
        }
    }
    assert_eq!(a.load(fenced).await.unwrap().unwrap().revision(), 0, "the fenced commit wrote nothing");
    assert_eq!(a.receipt(&fenced_key).await.unwrap(), None);
    assert_eq!(a.owner(fenced).await.unwrap(), Some((Some("node-b".into()), 2)));

    // The good commits shared one transaction (the retry of the batch the fenced one was in).
    let good: Vec<Uuid> = tested[1..].iter().map(Game::match_id).collect();
    assert_eq!(
        transactions(&mut holder, &good).await,
        1,
        "the commits queued behind the stall were not written as one batch"
    );
    let _ = holder.close().await;
    drop((a, b));
    backend.finish().await;
}

/// While a transaction is in flight, a few commits that trickle in wait for it and then share
/// one transaction, instead of the idle committer writing each alone (on a node short of CPU,
/// fewer and larger transactions cost PostgreSQL less per commit).
#[tokio::test]
async fn small_batches_wait_for_the_transaction_in_flight() {
    let backend = PgBackend::start("batch_waits_for_in_flight").await;
    let a = Arc::new(backend.owned_pg("node-a"));
    let mut games = Vec::new();
    for n in 0..4u128 {
        let (game, create) = Game::create(match_id(0x100 + n));
        a.commit(&create).await.expect("create a match");
        games.push(game);
    }
    let (blocker, trickle) = games.split_at_mut(1);

    // One transaction in flight, stalled on a row lock.
    let mut holder = PgConnection::connect_with(&backend.options()).await.expect("connect");
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT 1 FROM matches WHERE match_id = $1 FOR UPDATE")
        .bind(blocker[0].match_id())
        .execute(&mut holder)
        .await
        .unwrap();
    let stalled = {
        let (a, commit) = (Arc::clone(&a), blocker[0].drop_disc(0));
        tokio::spawn(async move { a.commit(&commit).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;

    // Commits of other matches, each with time to be written alone if nothing held it back.
    let mut tasks = Vec::new();
    for game in trickle.iter_mut() {
        let (a, commit) = (Arc::clone(&a), game.drop_disc(1));
        tasks.push(tokio::spawn(async move { a.commit(&commit).await }));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(tasks.iter().all(|t| !t.is_finished()), "a small batch did not wait for the transaction in flight");
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    stalled.await.expect("blocker task").expect("the stalled commit commits once released");
    for t in tasks {
        t.await.expect("commit task").expect("a waiting commit commits");
    }
    let ids: Vec<Uuid> = trickle.iter().map(Game::match_id).collect();
    assert_eq!(transactions(&mut holder, &ids).await, 1, "the commits that waited were not written as one batch");
    let _ = holder.close().await;
    drop(a);
    backend.finish().await;
}
