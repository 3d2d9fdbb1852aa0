//! The match API: what the edge, the scheduler and every transport ask of the matches,
//! wherever they live.
//!
//! Owns: [`MatchRequest`] and [`MatchReply`] (every match operation as one enum, every
//! answer as another), [`MatchError`] (one failure type with one [`MatchError::code`],
//! told on each wire by [`MatchError::wire`]: the protocol's error code, the HTTP status
//! and the gRPC status), and the [`Matches`] trait with its single method
//! [`Matches::call`]. The node's actors (`juegoland-actors::Host`), a router forwarding to
//! owners and a gateway calling the routers (`juegoland-roles`) each implement that one
//! method; the typed helpers ([`Matches::command`], [`Matches::sync`]…) are written once,
//! here. Adding an operation means a variant here, its handler in the host and its wire
//! form in `juegoland-rpc`; nothing that only carries requests changes.
//!
//! Must not use: the actor runtime, the store, the bus or any transport (tokio, tonic,
//! axum): a gateway links this crate, not the actors.

mod error;
mod request;

pub use error::{MatchError, Refusal, Wire};
pub use request::{Created, MatchReply, MatchRequest, SyncReply};

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{GameKey, LifecycleRequest, Registry, SeatHolder};
use juegoland_protocol::{CommandEnvelope, ErrorMessage, ServerMessage};
use juegoland_sdk::Seat;
use serde_json::Value;
use uuid::Uuid;

/// The matches, in this process or behind a router: one method carries every operation.
#[async_trait::async_trait]
pub trait Matches: Send + Sync + 'static {
    /// The games this deployment runs (every process has the same catalog compiled in).
    fn registry(&self) -> &Arc<Registry>;

    /// Runs one match operation.
    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError>;

    /// Creates a match (revision 0) under a fresh id; bot seats start playing.
    async fn create_match(
        &self,
        game: &GameKey,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
    ) -> Result<Uuid, MatchError> {
        Ok(self.create_pinned(game, seats, config).await?.match_id)
    }

    /// Creates a match as [`Matches::create_match`] does, answering what it pinned.
    async fn create_pinned(
        &self,
        game: &GameKey,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
    ) -> Result<Created, MatchError> {
        let request =
            MatchRequest::Create { match_id: random_uuid(), game: game.clone(), seats, config: config.clone() };
        match self.call(request).await? {
            MatchReply::Created(created) => Ok(created),
            other => Err(other.unexpected("create")),
        }
    }

    /// Submits a command from `principal`; the answer is a `game.ack` or a `game.error`.
    async fn command(&self, principal: &str, envelope: CommandEnvelope) -> Result<ServerMessage, MatchError> {
        match self.call(MatchRequest::Command { principal: principal.to_owned(), envelope }).await? {
            MatchReply::Message(message) => Ok(message),
            other => Err(other.unexpected("command")),
        }
    }

    /// The receipt of a command, as a `game.ack`, or a `game.error`.
    async fn command_status(
        &self,
        match_id: Uuid,
        principal: &str,
        command_id: Uuid,
    ) -> Result<ServerMessage, MatchError> {
        let request = MatchRequest::CommandStatus { match_id, principal: principal.to_owned(), command_id };
        match self.call(request).await? {
            MatchReply::Message(message) => Ok(message),
            other => Err(other.unexpected("command status")),
        }
    }

    /// The current committed snapshot for `principal`'s seat (sync barrier step 2), or the
    /// `game.error` refusing it (FORBIDDEN for a principal with no seat…).
    async fn sync(&self, match_id: Uuid, principal: &str) -> Result<Result<SyncReply, ErrorMessage>, MatchError> {
        match self.call(MatchRequest::Sync { match_id, principal: principal.to_owned() }).await? {
            MatchReply::Snapshot(reply) => Ok(Ok(*reply)),
            MatchReply::Message(ServerMessage::Error(e)) => Ok(Err(e)),
            other => Err(other.unexpected("sync")),
        }
    }

    /// A lifecycle operation: withdraw a seat, cancel the match (platform operations) or fire
    /// a deadline at its generation (the scheduler's); returns the new revision. A refusal is
    /// [`MatchError::Refused`] (e.g. [`Refusal::StaleDeadline`] for a generation no longer
    /// current).
    async fn lifecycle(&self, match_id: Uuid, request: LifecycleRequest) -> Result<u64, MatchError> {
        match self.call(MatchRequest::Lifecycle { match_id, request }).await? {
            MatchReply::Revision(revision) => Ok(revision),
            other => Err(other.unexpected("lifecycle")),
        }
    }

    /// The last committed revision of a match (for cursors).
    async fn revision(&self, match_id: Uuid) -> Result<u64, MatchError> {
        match self.call(MatchRequest::Revision { match_id }).await? {
            MatchReply::Revision(revision) => Ok(revision),
            other => Err(other.unexpected("revision")),
        }
    }
}

/// A random (v4) UUID from the operating system's entropy.
pub fn random_uuid() -> Uuid {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's entropy source failed");
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}
