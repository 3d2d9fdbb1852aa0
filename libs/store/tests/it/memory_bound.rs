//! The in-memory store of `juegoland dev --in-memory` keeps the active matches and a bounded
//! tail of finished ones: a finished match beyond the newest `n` is forgotten whole (state,
//! receipts, log), never in part, and dispatched publications are not kept at all.

use juegoland_core::ReceiptKey;
use juegoland_store::{MemoryStore, Store};
use uuid::Uuid;

use crate::game::Game;

/// Plays a match to p0's vertical four; returns the last command's receipt key.
async fn play_to_the_end(store: &MemoryStore, id: u128) -> ReceiptKey {
    let (mut game, create) = Game::create(Uuid::from_u128(id));
    store.commit(&create).await.unwrap();
    let mut last = None;
    for column in [0, 1, 0, 1, 0, 1, 0] {
        let commit = game.drop_disc(column);
        last = commit.receipt.as_ref().map(|r| r.key.clone());
        store.commit(&commit).await.unwrap();
    }
    assert!(store.load(game.match_id()).await.unwrap().unwrap().is_finished());
    last.expect("a command has a receipt")
}

#[tokio::test]
async fn only_the_newest_finished_matches_are_kept_and_each_one_whole() {
    let store = MemoryStore::keeping_finished(2);
    let (_, active) = Game::create(Uuid::from_u128(100));
    store.commit(&active).await.unwrap();
    let mut receipts = Vec::new();
    for id in 1..=3 {
        receipts.push(play_to_the_end(&store, id).await);
    }
    // The first finished match is gone, whole.
    let first = Uuid::from_u128(1);
    assert!(store.load(first).await.unwrap().is_none());
    assert!(store.log(first).await.unwrap().is_empty());
    assert!(store.receipt(&receipts[0]).await.unwrap().is_none());
    // The two newest finished ones and the active one are all there, with their receipts.
    for (id, receipt) in [(2, &receipts[1]), (3, &receipts[2])] {
        let id = Uuid::from_u128(id);
        assert_eq!(store.load(id).await.unwrap().unwrap().revision(), 7);
        assert_eq!(store.log(id).await.unwrap().len(), 8);
        assert!(store.receipt(receipt).await.unwrap().is_some());
    }
    let mut ids = store.match_ids().await.unwrap();
    ids.sort();
    assert_eq!(ids, [2, 3, 100].map(Uuid::from_u128));
}

#[tokio::test]
async fn dispatched_publications_are_dropped_and_the_unbounded_store_keeps_everything() {
    let store = MemoryStore::new();
    for id in 1..=3 {
        play_to_the_end(&store, id).await;
    }
    assert_eq!(store.match_ids().await.unwrap().len(), 3, "MemoryStore::new keeps every match");
    let backlog = store.outbox_backlog(std::time::Duration::ZERO).await.unwrap();
    assert!(backlog.rows > 0);
    let marks: Vec<(Uuid, u64)> = (1..=3).map(|id| (Uuid::from_u128(id), 7)).collect();
    store.mark_dispatched(&marks).await.unwrap();
    assert!(store.undispatched(100, std::time::Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(store.outbox_backlog(std::time::Duration::ZERO).await.unwrap().rows, 0);
}
