//! What the engine persists: the match envelope, receipts, log entries, and the `Commit`
//! value that a store writes in ONE transaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_protocol::{Ack, Precondition, RejectionCode, ServerMessage};
use juegoland_sdk::{JsonPosition, Lifecycle, Seat, Trace};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The exact rules module a match is pinned to at creation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GameKey {
    pub id: String,
    pub rules_version: String,
}

/// The exact published package a match is pinned to at creation: its id and version (the
/// game's id and package version) and the JCS digest of its lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackagePin {
    pub id: String,
    pub version: String,
    pub lock_digest: String,
}

/// Who sits in a seat: a platform principal, a built-in bot profile, an AI agent of a profile
/// the game declares (`Descriptor::agents`, played by whoever holds the platform's agent grant
/// for that seat), or the replay script of a replay match ([`ReplayOf`]), which plays every
/// seat of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum SeatHolder {
    Principal(String),
    Bot(String),
    Replay,
    Agent(String),
}

/// What a replay match plays back: a stored match's decisions, at `speed_percent` of their
/// original pace (100: as they were played), every revision decided with the stored one's
/// randomness trace and its instant shifted by the time between the two creations, so the
/// rules decide each exactly as they did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayOf {
    pub source: Uuid,
    pub speed_percent: u32,
}

impl ReplayOf {
    /// The speeds a replay may be played at: a tenth of the original pace to a hundred times.
    pub const SPEED_PERCENT: std::ops::RangeInclusive<u32> = 10..=10_000;
}

/// What answers a seat's "your move?" now: what [`MatchState::controller`] tells the
/// platform, the metrics and every recipient's snapshot (`controllers`).
pub use juegoland_protocol::ControllerKind;

/// A persisted deadline: the current generation of the intention `id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deadline {
    pub generation: u64,
    pub due_ms: i64,
    pub payload: Value,
}

/// The persisted envelope of a match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchState {
    pub match_id: Uuid,
    pub game: GameKey,
    /// The package version pinned at creation (presentation and manifest).
    pub game_version: String,
    /// The rules module's digest pinned at creation ([`crate::registry::rules_digest`]); empty
    /// for matches stored before digests were pinned, which load without the check.
    #[serde(default)]
    pub rules_digest: String,
    /// The published package pinned at creation, when the engine had a package registry
    /// and the game's package was published in it ([`crate::packages`]); absent for matches
    /// created without one (and for every match stored before packages were pinned), which
    /// load without the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<PackagePin>,
    /// The state migrations the match went through, oldest first
    /// ([`crate::migration`]); empty for a match that never migrated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrations: Vec<crate::migration::MigrationMark>,
    pub position: JsonPosition,
    pub revision: u64,
    pub phase_epoch: u64,
    pub actor_revisions: BTreeMap<Seat, u64>,
    pub seats: BTreeMap<Seat, SeatHolder>,
    pub deadlines: BTreeMap<String, Deadline>,
    /// The next deadline generation to hand out; generations never repeat within a match.
    pub next_generation: u64,
    pub created_ms: i64,
    /// The command sequence of the last `queue` command accepted (applied) in this match;
    /// 0 for a match that never had one (and absent from its JSON). A final rejection's
    /// sequence lives only in its receipt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queue_sequence: u64,
    /// The match's hand-over policy (the game's default or the creation's choice); absent
    /// (off) for matches stored before hand-over existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<juegoland_sdk::Handover>,
    /// The seats a built-in bot plays while their humans are away, or for an agent seat
    /// past its think time (seat → bot profile): each taken and handed back by a revision of
    /// its own ([`LoggedOp::Control`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stand_ins: BTreeMap<Seat, String>,
    /// Set on a replay match: the stored match it plays back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<ReplayOf>,
    /// Each seat's applied commands, by who made them: whoever holds the seat, or a bot
    /// standing in for its away human. Empty for a match without a move (and counted only
    /// from the version that added it for matches stored before).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moves: BTreeMap<Seat, SeatMoves>,
    /// The captured instant of the last applied command; 0 before the first.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub last_move_ms: i64,
    /// When the match ends by itself if nobody plays it ([`Expiry`]); absent for matches
    /// stored before expiry existed, and for replay matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<Expiry>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

