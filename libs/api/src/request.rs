//! Every match operation and every answer, as data.

use std::collections::BTreeMap;

use juegoland_core::{CreateOptions, GameChoice, GameKey, LifecycleRequest, PackagePin, SeatHolder};
use juegoland_protocol::{CommandEnvelope, ServerMessage};
use juegoland_sdk::Seat;
use serde_json::Value;
use uuid::Uuid;

use crate::MatchError;
use crate::summary::MatchSummary;

/// One match operation. Every variant names its match, so any carrier can route it.
#[derive(Clone, Debug, PartialEq)]
pub enum MatchRequest {
    /// Create a match at revision 0. The id is chosen by whoever first makes the request
    /// (so the owner is known before the match exists); a retried creation with the same id
    /// is answered with the same match.
    /// `handover`: the match's hand-over policy, `None` for the game's default.
    Create {
        match_id: Uuid,
        game: GameChoice,
        seats: BTreeMap<Seat, SeatHolder>,
        config: Value,
        /// The hand-over policy and the expiry (each `None`: the default).
        options: CreateOptions,
    },
    /// Create the replay match `match_id` of the stored match `source`
    /// (`juegoland_core::ReplayOf`): its script plays `source`'s decisions back at
    /// `speed_percent` of their pace. A retried creation with the same id is answered with the
    /// same match.
    Replay { match_id: Uuid, source: Uuid, speed_percent: u32 },
    /// A seat's human is here (`present`: one of its subscriptions synced, or renews that it
    /// is still open, every [`crate::PRESENCE_RENEW`]) or one of its subscriptions ended.
    /// `subscription` names it (unique per gateway connection); the match keeps each seat's
    /// present subscriptions, forgets one not renewed within [`crate::PRESENCE_LEASE`] (its
    /// gateway died without telling, or cannot reach the match), and follows its hand-over
    /// policy when the last one ends. Never a withdrawal.
    Presence { match_id: Uuid, principal: String, subscription: String, present: bool },
    /// A client's command, from the principal the edge authenticated.
    Command { principal: String, envelope: CommandEnvelope },
    /// The receipt of a command the client is unsure about.
    CommandStatus { match_id: Uuid, principal: String, command_id: Uuid },
    /// The committed snapshot for the principal's seat.
    Sync { match_id: Uuid, principal: String },
    /// The committed snapshot for an authorized spectator (`seat: null`). The edge asks only
    /// for a bearer the platform granted this match to; the match refuses with FORBIDDEN
    /// when its game defines no spectator projection.
    Spectate { match_id: Uuid },
    /// Withdraw a seat, cancel the match, or fire a deadline at its generation.
    Lifecycle { match_id: Uuid, request: LifecycleRequest },
    /// The last committed revision.
    Revision { match_id: Uuid },
    /// What the platform reads of the match without a seat ([`MatchSummary`]).
    Describe { match_id: Uuid },
}

impl MatchRequest {
    /// The match it addresses.
    pub fn match_id(&self) -> Uuid {
        match self {
            Self::Command { envelope, .. } => envelope.match_id,
            Self::Create { match_id, .. }
            | Self::Replay { match_id, .. }
            | Self::Presence { match_id, .. }
            | Self::CommandStatus { match_id, .. }
            | Self::Sync { match_id, .. }
            | Self::Spectate { match_id }
            | Self::Lifecycle { match_id, .. }
            | Self::Revision { match_id }
            | Self::Describe { match_id } => *match_id,
        }
    }

    /// The command it carries or asks about, for spans and logs.
    pub fn command_id(&self) -> Option<Uuid> {
        match self {
            Self::Command { envelope, .. } => Some(envelope.command_id),
            Self::CommandStatus { command_id, .. } => Some(*command_id),
            _ => None,
        }
    }

    /// The operation's name as a metric label and span field.
    pub fn op(&self) -> &'static str {
        match self {
            Self::Create { .. } => "create_match",
            Self::Replay { .. } => "create_replay",
            Self::Presence { .. } => "presence",
            Self::Command { .. } => "submit_command",
            Self::CommandStatus { .. } => "command_status",
            Self::Sync { .. } => "sync",
            Self::Spectate { .. } => "spectate",
            Self::Lifecycle { request: LifecycleRequest::Withdraw { .. }, .. } => "withdraw",
            Self::Lifecycle { request: LifecycleRequest::FireDeadline { .. }, .. } => "fire_deadline",
            Self::Lifecycle { request: LifecycleRequest::Cancel { .. }, .. } => "cancel",
            Self::Lifecycle { request: LifecycleRequest::Control { .. }, .. } => "control",
            Self::Revision { .. } => "revision",
            Self::Describe { .. } => "describe",
        }
    }

    /// Every value of [`MatchRequest::op`] (metric series start at zero for each).
    pub const OPS: [&'static str; 13] = [
        "create_match",
        "create_replay",
        "presence",
        "submit_command",
        "command_status",
        "sync",
        "spectate",
        "withdraw",
        "fire_deadline",
        "cancel",
        "control",
        "revision",
        "describe",
    ];
}

/// A created match and what it pinned at creation: its rules module's digest and, when the
/// engine had a package registry with the game's package published, that package's lock
/// digest (`MatchState::rules_digest`, `MatchState::package`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub match_id: Uuid,
    /// The rules module the match runs.
    pub game: GameKey,
    pub rules_digest: String,
    pub package: Option<PackagePin>,
    /// Where the match is served without a hop: its owner's client edge
    /// ([`MatchSummary::client_url`](crate::MatchSummary::client_url)).
    pub client_url: Option<String>,
}

impl Created {
    /// What `state` pinned.
    pub fn of(state: &juegoland_core::MatchState) -> Self {
        Self {
            match_id: state.match_id,
            game: state.game.clone(),
            rules_digest: state.rules_digest.clone(),
            package: state.package.clone(),
            client_url: None,
        }
    }
}

/// The answer to a [`MatchRequest`].
#[derive(Clone, Debug, PartialEq)]
pub enum MatchReply {
    /// The match exists at revision 0 (for `Create`), with what it pinned.
    Created(Created),
    /// A `game.ack` or a `game.error` (for `Command`, `CommandStatus`, and a refused `Sync`).
    Message(ServerMessage),
    /// The snapshot of a `Sync` or a `Spectate`.
    Snapshot(Box<SyncReply>),
    /// The revision a `Lifecycle` operation produced, or the last committed one (`Revision`).
    Revision(u64),
    /// The match as the platform reads it (`Describe`).
    Summary(Box<MatchSummary>),
}

impl MatchReply {
    /// The failure of a carrier that answered a request with the wrong kind of reply.
    pub(crate) fn unexpected(&self, what: &str) -> MatchError {
        let kind = match self {
            Self::Created(_) => "a creation",
            Self::Message(_) => "a message",
            Self::Snapshot(_) => "a snapshot",
            Self::Revision(_) => "a revision",
            Self::Summary(_) => "a summary",
        };
        MatchError::Internal(format!("{what} was answered with {kind}"))
    }
}

/// The answer to a sync read: the snapshot at the current committed revision and the
/// match's contract tuple.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncReply {
    /// The recipient's seat; `None` for a spectator.
    pub seat: Option<Seat>,
    pub revision: u64,
    pub game: GameKey,
    pub view_schema_version: u32,
    pub event_schema_version: u32,
    pub snapshot: ServerMessage,
}
