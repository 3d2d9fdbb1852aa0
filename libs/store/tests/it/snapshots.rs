//! The embedded store writes a match's state only at its snapshot points (issue 19): between
//! them a move is its `revisions` row alone, and loading gives the last snapshot with the
//! revisions after it, across a reopen too.

use juegoland_core::SNAPSHOT_EVERY;
use juegoland_store::{SqliteStore, Store};
use uuid::Uuid;

use crate::game::{Game, current};

#[tokio::test]
async fn the_state_is_written_at_snapshot_points_only() {
    let dir = juegoland_testkit::TempDir::new("sqlite-snapshots");
    let store = SqliteStore::open(dir.path()).await.unwrap();
    let id = Uuid::from_u128(0x5a9);
    let (mut game, create) = Game::create(id);
    store.commit(&create).await.unwrap();
    let mut tails = Vec::new();
    while game.revision() < SNAPSHOT_EVERY + 3 {
        store.commit(&game.drop_without_ending()).await.unwrap();
        let stored = store.load(id).await.unwrap().unwrap();
        tails.push((stored.snapshot.revision, stored.tail.len() as u64));
    }
    let want: Vec<(u64, u64)> = (1..=SNAPSHOT_EVERY + 3)
        .map(|r| if r < SNAPSHOT_EVERY { (0, r) } else { (SNAPSHOT_EVERY, r - SNAPSHOT_EVERY) })
        .collect();
    assert_eq!(tails, want, "(snapshot revision, revisions after it) after each move");

    store.close().await;
    let store = SqliteStore::open(dir.path()).await.unwrap();
    assert_eq!(current(&store, id).await.as_ref(), Some(game.live().state()), "a reopened store restores the match");
    // A stale writer still loses the fence, which is now the match's last revision.
    let mut stale = game.decide_drop(3);
    stale.commit.expected_revision = Some(SNAPSHOT_EVERY);
    assert!(store.commit(&stale.commit).await.is_err(), "a commit against an old revision conflicts");
    store.close().await;
}
