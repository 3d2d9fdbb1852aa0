//! Conformance checks for games, run through the real engine pipeline (the same code that
//! serves matches), for use in every game's tests.
//!
//! Owns: random playouts that collect everything each recipient receives — every seat, and
//! the spectators of a game that defines a spectator projection — (snapshots with
//! views, contexts, offers, visible events and results; receipts; errors) and check it with a
//! game's [`PrivacyOracle`]: forbidden patterns derived from hidden state, and
//! non-interference (a position that differs only in what a recipient may not know must give
//! that recipient identical outputs); the confluence check that `actor` actions of
//! different players commute; and [`check_module`], the bounded run of those checkers (with
//! invariants, replay and output schemas) that `juegoland publish` makes of a game's module.
//! Must not use: IO, clocks, OS randomness (playouts are seeded), or any game by name.

mod confluence;
pub mod engine_match;
mod module;
mod playout;
mod privacy;

pub use confluence::{ConfluenceReport, check_confluence};
pub use engine_match::EngineMatch;
pub use module::check_module;
pub use privacy::{Leak, Pattern, PlayoutConfig, PrivacyOracle, PrivacyReport, SPECTATOR, check_privacy};
