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
mod listing;
pub mod platform;
mod request;
mod summary;
pub mod webhooks;

pub use error::{MatchError, Refusal, Wire};
pub use listing::{
    Cursor, FEED_KINDS, FeedCursor, FeedEvent, FeedPage, InvalidField, ListedSeat, ListedStatus, MAX_PAGE,
    MatchDirectory, MatchListing, MatchPage, MatchQuery, feed_query, iso_ms,
};
pub use request::{Created, MatchReply, MatchRequest, SyncReply};
pub use webhooks::{WebhookAdmin, WebhookError};

/// The message key of the FORBIDDEN that answers a spectator when the match's game defines no
/// spectator projection (a grant does not make one).
pub const NO_SPECTATORS_KEY: &str = "error.forbidden.no_spectators";
/// The message key of the FORBIDDEN that answers what a spectator's bearer may not do: send a
/// command, ask for a command's receipt, or sync a match its grant does not name.
pub const SPECTATOR_ONLY_KEY: &str = "error.forbidden.spectator_only";
/// The message key of the FORBIDDEN that answers what an agent's bearer may not do: sync,
/// command or read a receipt of a match its grant does not name (the grant's seat is the
/// principal's own: the match refuses it any other seat).
pub const AGENT_ONLY_KEY: &str = "error.forbidden.agent_scope";

/// How often a gateway renews the presence of each open seat subscription
/// ([`MatchRequest::Presence`]).
pub const PRESENCE_RENEW: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a match counts a seat's subscription present after its last announcement: three
/// renewals, so one or two lost on the way forget nobody.
pub const PRESENCE_LEASE: std::time::Duration = std::time::Duration::from_secs(30);
pub use summary::{Controller, MatchStatus, MatchSummary, SeatSummary};

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{CreateOptions, GameChoice, GameKey, LifecycleRequest, Registry, SeatHolder};
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
        Ok(self.create_pinned(game.into(), seats, config, CreateOptions::default()).await?.match_id)
    }

    /// Creates a match of what `game` chooses (the rules version and the published package
    /// version left open are chosen by the engine: `juegoland_core::packages::choose`) with
    /// its hand-over policy and expiry (`None`: the defaults), answering what it pinned.
    async fn create_pinned(
        &self,
        game: GameChoice,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
        options: CreateOptions,
    ) -> Result<Created, MatchError> {
        let request = MatchRequest::Create { match_id: random_uuid(), game, seats, config: config.clone(), options };
        match self.call(request).await? {
            MatchReply::Created(created) => Ok(created),
            other => Err(other.unexpected("create")),
        }
    }

    /// Creates a replay match of the stored match `source` under a fresh id
    /// ([`MatchRequest::Replay`]); its script starts playing at once.
    async fn create_replay(&self, source: Uuid, speed_percent: u32) -> Result<Created, MatchError> {
        let request = MatchRequest::Replay { match_id: random_uuid(), source, speed_percent };
        match self.call(request).await? {
            MatchReply::Created(created) => Ok(created),
            other => Err(other.unexpected("create a replay")),
        }
    }

    /// Tells the match that a seat's subscription synced (`present`) or ended; nothing is
    /// answered but failures.
    async fn presence(
        &self,
        match_id: Uuid,
        principal: &str,
        subscription: &str,
        present: bool,
    ) -> Result<(), MatchError> {
        let request = MatchRequest::Presence {
            match_id,
            principal: principal.to_owned(),
            subscription: subscription.to_owned(),
            present,
        };
        match self.call(request).await? {
            MatchReply::Revision(_) => Ok(()),
            other => Err(other.unexpected("presence")),
        }
    }

    /// What the platform reads of the match without a seat.
    async fn describe(&self, match_id: Uuid) -> Result<MatchSummary, MatchError> {
        match self.call(MatchRequest::Describe { match_id }).await? {
            MatchReply::Summary(summary) => Ok(*summary),
            other => Err(other.unexpected("describe")),
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

    /// The committed snapshot for an authorized spectator, or the match's refusal (FORBIDDEN
    /// when its game defines no spectator projection). Whoever calls it has checked the
    /// bearer's grant for this match.
    async fn spectate(&self, match_id: Uuid) -> Result<Result<SyncReply, ErrorMessage>, MatchError> {
        match self.call(MatchRequest::Spectate { match_id }).await? {
            MatchReply::Snapshot(reply) => Ok(Ok(*reply)),
            MatchReply::Message(ServerMessage::Error(e)) => Ok(Err(e)),
            other => Err(other.unexpected("spectate")),
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
