//! Activating a stored match: what `Host` does before the match actor's first judgement —
//! claim, `Store::load` (the snapshot and the revisions after it), `Store::receipts`, and
//! `Engine::restore` (the revisions after the snapshot decided again with their instants and
//! randomness traces).
//!
//! The matches are Hundido and Solitario games between bots, committed move by move through
//! the real stores, stopped at 200 revisions (the target: ≤ 5 ms) and at 223 (31
//! revisions past the last snapshot, the most an activation redoes). The embedded store
//! (`SqliteStore`, a temporary data directory) and, beside it, the `MemoryStore` (state on
//! every revision, nothing to redo) as the floor. Run:
//! `cargo bench -p juegoland-store --bench activation`.

// A benchmark is the shell: it makes temporary directories and reads the clock.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use juegoland_core::{Decision, Engine, GameKey, LiveMatch, Registry, SeatHolder};
use juegoland_protocol::{Action, CommandEnvelope, Precondition};
use juegoland_sdk::{ConflictPolicy, SplitMix64};
use juegoland_store::{MemoryStore, SqliteStore, Store};
use juegoland_testkit::TempDir;
use serde_json::json;
use uuid::Uuid;

// The same allocator as the `juegoland` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn engine() -> Engine {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_hundido::Hundido)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_solitario::Solitario)).unwrap();
    Engine::new(Arc::new(r))
}

/// The move of the first enabled seat's bot, decided by the engine.
fn bot_move(engine: &Engine, live: &LiveMatch, now_ms: i64, entropy: &mut SplitMix64) -> Option<Decision> {
    let s = live.state();
    let game = live.game();
    s.position.flow.actors.keys().find_map(|seat| {
        let (action_type, payload) = game.game.bot_action(live.loaded(), seat, "default", entropy)?;
        let precondition = match game.descriptor().action(&action_type).map(|a| a.policy) {
            Some(ConflictPolicy::Actor) => Precondition::Actor {
                phase_epoch: s.phase_epoch,
                actor_revision: s.actor_revisions.get(seat).copied().unwrap_or_default(),
            },
            _ => Precondition::Match { revision: s.revision },
        };
        let envelope = CommandEnvelope {
            match_id: s.match_id,
            command_id: Uuid::from_u128(1_000 + u128::from(s.revision)),
            precondition,
            action: Action { r#type: action_type, payload },
        };
        Some(engine.command(live, &format!("bot:{seat}"), &envelope, None, now_ms, entropy))
    })
}

/// Stores a match of `game` between bots, committed move by move, up to `revisions`; its id,
/// or `None` when the bots finished the game first (the caller tries another seed).
async fn store_match(
    engine: &Engine,
    store: &dyn Store,
    game: &str,
    seats: usize,
    seed: u64,
    revisions: u64,
) -> Option<Uuid> {
    let key = GameKey { id: game.into(), rules_version: "1.0.0".into() };
    let holders: BTreeMap<_, _> = (0..seats).map(|i| (format!("p{i}"), SeatHolder::Bot("default".into()))).collect();
    let mut entropy = SplitMix64(seed);
    let id = Uuid::from_u128(u128::from(seed) << 32 | u128::from(revisions));
    let (pending, mut live) = engine.create(id, &key, holders, &json!({}), 1_000, &mut entropy).expect("create");
    store.commit(&live.advance(pending)).await.expect("commit the creation");
    let mut now_ms = 1_000;
    while live.state().revision < revisions {
        if live.state().is_finished() {
            return None;
        }
        now_ms += 250;
        match bot_move(engine, &live, now_ms, &mut entropy) {
            Some(Decision::Commit(p)) => store.commit(&live.advance(*p)).await.expect("commit a move"),
            _ => panic!("the bots of {game} are stuck at revision {}", live.state().revision),
        }
    }
    Some(id)
}

async fn long_match(engine: &Engine, store: &dyn Store, game: &str, seats: usize, revisions: u64) -> Uuid {
    for seed in 1..200 {
        if let Some(id) = store_match(engine, store, game, seats, seed, revisions).await {
            return id;
        }
    }
    panic!("no {game} match of the bots lasted {revisions} revisions");
}

/// What the host does to activate `id`.
async fn activate(engine: &Engine, store: &dyn Store, id: Uuid) -> LiveMatch {
    store.claim(id).await.unwrap().expect("a stored match");
    let stored = store.load(id).await.unwrap().expect("a stored match");
    let receipts = store.receipts(id).await.unwrap();
    assert!(!receipts.is_empty());
    engine.restore(stored).expect("the match restores")
}

fn activation(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let engine = engine();
    let dir = TempDir::new("activation-bench");
    let sqlite: Arc<dyn Store> = Arc::new(rt.block_on(SqliteStore::open(dir.path())).unwrap());
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut group = c.benchmark_group("activation");
    for (game, seats) in [("hundido", 2), ("solitario", 1)] {
        for revisions in [200, 223] {
            for (name, store) in [("sqlite", &sqlite), ("memory", &memory)] {
                let id = rt.block_on(long_match(&engine, &**store, game, seats, revisions));
                let live = rt.block_on(activate(&engine, &**store, id));
                assert_eq!(live.state().revision, revisions);
                group.bench_function(format!("{game}/{revisions}/{name}"), |b| {
                    b.iter(|| rt.block_on(activate(&engine, &**store, id)))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, activation);
criterion_main!(benches);
