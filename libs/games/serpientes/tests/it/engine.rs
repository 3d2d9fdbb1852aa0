//! A match driven through the real engine pipeline: the shared
//! `juegoland_conformance::EngineMatch` over this game.

use std::sync::Arc;

use juegoland_core::{GameKey, Registry};

pub use juegoland_conformance::engine_match::applied;

pub type Match = juegoland_conformance::EngineMatch<juegoland_serpientes::Serpientes>;

pub fn registry() -> Arc<Registry> {
    Match::registry()
}

pub fn key() -> GameKey {
    Match::key()
}