/// One seat's applied commands: `own`, made by whoever holds the seat (its human, agent, bot
/// or replay script), and `stand_in`, made by a bot standing in for its away human or agent.
/// A result's consumer (ratings) tells a game the humans played from one bots finished.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeatMoves {
    #[serde(default)]
    pub own: u64,
    #[serde(default)]
    pub stand_in: u64,
}

/// How long a match may wait for play before it ends by itself, cancelled: `unjoined_ms`
/// after its creation while no seat held by a human or an agent has moved (reason
/// [`EXPIRED_UNJOINED`]), and `idle_ms` after its last move once one has (reason
/// [`EXPIRED_ABANDONED`]). 0 turns either off. The engine keeps it as a deadline of its own,
/// [`EXPIRY_DEADLINE`], durable and fired like the rules' deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expiry {
    #[serde(default = "Expiry::default_unjoined_ms")]
    pub unjoined_ms: u64,
    #[serde(default = "Expiry::default_idle_ms")]
    pub idle_ms: u64,
}

impl Default for Expiry {
    fn default() -> Self {
        Self { unjoined_ms: Self::default_unjoined_ms(), idle_ms: Self::default_idle_ms() }
    }
}

impl Expiry {
    /// The bounds of either time, when on (one second to thirty days).
    pub const RANGE_MS: std::ops::RangeInclusive<u64> = 1_000..=2_592_000_000;

    /// Half an hour for the players to make a first move.
    pub fn default_unjoined_ms() -> u64 {
        1_800_000
    }

    /// A day without a move.
    pub fn default_idle_ms() -> u64 {
        86_400_000
    }

    /// A refusal naming the field that is out of range.
    pub fn check(&self) -> Result<(), String> {
        for (field, ms) in [("expiry.unjoinedMs", self.unjoined_ms), ("expiry.idleMs", self.idle_ms)] {
            if ms != 0 && !Self::RANGE_MS.contains(&ms) {
                let (low, high) = (Self::RANGE_MS.start(), Self::RANGE_MS.end());
                return Err(format!("{field}: {ms} is not 0 (off) or between {low} and {high}"));
            }
        }
        Ok(())
    }
}

/// The engine's own deadline: the match's [`Expiry`]. Rules may not name a deadline with
/// the `engine:` prefix.
pub const EXPIRY_DEADLINE: &str = "engine:expiry";

/// The prefix of deadline ids the engine keeps for itself.
pub const ENGINE_DEADLINE_PREFIX: &str = "engine:";

/// The reason code of a match cancelled because no human or agent seat moved in time.
pub const EXPIRED_UNJOINED: &str = "match.expired.unjoined";

/// The reason code of a match cancelled because nobody moved for its idle time, or because
/// a seat's human left it under the `cancel` hand-over policy.
pub const EXPIRED_ABANDONED: &str = "match.expired.abandoned";

/// The principal under which a bot seat's commands are receipted: `bot:<seat>`. Platform
/// principals may not start with it (creation refuses them).
pub const BOT_PREFIX: &str = "bot:";

/// The principal under which a replay match's script commands are receipted:
/// `replay:<seat>`. Platform principals may not start with it.
pub const REPLAY_PREFIX: &str = "replay:";

/// The principal under which an agent seat's commands are receipted: `agent:<seat>` (the
/// principal of the platform's agent grant for that seat). Platform principals may not start
/// with it (creation refuses them).
pub const AGENT_PREFIX: &str = "agent:";

/// The principal of a spectator's grant: `spectator:<match id>` (it holds no seat). The
/// gateway tells a match that spectators follow it under this prefix (a presence, which
/// makes its revisions carry a spectators' publication). Platform principals may not start
/// with it.
pub const SPECTATOR_PREFIX: &str = "spectator:";

/// The prefixes of the principals the engine itself acts under (or grants); no platform
/// principal starts with one.
pub const RESERVED_PREFIXES: [&str; 4] = [BOT_PREFIX, REPLAY_PREFIX, AGENT_PREFIX, SPECTATOR_PREFIX];

