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
use juegoland_protocol::{Action, CommandEnvelope};
use juegoland_sdk::SplitMix64;
use juegoland_store::{MemoryStore, SqliteStore, Store};
use juegoland_testkit::TempDir;
use serde_json::json;
use uuid::Uuid;

// The same allocator as the `juegoland` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every stored match's id, unique across the games and lengths.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

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
        let precondition = live.precondition(seat, &action_type);
        let envelope = CommandEnvelope {
            match_id: s.match_id,
            command_id: Uuid::from_u128(1_000 + u128::from(s.revision)),
            precondition,
            action: Action { r#type: action_type, payload },
        };
        Some(engine.command(live, &format!("bot:{seat}"), &envelope, None, now_ms, entropy))
    })
}

/// Stores a match of `game` (id, seats, config) between bots, committed move by move, up to
/// `revisions`: its id, or the revision the bots finished the game at first.
async fn store_match(
    engine: &Engine,
    store: &dyn Store,
    (game, seats, config): &(&str, usize, serde_json::Value),
    seed: u64,
    revisions: u64,
) -> Result<Uuid, u64> {
    let key = GameKey { id: (*game).into(), rules_version: "1.0.0".into() };
    let holders: BTreeMap<_, _> = (0..*seats).map(|i| (format!("p{i}"), SeatHolder::Bot("default".into()))).collect();
    let mut entropy = SplitMix64(seed);
    let id = Uuid::from_u128(u128::from(NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let (pending, mut live) = engine.create(id, &key, holders, config, 1_000, &mut entropy).expect("create");
    store.commit(&live.advance(pending)).await.expect("commit the creation");
    let mut now_ms = 1_000;
    while live.state().revision < revisions {
        if live.state().is_finished() {
            return Err(live.state().revision);
        }
        now_ms += 250;
        match bot_move(engine, &live, now_ms, &mut entropy) {
            Some(Decision::Commit(p)) => store.commit(&live.advance(*p)).await.expect("commit a move"),
            _ => panic!("the bots of {} are stuck at revision {}", game, live.state().revision),
        }
    }
    Ok(id)
}

async fn long_match(
    engine: &Engine,
    store: &dyn Store,
    game: &(&str, usize, serde_json::Value),
    revisions: u64,
) -> Uuid {
    let mut longest = 0;
    for seed in 1..200 {
        match store_match(engine, store, game, seed, revisions).await {
            Ok(id) => return id,
            Err(ended) => longest = longest.max(ended),
        }
    }
    panic!("no {} match of the bots lasted {revisions} revisions (the longest ended at {longest})", game.0);
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
    // Hundido on its largest board with ten one-cell ships, so the bots' battle lasts past
    // 223 revisions (the classic fleet sinks in under 200).
    let singles: Vec<_> = (0..10).map(|i| json!({"ship": format!("s{i}"), "size": 1})).collect();
    let hundido = json!({"rows": 12, "columns": 12, "fleet": singles});
    // Solitario's bots end their games before 150 revisions: 96 and 127 (tail 0 and 31).
    for (game, lengths) in [(("hundido", 2, hundido), [200, 223]), (("solitario", 1, json!({})), [96, 127])] {
        for revisions in lengths {
            for (name, store) in [("sqlite", &sqlite), ("memory", &memory)] {
                let id = rt.block_on(long_match(&engine, &**store, &game, revisions));
                let live = rt.block_on(activate(&engine, &**store, id));
                assert_eq!(live.state().revision, revisions);
                group.bench_function(format!("{}/{revisions}/{name}", game.0), |b| {
                    b.iter(|| rt.block_on(activate(&engine, &**store, id)))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, activation);
criterion_main!(benches);
