//! The cluster: which node owns which match, and which nodes are alive.
//!
//! Owns: the placement [`Ring`] (rendezvous hashing of match ids onto the live members,
//! `ring.rs`), and the membership registry on PostgreSQL (`membership.rs`): the `nodes`
//! table's use (the migration itself is `migrations/0003_nodes.sql`), node [`Lease`]s
//! measured by the database clock, the [`Heartbeat`] that keeps a lease and reports its loss
//! (self-fencing), and the [`Membership`] watcher that publishes the ring of the live
//! members. Must not use: any service crate, or the engine's internals (core, actors, store,
//! edge): it places match ids and knows nothing of what a match is; the node that hosts the
//! matches composes it with the actors, and the store's revision fence stays the last word
//! on who may commit.
//!
//! # Guarantees and limits
//!
//! - Every router and node that read the same member set compute the same owner for every
//!   match (the score is a fixed, portable hash; the member list is sorted and deduplicated).
//! - A membership change moves the minimum: a joining node only takes matches, a leaving
//!   node's matches are the only ones that move.
//! - Readers of the registry may lag by one refresh period, so two nodes can briefly both
//!   believe they own a match; the store's compare-and-set keeps that safe, and a lease that
//!   lapsed tells its node to stop committing.

mod membership;
mod ring;

pub use membership::{Heartbeat, Lease, LeaseLost, Membership, MembershipError, join, live_members};
pub use ring::{Member, Ring};