impl MatchState {
    /// The seat a principal holds in this match, if any. A bot seat `pN` is held by the
    /// principal `bot:pN` (also while a bot stands in for its away human), an agent seat by
    /// `agent:pN`, a replay match's seat by `replay:pN`.
    pub fn seat_of(&self, principal: &str) -> Option<&str> {
        if let Some(seat) = principal.strip_prefix(BOT_PREFIX) {
            return match self.seats.get_key_value(seat) {
                Some((seat, SeatHolder::Bot(_))) => Some(seat.as_str()),
                Some((seat, _)) if self.stand_ins.contains_key(seat) => Some(seat.as_str()),
                _ => None,
            };
        }
        if let Some(seat) = principal.strip_prefix(REPLAY_PREFIX) {
            return match self.seats.get_key_value(seat) {
                Some((seat, SeatHolder::Replay)) => Some(seat.as_str()),
                _ => None,
            };
        }
        if let Some(seat) = principal.strip_prefix(AGENT_PREFIX) {
            return match self.seats.get_key_value(seat) {
                Some((seat, SeatHolder::Agent(_))) => Some(seat.as_str()),
                _ => None,
            };
        }
        self.seats.iter().find_map(|(seat, holder)| match holder {
            SeatHolder::Principal(p) if p == principal => Some(seat.as_str()),
            _ => None,
        })
    }

    /// The bot profile that answers for `seat` now: its own bot's, or a stand-in's.
    pub fn bot_of(&self, seat: &str) -> Option<&str> {
        match self.seats.get(seat)? {
            SeatHolder::Bot(profile) => Some(profile),
            _ => self.stand_ins.get(seat).map(String::as_str),
        }
    }

    /// What answers `seat`'s "your move?" now.
    pub fn controller(&self, seat: &str) -> Option<ControllerKind> {
        Some(match self.seats.get(seat)? {
            SeatHolder::Principal(_) if self.stand_ins.contains_key(seat) => ControllerKind::Handover,
            SeatHolder::Principal(_) => ControllerKind::Human,
            SeatHolder::Bot(_) => ControllerKind::Bot,
            SeatHolder::Replay => ControllerKind::Replay,
            SeatHolder::Agent(_) if self.stand_ins.contains_key(seat) => ControllerKind::Handover,
            SeatHolder::Agent(_) => ControllerKind::Agent,
        })
    }

    /// Every seat's controller, when some seat is not played by its human (what snapshots
    /// carry as `controllers`); `None` when humans play every seat.
    pub fn controllers(&self) -> Option<BTreeMap<Seat, ControllerKind>> {
        let all: BTreeMap<Seat, ControllerKind> =
            self.seats.keys().filter_map(|seat| Some((seat.clone(), self.controller(seat)?))).collect();
        all.values().any(|k| *k != ControllerKind::Human).then_some(all)
    }

    pub fn is_finished(&self) -> bool {
        self.position.result.is_some()
    }

    /// Whether a durable store must write this state rather than only its revision's log
    /// entry: at creation, every [`SNAPSHOT_EVERY`] revisions and when the match ends. A
    /// store may write it more often (the memory store keeps every state).
    pub fn is_snapshot_point(&self) -> bool {
        self.revision.is_multiple_of(SNAPSHOT_EVERY) || self.is_finished()
    }
}

/// How many revisions apart a durable store writes a match's state (issue 19): between two
/// snapshots only the revisions' log rows are written, and activation recovers at most
/// `SNAPSHOT_EVERY - 1` of them with the pinned rules ([`crate::Engine::restore`]).
pub const SNAPSHOT_EVERY: u64 = 32;

/// A match as a store holds it: the last snapshot of its state and the log entries after it,
/// in revision order. [`crate::Engine::restore`] makes it live; a finished match is always
/// its final snapshot with no tail.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredMatch {
    pub snapshot: MatchState,
    pub tail: Vec<LogEntry>,
}

impl StoredMatch {
    /// A match stored with its current state (no tail).
    pub fn current(state: MatchState) -> Self {
        Self { snapshot: state, tail: Vec::new() }
    }

