//! What the edge needs from the matches, wherever they live: in this process ([`Host`]) or
//! behind a router (the cluster's client implements the same trait), so the HTTP platform
//! API and the gateway are one piece of code for the all-in-one and the cluster.

use std::collections::BTreeMap;

use juegoland_core::{GameKey, LifecycleRequest, Registry, SeatHolder};
use juegoland_protocol::{CommandEnvelope, ErrorMessage, ServerMessage};
use juegoland_sdk::Seat;
use serde_json::Value;
use std::sync::Arc;
use uuid::Uuid;

use crate::host::{Host, HostError, MatchMsg, SyncReply};
use crate::shell::random_uuid;

/// The match operations of the platform API and the gateway.
#[async_trait::async_trait]
pub trait Matches: Send + Sync + 'static {
    /// The games this deployment runs (every process has the same catalog compiled in).
    fn registry(&self) -> &Arc<Registry>;

    /// Creates a match (revision 0); bot seats start playing.
    async fn create_match(
        &self,
        game: &GameKey,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
    ) -> Result<Uuid, HostError>;

    /// Submits a command from `principal`; the answer is a `game.ack` or a `game.error`.
    async fn command(&self, principal: &str, envelope: CommandEnvelope) -> Result<ServerMessage, HostError>;

    /// Reads the current committed snapshot for `principal`'s seat (sync barrier step 2).
    async fn sync(&self, match_id: Uuid, principal: &str) -> Result<Result<SyncReply, ErrorMessage>, HostError>;

    /// The receipt of a command, as a `game.ack`, or a `game.error`.
    async fn command_status(
        &self,
        match_id: Uuid,
        principal: &str,
        command_id: Uuid,
    ) -> Result<ServerMessage, HostError>;

    /// A lifecycle operation: withdraw a seat, cancel the match (platform operations) or fire
    /// a deadline at its generation (the scheduler's); returns the new revision. A refusal is
    /// `HostError::Lifecycle` (e.g. `StaleDeadline` for a generation no longer current).
    async fn lifecycle(&self, match_id: Uuid, request: LifecycleRequest) -> Result<u64, HostError>;

    /// The last committed revision of a match (for cursors).
    async fn revision(&self, match_id: Uuid) -> Result<u64, HostError>;
}

#[async_trait::async_trait]
impl Matches for Host {
    fn registry(&self) -> &Arc<Registry> {
        &self.engine().registry
    }

    async fn create_match(
        &self,
        game: &GameKey,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
    ) -> Result<Uuid, HostError> {
        self.create_match_with_id(random_uuid(), game, seats, config).await
    }

    async fn command(&self, principal: &str, envelope: CommandEnvelope) -> Result<ServerMessage, HostError> {
        let match_id = envelope.match_id;
        let principal = principal.to_owned();
        let span = tracing::Span::current();
        self.call(match_id, move |reply| MatchMsg::Command {
            principal: principal.clone(),
            envelope: envelope.clone(),
            reply,
            span: span.clone(),
        })
        .await
    }

    async fn sync(&self, match_id: Uuid, principal: &str) -> Result<Result<SyncReply, ErrorMessage>, HostError> {
        let principal = principal.to_owned();
        self.call(match_id, move |reply| MatchMsg::Sync { principal: principal.clone(), reply }).await
    }

    async fn command_status(
        &self,
        match_id: Uuid,
        principal: &str,
        command_id: Uuid,
    ) -> Result<ServerMessage, HostError> {
        let principal = principal.to_owned();
        self.call(match_id, move |reply| MatchMsg::CommandStatus { principal: principal.clone(), command_id, reply })
            .await
    }

    async fn lifecycle(&self, match_id: Uuid, request: LifecycleRequest) -> Result<u64, HostError> {
        let span = tracing::Span::current();
        self.call(match_id, move |reply| MatchMsg::Lifecycle { request: request.clone(), reply, span: span.clone() })
            .await?
    }

    async fn revision(&self, match_id: Uuid) -> Result<u64, HostError> {
        self.call(match_id, |reply| MatchMsg::Revision { reply }).await
    }
}
