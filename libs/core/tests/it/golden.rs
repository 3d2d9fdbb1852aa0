//! Golden fixtures: recorded matches (`tests/fixtures/golden/*.json`: a match's final state
//! and its whole log, dealt and rolled games among them) played back into a NEW match by the
//! replay script's code path (`Engine::create_replay`, `Engine::replay_step`) — the path a
//! "watch this match again" replay takes in play — and replayed from the log
//! (`juegoland_core::replay`). A rules change that decides any recorded revision otherwise
//! fails here. `UPDATE_GOLDEN=1 cargo test -p juegoland-core --test it golden` records them
//! again (only for a deliberate change of rules version).
// Reading the fixtures (and recording them with `UPDATE_GOLDEN=1`) is this test's point.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::sync::Arc;

use juegoland_core::{Engine, LogEntry, MatchState, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Serialize, Deserialize)]
struct Fixture {
    state: MatchState,
    log: Vec<LogEntry>,
}

fn engine() -> Engine {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_hundido::Hundido)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_brisca::Brisca)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_oca::Oca)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_serpientes::Serpientes)).unwrap();
    Engine::new(Arc::new(r))
}

/// The recorded matches: game, seats, config.
fn cases() -> [(&'static str, usize, Value); 4] {
    [
        ("hundido", 2, json!({})),
        ("brisca", 4, json!({"players": 4})),
        ("oca", 3, json!({})),
        ("serpientes", 2, json!({"finish": "bounce"})),
    ]
}

fn path(game: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden").join(format!("{game}.json"))
}

#[test]
fn recorded_matches_play_back_into_new_matches_to_the_same_end() {
    let engine = engine();
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    for (game, seats, config) in cases() {
        let file = path(game);
        if update {
            let (states, log) = crate::recover::played(&engine, game, seats, config, 2_000);
            let state = states.last().unwrap().clone();
            assert!(state.is_finished(), "{game}'s bots finish");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, serde_json::to_string(&Fixture { state, log }).unwrap() + "\n").unwrap();
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; record it with UPDATE_GOLDEN=1 cargo test -p juegoland-core --test it golden",
                file.display()
            )
        });
        let Fixture { state, log } = serde_json::from_str(&text).expect("a fixture");
        juegoland_core::replay(&engine.registry, &state, &log).unwrap_or_else(|e| panic!("{game}: {e}"));

        let (pending, mut live) = engine
            .create_replay(Uuid::from_u128(0x901d), &state, &log[0], 100, 1_800_000_000_000)
            .unwrap_or_else(|e| panic!("{game}: {e}"));
        live.advance(pending);
        for entry in log.iter().filter(|e| e.op.is_decision()) {
            let instant = live.state().created_ms + (entry.instant_ms - log[0].instant_ms);
            let pending = engine.replay_step(&live, entry, instant).unwrap_or_else(|f| panic!("{game}: {}", f.0));
            live.advance(pending);
        }
        let replayed = &live.state().position;
        assert_eq!(replayed.data, state.position.data, "{game}: the same final data");
        assert_eq!(replayed.result, state.position.result, "{game}: the same result");
        assert_eq!(live.state().revision, state.revision, "{game}: one revision per decision");
    }
}