    /// The match's revision: its last log entry's.
    pub fn revision(&self) -> u64 {
        self.tail.last().map_or(self.snapshot.revision, |e| e.revision)
    }

    pub fn is_finished(&self) -> bool {
        self.snapshot.is_finished()
    }
}

/// The idempotency key of a command.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptKey {
    pub match_id: Uuid,
    pub principal: String,
    pub command_id: Uuid,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "camelCase", deny_unknown_fields)]
pub enum ReceiptOutcome {
    /// Accepted: the revision it produced, and a `queue` command's sequence.
    Applied {
        revision: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence: Option<u64>,
    },
    /// A final business rejection, at the revision it was judged against, and a `queue`
    /// command's sequence.
    Rejected {
        code: RejectionCode,
        revision: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence: Option<u64>,
    },
}

impl ReceiptOutcome {
    /// An applied outcome of a `match` or `actor` command.
    pub fn applied(revision: u64) -> Self {
        Self::Applied { revision, sequence: None }
    }

    /// The command sequence of a `queue` command's receipt.
    pub fn sequence(&self) -> Option<u64> {
        match self {
            Self::Applied { sequence, .. } | Self::Rejected { sequence, .. } => *sequence,
        }
    }

    /// The revision it produced (applied) or was judged against (rejected).
    pub fn revision(&self) -> u64 {
        match self {
            Self::Applied { revision, .. } | Self::Rejected { revision, .. } => *revision,
        }
    }
}

/// A stored receipt: kept for accepted commands and final business rejections, for the
/// match's whole retention.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    pub key: ReceiptKey,
    /// Hex SHA-256 of the JCS of the whole validated command envelope.
    pub fingerprint: String,
    pub outcome: ReceiptOutcome,
}

impl Receipt {
    /// The `game.ack` for this receipt.
    pub fn ack(&self, duplicate: bool) -> ServerMessage {
        let k = &self.key;
        let ack = match &self.outcome {
            ReceiptOutcome::Applied { revision, .. } => Ack::applied(k.match_id, k.command_id, *revision),
            ReceiptOutcome::Rejected { code, .. } => Ack::rejected(k.match_id, k.command_id, *code),
        };
        let ack = ack.with_sequence(self.outcome.sequence());
        ServerMessage::Ack(Ack { duplicate, ..ack })
    }
}

/// What produced a revision, as needed to replay it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum LoggedOp {
    Create {
        config: Value,
    },
    Command {
        principal: String,
        seat: Seat,
        command_id: Uuid,
        precondition: Precondition,
        action_type: String,
        payload: Value,
        /// A `queue` command's sequence (replay reproduces it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence: Option<u64>,
    },
    Lifecycle {
        event: Lifecycle,
        generation: Option<u64>,
    },
    /// The platform cancelled the match (the rules were not consulted).
    Cancel {
        reason_code: String,
    },
    /// A seat changed hands (hand-over, or an agent past its think time): `stand_in` is the
    /// bot profile that plays it from this revision on, `None` when its human or agent has
    /// it back. The rules are not consulted and
    /// the position does not change.
    Control {
        seat: Seat,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stand_in: Option<String>,
    },
}

impl LoggedOp {
    /// Whether the operation is a decision of the match (what a replay plays back): every
    /// operation but its creation, a seat changing hands and the engine's expiry armed again.
    pub fn is_decision(&self) -> bool {
        match self {
            Self::Create { .. } | Self::Control { .. } => false,
            // The engine arming a match's expiry again: housekeeping, not play.
            Self::Lifecycle { event: Lifecycle::DeadlineExpired { id, .. }, .. } => {
                !id.starts_with(ENGINE_DEADLINE_PREFIX)
            }
            Self::Command { .. } | Self::Lifecycle { .. } | Self::Cancel { .. } => true,
        }
    }
}

/// One entry of the per-match log: an accepted change with its captured instant, its
/// private randomness trace and its internal events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogEntry {
    pub revision: u64,
    pub instant_ms: i64,
    pub op: LoggedOp,
    pub trace: Trace,
    pub events: Vec<Value>,
}

