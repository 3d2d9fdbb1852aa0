//! The node's match actors.
//!
//! Owns: the [`Host`] — one supervised ractor actor per ACTIVE match, activated from the
//! store on first use, passivated when idle, re-activated from the last committed state
//! after a failure — the thin shell around the pure engine (clock, OS entropy), outbox
//! dispatch to the bus and the sweeper that re-dispatches what a crash left behind, and
//! built-in bot seats (decided off the actor, submitted like any seat's command), the other
//! seat controllers (hand-over to a bot while a human is away, a replay match's script:
//! `seats.rs`) and the declared limits of agent seats (`agents.rs`: commands per minute,
//! think time). The
//! [`Host`] answers the match API (`juegoland_api::Matches`, in `matches.rs`).
//! Must not use: any service crate, or know any game by name.

mod actor;
mod agents;
mod bots;
mod host;
mod matches;
pub mod metrics;
mod outbox;
mod queue;
mod receipts;
mod seats;
pub mod shell;
mod timers;

pub use actor::MatchMsg;
pub use host::{Host, HostConfig};
pub use metrics::Metrics;
