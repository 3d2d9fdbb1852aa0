//! What the platform reads of a match without holding a seat: its status, its seats and who
//! plays them, its revision, its result and what it pinned — never its position, views or
//! anything hidden.

use juegoland_core::{GameKey, MatchState, PackagePin, ReplayOf, SeatHolder};
use juegoland_sdk::{MatchResult, ParticipantStatus, Seat};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A match as the platform API tells it (`GET /v1/matches/{id}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchSummary {
    pub match_id: Uuid,
    pub game: GameKey,
    /// The package version (the pinned publication's, or the module's own).
    pub game_version: String,
    pub rules_digest: String,
    pub package: Option<PackagePin>,
    pub status: MatchStatus,
    /// The last committed revision.
    pub revision: u64,
    pub seats: Vec<SeatSummary>,
    /// The result once the match is over.
    pub result: Option<MatchResult>,
    /// When the match was created (the captured instant, ms since the Unix epoch).
    pub created_ms: i64,
    /// The hand-over policy; `None`: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<juegoland_sdk::Handover>,
    /// On a replay match: the stored match it plays back, and at what speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<ReplayOf>,
    /// The base URL of the client edge of the node that owns the match now (WebSocket at
    /// `/v1/ws`, Socket.IO at `/socket.io/`), when that node serves clients itself: it serves
    /// the match without a hop. Any gateway serves it too; the owner may change (the next
    /// read says where it went, and a client on the old one keeps being served).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MatchStatus {
    Active,
    Finished,
    Cancelled,
}

impl MatchStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Finished => "finished",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One seat: who plays it and whether it still takes part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeatSummary {
    pub seat: Seat,
    pub controller: Controller,
    pub status: ParticipantStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Who made the seat's applied commands: `own` (whoever holds the seat: its human, agent,
    /// bot or replay script) and `standIn` (a bot standing in for its away human or agent).
    /// A ratings consumer counts a result only as far as the humans played it.
    #[serde(default)]
    pub moves: juegoland_core::SeatMoves,
}

/// What answers a seat's "your move?".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum Controller {
    /// A platform principal, over the protocol.
    Human { principal: String },
    /// A built-in bot profile of the game.
    Bot { profile: String },
    /// A built-in bot standing in for the seat's away human, until the human syncs again.
    Handover { principal: String, profile: String },
    /// A replay match's script.
    Replay,
    /// An AI agent of a profile the game declares, played by whoever holds the platform's
    /// agent grant for the seat (principal `agent:<seat>`).
    Agent { profile: String },
}

impl Controller {
    /// Its kind, as snapshots tell it and seat-related metrics label it (`controller`).
    pub fn kind(&self) -> juegoland_protocol::ControllerKind {
        use juegoland_protocol::ControllerKind as K;
        match self {
            Self::Human { .. } => K::Human,
            Self::Bot { .. } => K::Bot,
            Self::Handover { .. } => K::Handover,
            Self::Replay => K::Replay,
            Self::Agent { .. } => K::Agent,
        }
    }
}

impl From<&SeatHolder> for Controller {
    /// Who holds the seat (a human seat's stand-in is the match state's, not the holder's).
    fn from(holder: &SeatHolder) -> Self {
        match holder {
            SeatHolder::Principal(p) => Controller::Human { principal: p.clone() },
            SeatHolder::Bot(profile) => Controller::Bot { profile: profile.clone() },
            SeatHolder::Agent(profile) => Controller::Agent { profile: profile.clone() },
            SeatHolder::Replay => Controller::Replay,
        }
    }
}

impl MatchSummary {
    /// The summary of `state` (the match's current state, as its actor holds it).
    pub fn of(state: &MatchState) -> Self {
        let position = &state.position;
        let status = match &position.result {
            None => MatchStatus::Active,
            Some(MatchResult::Completed { .. }) => MatchStatus::Finished,
            Some(MatchResult::Cancelled { .. }) => MatchStatus::Cancelled,
        };
        let seats = state
            .seats
            .iter()
            .map(|(seat, holder)| {
                let participant = position.participants.get(seat);
                SeatSummary {
                    seat: seat.clone(),
                    controller: match (holder, state.stand_ins.get(seat)) {
                        (SeatHolder::Principal(p), Some(profile)) => {
                            Controller::Handover { principal: p.clone(), profile: profile.clone() }
                        }
                        (holder, _) => Controller::from(holder),
                    },
                    status: participant.map_or(ParticipantStatus::Active, |p| p.status),
                    team: participant.and_then(|p| p.team.clone()),
                    moves: state.moves.get(seat).copied().unwrap_or_default(),
                }
            })
            .collect();
        Self {
            match_id: state.match_id,
            game: state.game.clone(),
            game_version: state.game_version.clone(),
            rules_digest: state.rules_digest.clone(),
            package: state.package.clone(),
            status,
            revision: state.revision,
            seats,
            result: position.result.clone(),
            created_ms: state.created_ms,
            handover: state.handover.clone(),
            replay_of: state.replay_of.clone(),
            client_url: None,
        }
    }
}