/// A per-recipient publication of one revision (the outbox row), encoded once when the
/// revision is decided: a `game.snapshot` with `fromRevision = revision - 1`, the visible
/// events of this revision and an empty `subscriptionId` that the gateway fills in per
/// subscription ([`Publication::for_subscription`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Publication {
    pub match_id: Uuid,
    pub revision: u64,
    /// The seat it is for; `None` for authorized spectators.
    pub recipient: Option<Seat>,
    pub encoded: Arc<str>,
    /// The W3C `traceparent` of the commit that produced it, opaque here: the node's shell
    /// sets it before the commit, the outbox row and the stream entry carry it, and the
    /// gateway continues that trace when it delivers. `None` when the commit carried no
    /// trace context (the engine never sets one). Ids and flags only, never game data.
    pub trace_context: Option<Arc<str>>,
}

/// How an encoded snapshot names its (still empty) subscription.
const EMPTY_SUBSCRIPTION: &str = "\"subscriptionId\":\"\"";

impl Publication {
    /// The encoded snapshot for one subscription. The empty subscription id is the first
    /// occurrence of its key: only `protocolVersion`, `type` and `matchId` precede it.
    pub fn for_subscription(&self, subscription_id: &str) -> String {
        let id = serde_json::to_string(subscription_id).expect("a string always encodes");
        match self.encoded.find(EMPTY_SUBSCRIPTION) {
            Some(at) => {
                let key_end = at + EMPTY_SUBSCRIPTION.len() - 2;
                let mut out = String::with_capacity(self.encoded.len() + id.len());
                out.push_str(&self.encoded[..key_end]);
                out.push_str(&id);
                out.push_str(&self.encoded[key_end + 2..]);
                out
            }
            None => self.encoded.to_string(),
        }
    }

    /// The decoded snapshot (for tests and tools; the hot path never decodes).
    pub fn snapshot(&self) -> Result<ServerMessage, juegoland_protocol::DecodeError> {
        juegoland_protocol::decode_server(self.encoded.as_bytes())
    }
}

/// Everything one operation writes, committed atomically by a store.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    pub match_id: Uuid,
    /// The revision the operation was judged against: the store's compare-and-set fence.
    /// `None` for the creation of a new match.
    pub expected_revision: Option<u64>,
    /// The new match state when the operation changed it (an accepted change or creation).
    pub state: Option<Arc<MatchState>>,
    pub receipt: Option<Receipt>,
    pub log: Option<LogEntry>,
    pub publications: Vec<Publication>,
}

impl Commit {
    /// The revision the match has once this commit is stored.
    pub fn revision_after(&self) -> Option<u64> {
        self.state.as_ref().map(|s| s.revision).or(self.expected_revision)
    }

    /// Whether the participants' statuses may differ from the stored ones: a creation, or a
    /// lifecycle event (a withdrawal) or cancellation. A command's state never changes them:
    /// the rules' transition has no participants, and the SDK carries them over from the
    /// position it was decided on (`erase`'s `finish`), so stores skip them for moves.
    pub fn participants_may_change(&self) -> bool {
        self.expected_revision.is_none() || !matches!(self.log.as_ref().map(|l| &l.op), Some(LoggedOp::Command { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publication_names_each_subscription_and_stays_valid() {
        let m = Uuid::from_u128(5);
        let encoded = format!(
            r#"{{"protocolVersion":1,"type":"game.snapshot","matchId":"{m}","subscriptionId":"","fromRevision":0,"revision":1,"seat":"p0","view":{{"subscriptionId":""}},"context":{{}},"actions":[],"result":null,"events":[]}}"#
        );
        let p = Publication {
            match_id: m,
            revision: 1,
            recipient: Some("p0".into()),
            encoded: encoded.into(),
            trace_context: None,
        };
        let text = p.for_subscription("s-1\"x");
        let ServerMessage::Snapshot(s) = juegoland_protocol::decode_server(text.as_bytes()).unwrap() else {
            panic!("a snapshot")
        };
        assert_eq!(s.subscription_id, "s-1\"x");
        assert_eq!(s.view.to_value(), serde_json::json!({"subscriptionId": ""}), "only the envelope's key is filled");
    }
}
