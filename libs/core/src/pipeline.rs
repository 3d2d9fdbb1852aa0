//! The command pipeline (steps 3–6 of the engine spec) as pure code: a live match plus an
//! operation in, a [`Decision`] out. The caller (the match actor) does steps 1–2 (limits,
//! authentication, the lock) and 7 (store the commit, then send and dispatch).

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use juegoland_protocol::{CommandEnvelope, Precondition, RejectionCode};
use juegoland_sdk::{
    ConflictPolicy, DeadlineOp, EntropySource, ErasedTransition, Flow, Handover, Lifecycle, LoadedPosition,
    MatchResult, Participant, Participation, Randomness, RawJson, Recipient, RuleError, Seat, Services, Trace,
    TraceEntry, seat_ids,
};
use serde_json::Value;
use uuid::Uuid;

use crate::packages::{ChoiceError, GameChoice, PinError, PublishedPackages};
use crate::project::{build_snapshot, publications};
use crate::registry::{LoadedGame, Registry};
use crate::state::{
    Commit, Deadline, ENGINE_DEADLINE_PREFIX, EXPIRED_ABANDONED, EXPIRED_UNJOINED, EXPIRY_DEADLINE, Expiry, LogEntry,
    LoggedOp, MatchState, Receipt, ReceiptKey, ReceiptOutcome, ReplayOf, SeatHolder, StoredMatch,
};

/// The longest principal a seat may be given, in characters (a token's `sub` has the same
/// bound).
pub const MAX_PRINCIPAL_CHARS: usize = 128;

/// The one rule of a principal's shape, wherever one enters (a seat at creation, a token's
/// `sub`, a dev token, a cluster call): 1 to [`MAX_PRINCIPAL_CHARS`] characters, none of them
/// a control character (`"alice\u0000"` is not alice). What is wrong, for a message.
pub fn principal_shape(principal: &str) -> Result<(), String> {
    let chars = principal.chars().count();
    if chars == 0 || chars > MAX_PRINCIPAL_CHARS {
        return Err(format!("a principal is 1 to {MAX_PRINCIPAL_CHARS} characters, not {chars}"));
    }
    if principal.chars().any(char::is_control) {
        return Err("a principal has no control characters".to_owned());
    }
    Ok(())
}

/// Whether `principal` is one the engine itself acts under (a bot, a replay, an agent, a
/// spectator: [`crate::state::RESERVED_PREFIXES`]), which no person may be.
pub fn is_reserved_principal(principal: &str) -> bool {
    crate::state::RESERVED_PREFIXES.iter().any(|p| principal.starts_with(p))
}

/// A person's principal: the shape's rule and no reserved prefix. What is wrong, for a
/// message.
pub fn check_principal(principal: &str) -> Result<(), String> {
    principal_shape(principal)?;
    if is_reserved_principal(principal) {
        let reserved = crate::state::RESERVED_PREFIXES.join("\", \"");
        return Err(format!("a principal may not start with \"{reserved}\""));
    }
    Ok(())
}

/// Limits the engine enforces on rules' outputs.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Serialized private data per match.
    pub max_data_bytes: usize,
    /// Serialized snapshot per recipient.
    pub max_projection_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_data_bytes: 1 << 20, max_projection_bytes: 1 << 20 }
    }
}

/// An internal failure: rules panicked or produced something invalid, or stored data is
/// corrupt. Nothing is committed; the message is for logs, never for clients.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Fault(pub String);

/// A decided operation that changes or records something, before it is durable. Store
/// `commit`; once the store has it, call [`LiveMatch::advance`].
pub struct Pending {
    pub commit: Commit,
    next: Option<LoadedPosition>,
}

/// What to do with a command.
pub enum Decision {
    /// An exact retry: answer with the stored receipt and `duplicate: true`.
    Duplicate(Receipt),
    /// The same command id with another fingerprint: `COMMAND_ID_REUSED`; nothing stored.
    IdReused,
    /// The principal holds no seat in this match: `FORBIDDEN`; nothing revealed or stored.
    Forbidden,
    /// An internal failure; nothing stored.
    Fault(Fault),
    /// A receipt (accepted or a final rejection) and possibly a new state to store.
    Commit(Box<Pending>),
}

/// A lifecycle operation the platform or the scheduler asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum LifecycleRequest {
    Withdraw {
        seat: Seat,
    },
    FireDeadline {
        id: String,
        generation: u64,
    },
    /// Cancels the match: `{kind: "cancelled", reasonCode}`, no winners, every pending
    /// deadline cancelled. The rules are not consulted.
    Cancel {
        reason_code: String,
    },
    /// Hands a human's seat to the bot profile `stand_in` while the human is away, or back
    /// to its human (`None`): a revision of its own that changes no position and no counter
    /// (the host asks for it under the match's hand-over policy).
    Control {
        seat: Seat,
        stand_in: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    #[error("the match is finished")]
    Finished,
    #[error("no such seat")]
    UnknownSeat,
    #[error("the seat already withdrew")]
    AlreadyWithdrawn,
    #[error("the deadline generation is not current")]
    StaleDeadline,
    /// Fired before its due instant on the match's clock: a caller's mistake or a skewed
    /// clock, never a reason to drop it (a scheduler tries again later).
    #[error("the deadline is due at {due_ms} ms, and it is {now_ms} ms")]
    NotDue { due_ms: i64, now_ms: i64 },
    #[error("rules refused: {0}")]
    Illegal(String),
    #[error("invalid reason code: {0}")]
    InvalidReason(String),
    #[error("internal failure: {0}")]
    Fault(Fault),
}

impl LifecycleError {
    /// The refusal's code on the platform API and the wire (`None` for a fault).
    pub fn code(&self) -> Option<&'static str> {
        Some(match self {
            Self::Finished => "MATCH_FINISHED",
            Self::UnknownSeat => "UNKNOWN_SEAT",
            Self::AlreadyWithdrawn => "ALREADY_WITHDRAWN",
            Self::StaleDeadline => "STALE_DEADLINE",
            Self::NotDue { .. } => "DEADLINE_NOT_DUE",
            Self::Illegal(_) => "ILLEGAL",
            Self::InvalidReason(_) => "INVALID_REASON",
            Self::Fault(_) => return None,
        })
    }

    /// The refusal back from its code and message (what [`code`](Self::code) gave).
    pub fn from_code(code: &str, message: String) -> Option<Self> {
        Some(match code {
            "MATCH_FINISHED" => Self::Finished,
            "UNKNOWN_SEAT" => Self::UnknownSeat,
            "ALREADY_WITHDRAWN" => Self::AlreadyWithdrawn,
            "STALE_DEADLINE" => Self::StaleDeadline,
            "ILLEGAL" => Self::Illegal(message),
            "INVALID_REASON" => Self::InvalidReason(message),
            _ => return None,
        })
    }
}

/// The refusal of a config field its schema does not declare (`additionalProperties: false`
/// at the top): jsonschema tells it as the field's value failing a `false` schema, without
/// the field's name.
fn unknown_config_field(schema: &Value, config: &Value) -> Option<String> {
    let (Some(config), Some(false)) = (config.as_object(), schema["additionalProperties"].as_bool()) else {
        return None;
    };
    let declared = schema["properties"].as_object();
    let unknown = config.keys().find(|k| !declared.is_some_and(|d| d.contains_key(k.as_str())))?;
    let allowed: Vec<&str> = declared.map(|d| d.keys().map(String::as_str).collect()).unwrap_or_default();
    let allowed = if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") };
    let shown: String = unknown.chars().take(64).collect();
    Some(format!("config.{shown}: no such field (allowed: {allowed})"))
}

/// A reason code: a short machine key (`[a-z0-9][a-z0-9._-]*`, at most 64 bytes).
pub fn valid_reason_code(code: &str) -> bool {
    let mut bytes = code.bytes();
    code.len() <= 64
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CreateError {
    /// The game, rules version or package version asked for is not here.
    #[error("{0}")]
    Choice(ChoiceError),
    #[error("invalid seats: {0}")]
    InvalidSeats(String),
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    #[error("invalid hand-over policy: {0}")]
    InvalidHandover(String),
    #[error("invalid expiry: {0}")]
    InvalidExpiry(String),
    #[error("invalid replay: {0}")]
    InvalidReplay(String),
    #[error("internal failure: {0}")]
    Fault(Fault),
}

/// What a creation chooses beyond game, seats and config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateOptions {
    /// The match's hand-over policy; `None`: the game's default ([`juegoland_sdk::Game::handover`]).
    pub handover: Option<Handover>,
    /// When the match ends if nobody plays it; `None`: never (the match API gives every
    /// creation of the platform [`Expiry::default`] unless it says otherwise).
    pub expiry: Option<Expiry>,
}

/// A match loaded in memory: its persisted state and the decoded position.
pub struct LiveMatch {
    pub(crate) state: Arc<MatchState>,
    pub(crate) game: Arc<LoadedGame>,
    pub(crate) loaded: LoadedPosition,
    /// The highest command sequence a receipt of this match is known to carry (see
    /// [`LiveMatch::last_sequence`]).
    pub(crate) last_sequence: u64,
    /// Whether the next revisions get a spectators' publication (when the game defines their
    /// projection): true unless the shell said that no spectator follows the match
    /// ([`LiveMatch::set_watched`]).
    pub(crate) watched: bool,
}

impl LiveMatch {
    pub fn state(&self) -> &MatchState {
        &self.state
    }

    /// The precondition for `seat` to send `action_type` now: the seat's counters for an
    /// action of the `actor` policy, the match revision otherwise (what a bot or an honest
    /// client without an offer sends).
    pub fn precondition(&self, seat: &str, action_type: &str) -> Precondition {
        let s = &self.state;
        match self.game.descriptor().action(action_type).map(|a| a.policy) {
            Some(ConflictPolicy::Actor) => Precondition::Actor {
                phase_epoch: s.phase_epoch,
                actor_revision: s.actor_revisions.get(seat).copied().unwrap_or_default(),
            },
            Some(ConflictPolicy::Queue) => Precondition::Queue,
            _ => Precondition::Match { revision: s.revision },
        }
    }

    /// The last command sequence given to a `queue` command of this match (0: none yet):
    /// the highest of the committed state's and of every receipt this live match committed
    /// or was told of ([`LiveMatch::note_sequence`]).
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence.max(self.state.queue_sequence)
    }

    /// Raises the last command sequence to `sequence` (the highest a stored receipt of this
    /// match carries): a final rejection writes no state, so only its receipt remembers the
    /// sequence it took, and the next `queue` command must get a higher one.
    pub fn note_sequence(&mut self, sequence: u64) {
        self.last_sequence = self.last_sequence.max(sequence);
    }

    pub fn game(&self) -> &Arc<LoadedGame> {
        &self.game
    }

    pub fn loaded(&self) -> &LoadedPosition {
        &self.loaded
    }

    /// Makes a durable pending operation current and returns its commit (for sending the
    /// receipt and dispatching the publications). Call only after the store accepted it.
    pub fn advance(&mut self, pending: Pending) -> Commit {
        if let Some(sequence) = pending.commit.receipt.as_ref().and_then(|r| r.outcome.sequence()) {
            self.note_sequence(sequence);
        }
        if let (Some(state), Some(next)) = (&pending.commit.state, pending.next) {
            self.state = Arc::clone(state);
            self.loaded = next;
        }
        pending.commit
    }

    /// Whether spectators may follow this match: its game defines a spectator projection
    /// ([`juegoland_sdk::Game::spectators`]).
    pub fn spectators(&self) -> bool {
        self.game.game.spectators()
    }

    /// Tells the match whether any spectator follows it: while none does, its revisions are
    /// published to its seats alone (a spectators' snapshot nobody receives is neither built,
    /// nor stored, nor streamed). A spectator who comes later syncs the current revision
    /// first, so it misses nothing; the shell says `true` again before that sync's answer.
    /// A live match starts watched.
    pub fn set_watched(&mut self, watched: bool) {
        self.watched = watched;
    }

    /// The sync snapshot for `recipient` at the current revision (no events). A spectator's
    /// is a fault when the game defines no spectator projection, or offers spectators an
    /// action; callers refuse such a spectator first ([`LiveMatch::spectators`]).
    pub fn snapshot(
        &self,
        recipient: Recipient<'_>,
        engine: &Engine,
    ) -> Result<juegoland_protocol::ServerMessage, Fault> {
        let spectator = recipient == Recipient::Spectator;
        if spectator && !self.spectators() {
            return Err(Fault(format!("{} defines no spectator projection", self.game.descriptor().id)));
        }
        let snapshot = build_snapshot(&self.game, &self.state, &self.loaded, None, recipient, None)?;
        if spectator && crate::project::has_offers(&snapshot) {
            return Err(Fault(format!("{} offered actions to spectators", self.game.descriptor().id)));
        }
        crate::project::check_size(&self.game, crate::project::json_size(&snapshot), &engine.limits)?;
        Ok(snapshot)
    }
}

/// The engine: a registry of rules modules and limits, and optionally the published packages
/// matches pin ([`crate::packages`]). Pure: no IO (the packages are read through the trait a
/// service passes), no clock, no OS entropy.
#[derive(Clone)]
pub struct Engine {
    pub registry: Arc<Registry>,
    pub limits: Limits,
    pub packages: Option<Arc<dyn PublishedPackages>>,
}

/// Runs one rules operation with fresh services: the captured instant and live randomness.
/// Returns the transition and the operation's randomness trace; a panic or a randomness
/// error is a fault.
fn run_rules(
    what: &str,
    now_ms: i64,
    draws: Draws<'_>,
    f: impl FnOnce(&mut Services<'_>) -> Result<ErasedTransition, RuleError>,
) -> Result<(ErasedTransition, Trace), RuleError> {
    let randomness = match draws {
        Draws::Live(entropy) => Randomness::live(entropy),
        Draws::Replay(recorded) | Draws::Scripted(recorded) => Randomness::replay(recorded),
    };
    let mut services = Services::new(now_ms, randomness);
    let t = guarded(what, || f(&mut services))?;
    let trace = services.finish()?;
    if let Some(id) = t.deadlines.iter().map(deadline_id).find(|id| id.starts_with(ENGINE_DEADLINE_PREFIX)) {
        let message =
            format!("{what} named the deadline {id:?}: ids starting with {ENGINE_DEADLINE_PREFIX:?} are the engine's");
        return Err(RuleError::Fault { message });
    }
    Ok((t, trace))
}

fn deadline_id(op: &DeadlineOp) -> &str {
    match op {
        DeadlineOp::Schedule { id, .. } | DeadlineOp::Cancel { id } => id,
    }
}

/// Where an operation's randomness comes from: live entropy when it is decided, its recorded
/// trace when a stored revision is recovered ([`Engine::recover`]), and another match's
/// recorded trace when a replay match plays that match's revision back
/// ([`Engine::replay_step`]).
enum Draws<'a> {
    Live(&'a mut dyn EntropySource),
    Replay(&'a [TraceEntry]),
    Scripted(&'a [TraceEntry]),
}

impl Draws<'_> {
    /// Whether the operation is decided now (and publishes), not recovered.
    fn live(&self) -> bool {
        !matches!(self, Draws::Replay(_))
    }
}

/// Runs rules code, turning a panic into a fault (a panic commits nothing).
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, RuleError>) -> Result<T, RuleError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(RuleError::fault(format!("rules panicked in {what}"))),
    }
}

impl Engine {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry, limits: Limits::default(), packages: None }
    }

    /// The engine with a package registry: matches created from now on pin their game's
    /// published package, and a pinned match loads only with that exact publication.
    pub fn with_packages(mut self, packages: Arc<dyn PublishedPackages>) -> Self {
        self.packages = Some(packages);
        self
    }

    /// Checks a stored match's package pin against this engine's registry
    /// ([`crate::packages::check_pin`]); [`Engine::load`] refuses a match that fails it.
    pub fn check_pin(&self, state: &MatchState) -> Result<(), PinError> {
        crate::packages::check_pin(self.packages.as_deref(), state)
    }

    /// Decodes and checks a stored match.
    pub fn load(&self, state: MatchState) -> Result<LiveMatch, Fault> {
        self.check_pin(&state).map_err(|e| Fault(e.to_string()))?;
        let game = self
            .registry
            .get(&state.game)
            .ok_or_else(|| Fault(format!("rules module {} {} is not loaded", state.game.id, state.game.rules_version)))?
            .clone();
        game.check_pinned(&state.rules_digest).map_err(Fault)?;
        let loaded = game.game.decode_position(&state.position).map_err(|e| Fault(format!("load match: {e}")))?;
        game.game.validate_position(&loaded).map_err(|e| Fault(format!("load match: {e}")))?;
        Ok(LiveMatch { state: Arc::new(state), game, loaded, last_sequence: 0, watched: true })
    }

    /// A stored match made live: its snapshot loaded and each revision of its tail
    /// recovered ([`Engine::recover`]).
    pub fn restore(&self, stored: StoredMatch) -> Result<LiveMatch, Fault> {
        let live = self.load(stored.snapshot)?;
        if stored.tail.is_empty() {
            return Ok(live);
        }
        let live = stored.tail.iter().try_fold(live, |live, entry| self.recover(live, entry))?;
        // Recovery checks no revision's position (its first decision did); the one the tail
        // ends at is checked as every decided one is, so a rules change that would refuse it
        // fails here, not at the next move.
        check_position(&live.game, &live.loaded, &live.state.position.data, &self.limits)
            .map_err(|f| Fault(format!("restore match {}: {}", live.state.match_id, f.0)))?;
        Ok(live)
    }

    /// The match one stored revision later: `entry`, the log entry of revision
    /// `live.revision + 1`, decided again with its captured instant and its recorded
    /// randomness trace by the pinned rules (what activation does with the revisions after a
    /// snapshot). The decision must reproduce the entry exactly — operation, events and
    /// trace — or the revision diverged and recovery stops: nothing is ever decided anew
    /// here. No publications are built (they were stored with the revision), and the position
    /// is not checked again (the same rules checked it when they first decided it;
    /// [`Engine::restore`] checks where the tail ends).
    pub fn recover(&self, mut live: LiveMatch, entry: &LogEntry) -> Result<LiveMatch, Fault> {
        let state = &live.state;
        let diverged =
            |why: String| Fault(format!("revision {} of match {} diverged: {why}", entry.revision, state.match_id));
        if entry.revision != state.revision + 1 {
            return Err(diverged(format!("it does not follow revision {}", state.revision)));
        }
        let (now_ms, draws) = (entry.instant_ms, Draws::Replay(&entry.trace));
        let pending = match &entry.op {
            LoggedOp::Create { .. } => return Err(diverged("a second creation".into())),
            LoggedOp::Command { principal, command_id, precondition, action_type, payload, sequence, .. } => {
                let envelope = CommandEnvelope {
                    match_id: state.match_id,
                    command_id: *command_id,
                    precondition: *precondition,
                    action: juegoland_protocol::Action { r#type: action_type.clone(), payload: payload.clone() },
                };
                match self.decide_command(&live, principal, &envelope, None, *sequence, now_ms, draws) {
                    Decision::Commit(p) if p.commit.state.is_some() => *p,
                    Decision::Fault(f) => return Err(diverged(f.0)),
                    _ => return Err(diverged("the command is not accepted".into())),
                }
            }
            op @ (LoggedOp::Lifecycle { .. } | LoggedOp::Cancel { .. } | LoggedOp::Control { .. }) => {
                let request = lifecycle_of(op).ok_or_else(|| diverged("an unknown lifecycle event".into()))?;
                self.decide_lifecycle(&live, &request, now_ms, draws).map_err(|e| diverged(e.to_string()))?
            }
        };
        if pending.commit.log.as_ref() != Some(entry) {
            return Err(diverged("the rules decided another revision".into()));
        }
        live.advance(pending);
        Ok(live)
    }

    /// Creates a match at revision 0: validates seats and config, runs `setup`.
    pub fn create(
        &self,
        match_id: Uuid,
        game: impl Into<GameChoice>,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
        now_ms: i64,
        entropy: &mut dyn EntropySource,
    ) -> Result<(Pending, LiveMatch), CreateError> {
        self.create_with(match_id, game, seats, config, &CreateOptions::default(), now_ms, entropy)
    }

    /// [`Engine::create`] with the creation's options (its hand-over policy).
    #[allow(clippy::too_many_arguments)]
    pub fn create_with(
        &self,
        match_id: Uuid,
        game: impl Into<GameChoice>,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
        options: &CreateOptions,
        now_ms: i64,
        entropy: &mut dyn EntropySource,
    ) -> Result<(Pending, LiveMatch), CreateError> {
        let setup = Setup { handover: options.handover.clone(), replay_of: None, expiry: options.expiry };
        self.create_inner(match_id, game.into(), seats, config, setup, now_ms, Draws::Live(entropy))
    }

    /// A replay match at revision 0 ([`ReplayOf`]): the game, rules, package, config and
    /// seats of the stored match `source`, every seat played by the replay script, set up
    /// with the randomness trace of `first` (the source's creation entry), so a dealt or
    /// rolled game deals the same. Refused `InvalidReplay` when the speed is out of range,
    /// `first` is not a creation, or setup does not decide as it did.
    pub fn create_replay(
        &self,
        match_id: Uuid,
        source: &MatchState,
        first: &LogEntry,
        speed_percent: u32,
        now_ms: i64,
    ) -> Result<(Pending, LiveMatch), CreateError> {
        if !ReplayOf::SPEED_PERCENT.contains(&speed_percent) {
            let (lo, hi) = (ReplayOf::SPEED_PERCENT.start(), ReplayOf::SPEED_PERCENT.end());
            return Err(CreateError::InvalidReplay(format!("speedPercent: {speed_percent} is not in {lo}..={hi}")));
        }
        if source.replay_of.is_some() {
            return Err(CreateError::InvalidReplay("a replay match is not replayed again; replay its source".into()));
        }
        let LoggedOp::Create { config } = &first.op else {
            return Err(CreateError::InvalidReplay(format!(
                "the source's revision {} is not its creation",
                first.revision
            )));
        };
        let choice = GameChoice {
            id: source.game.id.clone(),
            rules_version: Some(source.game.rules_version.clone()),
            package_version: source.package.as_ref().map(|p| p.version.clone()),
        };
        let seats = source.seats.keys().map(|seat| (seat.clone(), SeatHolder::Replay)).collect();
        let replay_of = Some(ReplayOf { source: source.match_id, speed_percent });
        let setup = Setup { handover: None, replay_of, expiry: None };
        let (pending, live) = self
            .create_inner(match_id, choice, seats, config, setup, now_ms, Draws::Scripted(&first.trace))
            .map_err(|e| match e {
                // Setup asked for other draws than the recorded ones: it does not replay.
                CreateError::Fault(f) => CreateError::InvalidReplay(format!("the source's setup does not replay: {f}")),
                other => other,
            })?;
        let log = pending.commit.log.as_ref().expect("a creation is logged");
        if log.events != first.events || log.trace != first.trace {
            return Err(CreateError::InvalidReplay("the source's setup does not replay under its rules".into()));
        }
        Ok((pending, live))
    }

    /// The next revision of a replay match: `entry`, a decision of the match it plays back
    /// ([`MatchState::replay_of`]), decided again in this match by the same rules, with that
    /// revision's randomness trace, at `instant_ms`, under the script's principal
    /// (`replay:<seat>`); its publications are built as for any decision. Hand-overs of the
    /// source are not decisions (the caller skips them: [`LoggedOp::is_decision`]). A
    /// decision that comes out otherwise (refused, other events, other draws) is a fault:
    /// the replay stops there, and nothing is committed.
    pub fn replay_step(&self, live: &LiveMatch, entry: &LogEntry, instant_ms: i64) -> Result<Pending, Fault> {
        let state = &live.state;
        let diverged = |why: String| {
            Fault(format!("replay of revision {} into match {} diverged: {why}", entry.revision, state.match_id))
        };
        let draws = Draws::Scripted(&entry.trace);
        let pending = match &entry.op {
            LoggedOp::Command { seat, command_id, action_type, payload, .. } => {
                let principal = format!("{}{seat}", crate::state::REPLAY_PREFIX);
                let envelope = CommandEnvelope {
                    match_id: state.match_id,
                    command_id: *command_id,
                    precondition: live.precondition(seat, action_type),
                    action: juegoland_protocol::Action { r#type: action_type.clone(), payload: payload.clone() },
                };
                match self.decide_command(live, &principal, &envelope, None, None, instant_ms, draws) {
                    Decision::Commit(p) if p.commit.state.is_some() => *p,
                    Decision::Fault(f) => return Err(diverged(f.0)),
                    _ => return Err(diverged("the command is not accepted".into())),
                }
            }
            op @ (LoggedOp::Lifecycle { .. } | LoggedOp::Cancel { .. }) => {
                let request = lifecycle_of(op).ok_or_else(|| diverged("an unknown lifecycle event".into()))?;
                self.decide_lifecycle(live, &request, instant_ms, draws).map_err(|e| diverged(e.to_string()))?
            }
            LoggedOp::Create { .. } | LoggedOp::Control { .. } => return Err(diverged("not a decision".into())),
        };
        let log = pending.commit.log.as_ref().expect("a decision is logged");
        if log.events != entry.events || log.trace != entry.trace {
            return Err(diverged("the rules decided another revision".into()));
        }
        Ok(pending)
    }

    #[allow(clippy::too_many_arguments)]
    fn create_inner(
        &self,
        match_id: Uuid,
        game: GameChoice,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
        setup: Setup,
        now_ms: i64,
        draws: Draws<'_>,
    ) -> Result<(Pending, LiveMatch), CreateError> {
        let (loaded_game, package) =
            crate::packages::choose(&self.registry, self.packages.as_deref(), &game).map_err(|e| match e {
                ChoiceError::Unreadable { .. } => CreateError::Fault(Fault(e.to_string())),
                other => CreateError::Choice(other),
            })?;
        let game = loaded_game.key();
        let d = loaded_game.descriptor();
        let n = seats.len();
        let (min, max) = (d.min_seats as usize, d.max_seats as usize);
        let wanted = |n: usize| seat_ids(n).join(", ");
        if n < min {
            let missing: Vec<Seat> = seat_ids(min).into_iter().filter(|s| !seats.contains_key(s)).collect();
            let at = match missing.as_slice() {
                [one] => format!("seats.{one}"),
                _ => "seats".to_owned(),
            };
            let needs = if min == max { format!("exactly {min}") } else { format!("{min} to {max}") };
            return Err(CreateError::InvalidSeats(format!(
                "{at}: {} needs {needs} seats ({}), {n} given; missing {}",
                d.id,
                wanted(min),
                missing.join(", ")
            )));
        }
        if n > max {
            let needs = if min == max { format!("exactly {max}") } else { format!("{min} to {max}") };
            return Err(CreateError::InvalidSeats(format!("seats: {} needs {needs} seats, {n} given", d.id)));
        }
        if seats.keys().cloned().collect::<Vec<_>>() != sorted_seat_ids(n) {
            let stray: Vec<&Seat> = seats.keys().filter(|s| !seat_ids(n).contains(s)).collect();
            return Err(CreateError::InvalidSeats(format!(
                "seats.{}: {n} seats are named {}",
                stray.first().map_or("?", |s| s.as_str()),
                wanted(n)
            )));
        }
        for (seat, holder) in &seats {
            match holder {
                SeatHolder::Principal(p) if check_principal(p).is_err() => {
                    let why = check_principal(p).err().unwrap_or_default();
                    return Err(CreateError::InvalidSeats(format!("seats.{seat}: {why}")));
                }
                SeatHolder::Replay if setup.replay_of.is_none() => {
                    return Err(CreateError::InvalidSeats(format!(
                        "seats.{seat}: only a replay match has replay seats"
                    )));
                }
                SeatHolder::Bot(profile) if !d.bots.contains(profile) => {
                    return Err(CreateError::InvalidSeats(format!(
                        "seats.{seat}: {} has no bot {profile:?} (bots: {})",
                        d.id,
                        d.bots.join(", ")
                    )));
                }
                SeatHolder::Agent(profile) if d.agents.as_ref().and_then(|a| a.profile(profile)).is_none() => {
                    let declared = match &d.agents {
                        Some(_) => "no agent profile",
                        None => "no agent seats, so no agent profile",
                    };
                    return Err(CreateError::InvalidSeats(format!(
                        "seats.{seat}: {} declares {declared} {profile:?}",
                        d.id
                    )));
                }
                _ => {}
            }
        }
        let principals: Vec<_> =
            seats.values().filter_map(|h| if let SeatHolder::Principal(p) = h { Some(p) } else { None }).collect();
        if principals.iter().enumerate().any(|(i, p)| principals[..i].contains(p)) {
            return Err(CreateError::InvalidSeats("seats: a principal may hold only one seat".into()));
        }
        if let Some(message) = unknown_config_field(&loaded_game.game.schemas().config, config) {
            return Err(CreateError::InvalidConfig(message));
        }
        if let Err(e) = loaded_game.config.validate(config) {
            // jsonschema's message names the value and the constraint ("12 is greater than the
            // maximum of 10"); the path names the field.
            let at = e.instance_path().to_string();
            let field = if at.is_empty() { "config".to_owned() } else { format!("config{}", at.replace('/', ".")) };
            let mut message = format!("{field}: {e}");
            if message.len() > 300 {
                let cut = (0..=300).rev().find(|&i| message.is_char_boundary(i)).unwrap_or(0);
                message.truncate(cut);
                message.push('…');
            }
            return Err(CreateError::InvalidConfig(message));
        }
        let config = loaded_game.game.decode_config(config).map_err(|e| CreateError::InvalidConfig(e.to_string()))?;
        let participants: BTreeMap<Seat, Participant> =
            seats.keys().map(|s| (s.clone(), Participant::active())).collect();

        let handover = match setup.handover {
            Some(h) => check_handover(&h, d).map(|()| h).map_err(CreateError::InvalidHandover)?,
            None => loaded_game.game.handover(),
        };
        if let Some(expiry) = &setup.expiry {
            expiry.check().map_err(CreateError::InvalidExpiry)?;
        }
        let (t, trace) = match run_rules("setup", now_ms, draws, |s| loaded_game.game.setup(&config, &participants, s))
        {
            Ok(r) => r,
            Err(RuleError::Illegal { reason }) => return Err(CreateError::InvalidConfig(reason)),
            Err(RuleError::Fault { message }) => return Err(CreateError::Fault(Fault(message))),
        };
        let empty_flow = Flow::default();
        check_transition(&loaded_game, &empty_flow, None, &t, &self.limits).map_err(CreateError::Fault)?;
        let position =
            loaded_game.game.encode_position(&t.next).map_err(|e| CreateError::Fault(Fault(e.to_string())))?;
        check_data(&loaded_game, &position.data, &self.limits).map_err(CreateError::Fault)?;
        let events = loaded_game.game.encode_events(&t.events).map_err(|e| CreateError::Fault(Fault(e.to_string())))?;

        let mut state = MatchState {
            match_id,
            game_version: package.as_ref().map_or_else(|| d.version.clone(), |p| p.version.clone()),
            game,
            rules_digest: loaded_game.digest.clone(),
            package,
            migrations: Vec::new(),
            position,
            revision: 0,
            phase_epoch: 0,
            actor_revisions: seats.keys().map(|s| (s.clone(), 0)).collect(),
            seats,
            deadlines: BTreeMap::new(),
            next_generation: 1,
            created_ms: now_ms,
            queue_sequence: 0,
            handover: (handover != Handover::Off).then_some(handover),
            stand_ins: BTreeMap::new(),
            replay_of: setup.replay_of,
            moves: BTreeMap::new(),
            last_move_ms: 0,
            expiry: setup.expiry,
        };
        apply_deadline_ops(&mut state, &t.deadlines);
        arm_expiry(&mut state, None);
        let log = LogEntry { revision: 0, instant_ms: now_ms, op: LoggedOp::Create { config }, trace, events };
        let state = Arc::new(state);
        let live =
            LiveMatch { state: Arc::clone(&state), game: loaded_game, loaded: t.next, last_sequence: 0, watched: true };
        let commit = Commit {
            match_id,
            expected_revision: None,
            state: Some(state),
            receipt: None,
            log: Some(log),
            publications: Vec::new(),
        };
        // The returned live match already holds the new position; `next` is not needed.
        Ok((Pending { commit, next: None }, live))
    }

    /// Decides a command from `principal`. `existing` is the receipt already stored under
    /// (match, principal, commandId), looked up BEFORE anything about the match is judged;
    /// the command's fingerprint is the SHA-256 of the JCS of its whole envelope.
    pub fn command(
        &self,
        live: &LiveMatch,
        principal: &str,
        envelope: &CommandEnvelope,
        existing: Option<Receipt>,
        now_ms: i64,
        entropy: &mut dyn EntropySource,
    ) -> Decision {
        self.decide_command(live, principal, envelope, existing, None, now_ms, Draws::Live(entropy))
    }

    /// `sequence` is the command sequence a recovered `queue` command took when it was first
    /// decided (its log entry's); `None` when deciding now: the next after
    /// [`LiveMatch::last_sequence`].
    #[allow(clippy::too_many_arguments)]
    fn decide_command(
        &self,
        live: &LiveMatch,
        principal: &str,
        envelope: &CommandEnvelope,
        existing: Option<Receipt>,
        sequence: Option<u64>,
        now_ms: i64,
        draws: Draws<'_>,
    ) -> Decision {
        let state = &live.state;
        let Some(seat) = state.seat_of(principal) else { return Decision::Forbidden };
        let fingerprint = &juegoland_protocol::fingerprint_hex(envelope);
        if let Some(receipt) = existing {
            return if &receipt.fingerprint == fingerprint { Decision::Duplicate(receipt) } else { Decision::IdReused };
        }
        let key =
            ReceiptKey { match_id: state.match_id, principal: principal.to_owned(), command_id: envelope.command_id };
        // A `queue` command takes its sequence when the match accepts it into its FIFO,
        // before anything is judged: a final rejection carries one too.
        let sequence = match envelope.precondition {
            Precondition::Queue => Some(sequence.unwrap_or(live.last_sequence() + 1)),
            _ => None,
        };
        let reject = |code: RejectionCode| {
            Decision::Commit(Box::new(Pending {
                commit: Commit {
                    match_id: state.match_id,
                    expected_revision: Some(state.revision),
                    state: None,
                    receipt: Some(Receipt {
                        key: key.clone(),
                        fingerprint: fingerprint.to_owned(),
                        outcome: ReceiptOutcome::Rejected { code, revision: state.revision, sequence },
                    }),
                    log: None,
                    publications: Vec::new(),
                },
                next: None,
            }))
        };

        if state.is_finished() {
            return reject(RejectionCode::MatchFinished);
        }
        let game = &live.game;
        let action_type = envelope.action.r#type.as_str();
        let Some(spec) = game.descriptor().action(action_type) else { return reject(RejectionCode::UnknownAction) };
        let policy = spec.policy;
        if let Err(code) = check_precondition(state, seat, policy, &envelope.precondition) {
            return reject(code);
        }
        let flow = &state.position.flow;
        match flow.stage_of(seat) {
            Some(stage) if game.descriptor().stage_allows(&flow.phase, stage, action_type) => {}
            _ => return reject(RejectionCode::ActorNotEnabled),
        }
        let payload = &envelope.action.payload;
        if !game.payload_valid(action_type, payload) {
            return reject(RejectionCode::InvalidPayload);
        }
        let Ok(action) = game.game.decode_action(action_type, payload) else {
            return reject(RejectionCode::InvalidPayload);
        };

        let fresh = draws.live();
        let (t, trace) = match run_rules("apply", now_ms, draws, |s| game.game.apply(&live.loaded, seat, &action, s)) {
            Ok(r) => r,
            Err(RuleError::Illegal { .. }) => return reject(RejectionCode::IllegalAction),
            Err(RuleError::Fault { message }) => return Decision::Fault(Fault(message)),
        };
        let op = LoggedOp::Command {
            principal: principal.to_owned(),
            seat: seat.to_owned(),
            command_id: envelope.command_id,
            precondition: envelope.precondition,
            action_type: action_type.to_owned(),
            payload: payload.clone(),
            sequence,
        };
        let bump = match policy {
            ConflictPolicy::Actor => Bump::Actor(seat),
            // A real-time move changes shared state: a barrier, like a `match` action.
            ConflictPolicy::Match | ConflictPolicy::Queue => Bump::Barrier,
        };
        match self.accept_with(live, Accepted { t, trace, op, bump, now_ms, consumed_deadline: None, fresh }, |s| {
            Some(Receipt {
                key: key.clone(),
                fingerprint: fingerprint.to_owned(),
                outcome: ReceiptOutcome::Applied { revision: s.revision, sequence },
            })
        }) {
            Ok(p) => Decision::Commit(Box::new(p)),
            Err(f) => Decision::Fault(f),
        }
    }

    /// Decides a withdrawal or a deadline firing.
    pub fn lifecycle(
        &self,
        live: &LiveMatch,
        request: &LifecycleRequest,
        now_ms: i64,
        entropy: &mut dyn EntropySource,
    ) -> Result<Pending, LifecycleError> {
        self.decide_lifecycle(live, request, now_ms, Draws::Live(entropy))
    }

    fn decide_lifecycle(
        &self,
        live: &LiveMatch,
        request: &LifecycleRequest,
        now_ms: i64,
        draws: Draws<'_>,
    ) -> Result<Pending, LifecycleError> {
        let state = &live.state;
        let fresh = draws.live();
        if state.is_finished() {
            return Err(LifecycleError::Finished);
        }
        let game = &live.game;
        let mut bump = Bump::Barrier;
        let (t, trace, op, consumed) = match request {
            LifecycleRequest::Control { seat, stand_in } => {
                match state.seats.get(seat) {
                    None => return Err(LifecycleError::UnknownSeat),
                    // A human's seat (hand-over) or an agent's (past its think time).
                    Some(SeatHolder::Principal(_) | SeatHolder::Agent(_)) => {}
                    Some(_) => {
                        return Err(LifecycleError::Illegal(format!("{seat} is not a human's or an agent's seat")));
                    }
                }
                if !state.position.participants.get(seat).is_some_and(Participant::is_active) {
                    return Err(LifecycleError::AlreadyWithdrawn);
                }
                if state.stand_ins.get(seat) == stand_in.as_ref() {
                    return Err(LifecycleError::Illegal(format!("{seat} is already played that way")));
                }
                if let Some(profile) = stand_in
                    && !game.descriptor().bots.contains(profile)
                {
                    return Err(LifecycleError::Illegal(format!("{} has no bot {profile:?}", game.descriptor().id)));
                }
                // Nobody's move changes: no counter moves, so no command in flight goes stale
                // but for the revision itself.
                bump = Bump::Quiet;
                let t = unchanged(game, state).map_err(LifecycleError::Fault)?;
                let op = LoggedOp::Control { seat: seat.clone(), stand_in: stand_in.clone() };
                (t, Trace::default(), op, None)
            }
            LifecycleRequest::Cancel { reason_code } => {
                if !valid_reason_code(reason_code) {
                    return Err(LifecycleError::InvalidReason(reason_code.clone()));
                }
                let mut t = game.game.cancelled(&live.loaded, reason_code);
                if fresh && reserved_reason(game, &live.loaded, &t, reason_code) {
                    return Err(LifecycleError::InvalidReason(format!(
                        "{reason_code}: {} gives its own results this reason code; cancel with another, e.g. \
                         {PLATFORM_CANCELLATION}",
                        game.descriptor().id
                    )));
                }
                t.deadlines = state.deadlines.keys().map(|id| DeadlineOp::Cancel { id: id.clone() }).collect();
                (t, Trace::default(), LoggedOp::Cancel { reason_code: reason_code.clone() }, None)
            }
            LifecycleRequest::Withdraw { seat } => {
                // A withdrawal is applied by the engine before the rules see it.
                let p = state.position.participants.get(seat).ok_or(LifecycleError::UnknownSeat)?;
                if !p.is_active() {
                    return Err(LifecycleError::AlreadyWithdrawn);
                }
                let withdrawn = game.game.with_withdrawn(&live.loaded, seat);
                let event = Lifecycle::Withdrawal { seat: seat.clone() };
                let (t, trace) = run_lifecycle(game, &withdrawn, &event, now_ms, draws)?;
                (t, trace, LoggedOp::Lifecycle { event, generation: None }, None)
            }
            LifecycleRequest::FireDeadline { id, generation } if id == EXPIRY_DEADLINE => {
                let d = state.deadlines.get(id).filter(|d| d.generation == *generation);
                let d = d.ok_or(LifecycleError::StaleDeadline)?;
                if now_ms < d.due_ms {
                    return Err(LifecycleError::NotDue { due_ms: d.due_ms, now_ms });
                }
                match expired(state, now_ms) {
                    // Logged as the cancellation it is: recovered and replayed as one.
                    Some(reason_code) => {
                        let mut t = game.game.cancelled(&live.loaded, reason_code);
                        t.deadlines = state.deadlines.keys().map(|id| DeadlineOp::Cancel { id: id.clone() }).collect();
                        (t, Trace::default(), LoggedOp::Cancel { reason_code: reason_code.to_owned() }, None)
                    }
                    None => {
                        // Played since it was armed: armed again from the last move (a
                        // revision that changes no position and no counter).
                        bump = Bump::Quiet;
                        let t = unchanged(game, state).map_err(LifecycleError::Fault)?;
                        let event = Lifecycle::DeadlineExpired { id: id.clone(), payload: d.payload.clone() };
                        let op = LoggedOp::Lifecycle { event, generation: Some(*generation) };
                        (t, Trace::default(), op, Some(id.clone()))
                    }
                }
            }
            LifecycleRequest::FireDeadline { id, generation } => {
                let d = state.deadlines.get(id).filter(|d| d.generation == *generation);
                let d = d.ok_or(LifecycleError::StaleDeadline)?;
                // Whoever asks, a clock does not run out before its time.
                if now_ms < d.due_ms {
                    return Err(LifecycleError::NotDue { due_ms: d.due_ms, now_ms });
                }
                let event = Lifecycle::DeadlineExpired { id: id.clone(), payload: d.payload.clone() };
                let (t, trace) = run_lifecycle(game, &live.loaded, &event, now_ms, draws)?;
                (t, trace, LoggedOp::Lifecycle { event, generation: Some(*generation) }, Some(id.clone()))
            }
        };
        let accepted = Accepted { t, trace, op, bump, now_ms, consumed_deadline: consumed, fresh };
        self.accept_with(live, accepted, |_| None).map_err(LifecycleError::Fault)
    }

    /// Validates an accepted transition, applies the counter rules, and builds the commit.
    fn accept_with(
        &self,
        live: &LiveMatch,
        accepted: Accepted<'_>,
        receipt: impl FnOnce(&MatchState) -> Option<Receipt>,
    ) -> Result<Pending, Fault> {
        let Accepted { t, trace, op, bump, now_ms, consumed_deadline, fresh } = accepted;
        let game = &live.game;
        let before = &live.state;
        check_transition(game, &before.position.flow, before.position.result.as_ref(), &t, &self.limits)?;
        let position = game.game.encode_position(&t.next).map_err(|e| Fault(e.to_string()))?;
        if fresh {
            check_position(game, &t.next, &position.data, &self.limits)?;
        }
        let events = game.game.encode_events(&t.events).map_err(|e| Fault(e.to_string()))?;

        let mut state = MatchState {
            match_id: before.match_id,
            game: before.game.clone(),
            game_version: before.game_version.clone(),
            rules_digest: before.rules_digest.clone(),
            package: before.package.clone(),
            migrations: before.migrations.clone(),
            position,
            revision: before.revision + 1,
            phase_epoch: before.phase_epoch,
            actor_revisions: before.actor_revisions.clone(),
            seats: before.seats.clone(),
            deadlines: before.deadlines.clone(),
            next_generation: before.next_generation,
            created_ms: before.created_ms,
            queue_sequence: before.queue_sequence,
            handover: before.handover.clone(),
            stand_ins: before.stand_ins.clone(),
            replay_of: before.replay_of.clone(),
            moves: before.moves.clone(),
            last_move_ms: before.last_move_ms,
            expiry: before.expiry,
        };
        if let LoggedOp::Command { principal, seat, .. } = &op {
            count_move(&mut state, principal, seat, now_ms);
        }
        if let LoggedOp::Control { seat, stand_in } = &op {
            match stand_in {
                Some(profile) => state.stand_ins.insert(seat.clone(), profile.clone()),
                None => state.stand_ins.remove(seat),
            };
        }
        // A seat that left the match, or a match that ended, has nobody standing in.
        let participants = &state.position.participants;
        state.stand_ins.retain(|seat, _| participants.get(seat).is_some_and(Participant::is_active));
        if state.position.result.is_some() {
            state.stand_ins.clear();
        }
        apply_counters(&mut state, &before.position.flow, before.position.result.as_ref(), bump);
        if let LoggedOp::Command { sequence: Some(sequence), .. } = &op {
            state.queue_sequence = *sequence;
        }
        let rearm = consumed_deadline.as_deref() == Some(EXPIRY_DEADLINE);
        if let Some(id) = consumed_deadline {
            let consumed = state.deadlines.remove(&id);
            if rearm {
                arm_expiry(&mut state, consumed.map(|d| d.generation));
            }
        }
        apply_deadline_ops(&mut state, &t.deadlines);
        if state.position.result.is_some() {
            state.deadlines.remove(EXPIRY_DEADLINE);
        }
        let log = LogEntry { revision: state.revision, instant_ms: now_ms, op, trace, events };
        let publications =
            if fresh { publications(game, &live.loaded, &state, &t, &self.limits, live.watched)? } else { Vec::new() };
        let receipt = receipt(&state);
        Ok(Pending {
            commit: Commit {
                match_id: state.match_id,
                expected_revision: Some(before.revision),
                state: Some(Arc::new(state)),
                receipt,
                log: Some(log),
                publications,
            },
            next: Some(t.next),
        })
    }
}

/// What the rules decided for an accepted operation, before the engine checks and applies it.
struct Accepted<'a> {
    t: ErasedTransition,
    trace: Trace,
    op: LoggedOp,
    bump: Bump<'a>,
    now_ms: i64,
    /// The deadline the operation consumed (a firing).
    consumed_deadline: Option<String>,
    /// Whether the operation is decided now: its position is checked (`check_position`) and
    /// its publications built. A stored revision recovered is neither: the same pinned rules
    /// checked and published it when they first decided it, and `Engine::restore` checks the
    /// position its tail ends at.
    fresh: bool,
}

/// What a creation sets beyond game, seats and config.
struct Setup {
    /// Asked for at creation; `None`: the game's default.
    handover: Option<Handover>,
    replay_of: Option<ReplayOf>,
    /// `None`: the match never expires (a replay).
    expiry: Option<Expiry>,
}

/// A hand-over policy `d`'s game can follow: a declared bot, a grace within
/// [`Handover::AFTER_MS`].
fn check_handover(handover: &Handover, d: &juegoland_sdk::Descriptor) -> Result<(), String> {
    if let Handover::Bot { profile, .. } = handover
        && !d.bots.contains(profile)
    {
        return Err(format!("handover.profile: {} has no bot {profile:?} (bots: {})", d.id, d.bots.join(", ")));
    }
    if let Some(after_ms) = handover.after_ms()
        && !Handover::AFTER_MS.contains(&after_ms)
    {
        let (lo, hi) = (Handover::AFTER_MS.start(), Handover::AFTER_MS.end());
        return Err(format!("handover.afterMs: {after_ms} is not between {lo} and {hi}"));
    }
    Ok(())
}

/// Counts an applied command of `principal` for `seat`: a bot's principal on a seat that is
/// not a bot's is a stand-in's move.
fn count_move(state: &mut MatchState, principal: &str, seat: &str, now_ms: i64) {
    let stand_in =
        principal.starts_with(crate::state::BOT_PREFIX) && !matches!(state.seats.get(seat), Some(SeatHolder::Bot(_)));
    let moves = state.moves.entry(seat.to_owned()).or_default();
    if stand_in {
        moves.stand_in += 1;
    } else {
        moves.own += 1;
    }
    state.last_move_ms = now_ms;
}

/// Whether a seat held by a human or an agent has made a move of its own (a match with no
/// such seat counts as joined).
fn joined(state: &MatchState) -> bool {
    let mut held = state.seats.iter().filter(|(_, h)| matches!(h, SeatHolder::Principal(_) | SeatHolder::Agent(_)));
    let mut any = false;
    let moved = held.any(|(seat, _)| {
        any = true;
        state.moves.get(seat).is_some_and(|m| m.own > 0)
    });
    moved || !any
}

/// When the match's expiry is due next, from its state: `unjoined_ms` after its creation
/// until it is joined, then `idle_ms` after its last move; `None` when that one is off.
fn expiry_due(state: &MatchState) -> Option<i64> {
    let expiry = state.expiry?;
    let since = |ms: u64| i64::try_from(ms).ok().filter(|ms| *ms > 0);
    if !joined(state)
        && let Some(ms) = since(expiry.unjoined_ms)
    {
        return Some(state.created_ms.saturating_add(ms));
    }
    let last = if state.last_move_ms > 0 { state.last_move_ms } else { state.created_ms };
    Some(last.saturating_add(since(expiry.idle_ms)?))
}

/// The first generation of a match's expiry deadline. Its generations are its own, not the
/// match's `next_generation`, so that the rules' deadlines take the same generations with or
/// without it (a replay match, which never expires, fires its source's deadlines by
/// generation); they start far above any the rules' deadlines reach, so that a generation
/// still names one deadline of the match (the stores close a consumed deadline's row by its
/// generation).
const EXPIRY_GENERATIONS: u64 = 1 << 48;

/// Arms the match's expiry (again), if it expires: due as [`expiry_due`] says, with the
/// generation after the previous expiry's.
fn arm_expiry(state: &mut MatchState, previous: Option<u64>) {
    let Some(due_ms) = expiry_due(state) else { return };
    let generation = previous.map_or(EXPIRY_GENERATIONS, |g| g + 1);
    state.deadlines.insert(EXPIRY_DEADLINE.to_owned(), Deadline { generation, due_ms, payload: Value::Null });
}

/// The reason the match expires at `now_ms`, if it does: unjoined past its first window,
/// or idle past its idle time.
fn expired(state: &MatchState, now_ms: i64) -> Option<&'static str> {
    let due = expiry_due(state)?;
    if now_ms < due {
        return None;
    }
    Some(if joined(state) { EXPIRED_ABANDONED } else { EXPIRED_UNJOINED })
}

/// The transition that changes nothing (a seat changing hands): the same position, flow and
/// no events.
fn unchanged(game: &LoadedGame, state: &MatchState) -> Result<ErasedTransition, Fault> {
    let next = game.game.decode_position(&state.position).map_err(|e| Fault(e.to_string()))?;
    let events = game.game.decode_events(&[]).map_err(|e| Fault(e.to_string()))?;
    Ok(ErasedTransition { next, flow: state.position.flow.clone(), result: None, events, deadlines: Vec::new() })
}

/// The lifecycle request a logged lifecycle operation was decided from.
fn lifecycle_of(op: &LoggedOp) -> Option<LifecycleRequest> {
    Some(match op {
        LoggedOp::Lifecycle { event: Lifecycle::Withdrawal { seat }, generation: None } => {
            LifecycleRequest::Withdraw { seat: seat.clone() }
        }
        LoggedOp::Lifecycle { event: Lifecycle::DeadlineExpired { id, .. }, generation: Some(generation) } => {
            LifecycleRequest::FireDeadline { id: id.clone(), generation: *generation }
        }
        LoggedOp::Cancel { reason_code } => LifecycleRequest::Cancel { reason_code: reason_code.clone() },
        LoggedOp::Control { seat, stand_in } => {
            LifecycleRequest::Control { seat: seat.clone(), stand_in: stand_in.clone() }
        }
        _ => return None,
    })
}

/// A reason code no game gives its own results: the platform's cancellations live under
/// `platform.`.
const PLATFORM_CANCELLATION: &str = "platform.cancelled";

/// Whether `reason_code` is one the game keeps for results of its own: `t`, the position
/// `before` cancelled under it, fails the rules' invariants with it, but passes them with a platform code. A
/// game's invariants may tie its own cancellation reasons to how its match got there (Hundido's
/// `abandoned`: both seats ran out of time), so a platform cancellation under such a code
/// would make a position those invariants call corrupt; it is refused instead (found by the
/// `game_commands` fuzz target).
fn reserved_reason(game: &LoadedGame, before: &LoadedPosition, t: &ErasedTransition, reason_code: &str) -> bool {
    let valid = |t: &ErasedTransition| {
        guarded("validate_position", || game.game.validate_position(&t.next).map_err(|e| RuleError::fault(e.0))).is_ok()
    };
    reason_code != PLATFORM_CANCELLATION && !valid(t) && valid(&game.game.cancelled(before, PLATFORM_CANCELLATION))
}

/// Runs `on_lifecycle` for a withdrawal or a fired deadline.
fn run_lifecycle(
    game: &LoadedGame,
    position: &LoadedPosition,
    event: &Lifecycle,
    now_ms: i64,
    draws: Draws<'_>,
) -> Result<(ErasedTransition, Trace), LifecycleError> {
    run_rules("on_lifecycle", now_ms, draws, |s| game.game.on_lifecycle(position, event, s)).map_err(|e| match e {
        RuleError::Illegal { reason } => LifecycleError::Illegal(reason),
        RuleError::Fault { message } => LifecycleError::Fault(Fault(message)),
    })
}

fn sorted_seat_ids(n: usize) -> Vec<Seat> {
    let mut ids = seat_ids(n);
    ids.sort();
    ids
}

/// Rule 4 of the engine's checks: the precondition must match the action's policy and the
/// current counters.
fn check_precondition(
    state: &MatchState,
    seat: &str,
    policy: ConflictPolicy,
    precondition: &Precondition,
) -> Result<(), RejectionCode> {
    match (policy, precondition) {
        (ConflictPolicy::Match, Precondition::Match { revision }) => {
            if *revision == state.revision {
                Ok(())
            } else {
                Err(RejectionCode::StaleRevision)
            }
        }
        (ConflictPolicy::Actor, Precondition::Actor { phase_epoch, actor_revision }) => {
            if *phase_epoch != state.phase_epoch {
                Err(RejectionCode::StaleEpoch)
            } else if Some(actor_revision) != state.actor_revisions.get(seat) {
                Err(RejectionCode::StaleRevision)
            } else {
                Ok(())
            }
        }
        // Ordered by arrival; the rules judge it against the state it meets.
        (ConflictPolicy::Queue, Precondition::Queue) => Ok(()),
        // A precondition of the wrong kind was not built from an offer of this action: a
        // `queue` action refuses `match` and `actor` preconditions, and the other two refuse
        // `queue` and each other's.
        _ => Err(RejectionCode::PreconditionMismatch),
    }
}

/// Which counter rule an accepted change falls under.
#[derive(Clone, Copy, Debug)]
enum Bump<'a> {
    /// An `actor` action by this seat (rules 1 and 3).
    Actor(&'a str),
    /// A `match` action or a lifecycle event (rule 2).
    Barrier,
    /// A change of who plays a seat: the position is the same, so no counter but the
    /// revision moves.
    Quiet,
}

/// Applies the counter rules 1–4. `state.revision` is already incremented.
fn apply_counters(state: &mut MatchState, before_flow: &Flow, before_result: Option<&MatchResult>, bump: Bump<'_>) {
    let after = &state.position.flow;
    let structural = after.phase != before_flow.phase
        || after.round != before_flow.round
        || after.turn != before_flow.turn
        || state.position.result.as_ref() != before_result;
    let barrier = match bump {
        Bump::Quiet => return,
        Bump::Barrier => true,
        Bump::Actor(seat) => {
            // Rule 3: changing one's own stage keeps independence; enabling, disabling or
            // re-staging another actor is a common barrier.
            let others_changed = before_flow
                .actors
                .keys()
                .chain(after.actors.keys())
                .filter(|s| s.as_str() != seat)
                .any(|s| before_flow.actors.get(s) != after.actors.get(s));
            structural || others_changed
        }
    };
    if barrier {
        state.phase_epoch += 1;
        for r in state.actor_revisions.values_mut() {
            *r += 1;
        }
    } else if let Bump::Actor(seat) = bump
        && let Some(r) = state.actor_revisions.get_mut(seat)
    {
        *r += 1;
    }
}

fn apply_deadline_ops(state: &mut MatchState, ops: &[DeadlineOp]) {
    for op in ops {
        match op {
            DeadlineOp::Schedule { id, due_ms, payload } => {
                let generation = state.next_generation;
                state.next_generation += 1;
                state.deadlines.insert(id.clone(), Deadline { generation, due_ms: *due_ms, payload: payload.clone() });
            }
            DeadlineOp::Cancel { id } => {
                state.deadlines.remove(id);
            }
        }
    }
}

/// The engine-level checks of a transition: flow coherence with the descriptor, no
/// decreasing round or turn, actors that are active participants, a terminal flow exactly
/// when there is a result.
fn check_transition(
    game: &LoadedGame,
    before: &Flow,
    before_result: Option<&MatchResult>,
    t: &ErasedTransition,
    _limits: &Limits,
) -> Result<(), Fault> {
    let d = game.descriptor();
    let flow = &t.flow;
    let fault = |m: String| Err(Fault(format!("{} produced an invalid transition: {m}", d.id)));
    if before_result.is_some() {
        return fault("a finished match changed".into());
    }
    if flow.round < before.round || flow.turn < before.turn {
        return fault("round or turn decreased".into());
    }
    let participants = game.game.participants(&t.next);
    if let Some(r) = &t.result {
        if !flow.actors.is_empty() {
            return fault("a finished match still has actors".into());
        }
        if let MatchResult::Completed { participants: outcomes, .. } = r
            && outcomes.keys().ne(participants.keys())
        {
            return fault("the result does not list every participant".into());
        }
        return Ok(());
    }
    let Some(phase) = d.phase(&flow.phase) else { return fault(format!("unknown phase {:?}", flow.phase)) };
    for (seat, stage) in &flow.actors {
        if !participants.get(seat).is_some_and(Participant::is_active) {
            return fault(format!("{seat} is an actor but not an active participant"));
        }
        if !phase.stages.iter().any(|s| &s.id == stage) {
            return fault(format!("unknown stage {stage:?} in phase {}", phase.id));
        }
    }
    let n = flow.actors.len();
    match phase.participation {
        Participation::Single if n != 1 => fault(format!("single-participation phase with {n} actors")),
        Participation::Automatic if n != 0 => fault(format!("automatic phase with {n} actors")),
        _ => Ok(()),
    }
}

/// The rules' own invariants of `position` (`validate_position`), then its encoded `data`
/// against the data schema and the size limit: what every decided revision is checked for.
pub(crate) fn check_position(
    game: &LoadedGame,
    position: &LoadedPosition,
    data: &RawJson,
    limits: &Limits,
) -> Result<(), Fault> {
    guarded("validate_position", || game.game.validate_position(position).map_err(|e| RuleError::fault(e.0)))
        .map_err(|e| Fault(e.to_string()))?;
    check_data(game, data, limits)
}

fn check_data(game: &LoadedGame, data: &RawJson, limits: &Limits) -> Result<(), Fault> {
    if let Err(e) = game.data.check(data.get()) {
        return Err(Fault(format!("{} produced data that fails its data schema: {e}", game.descriptor().id)));
    }
    let size = data.get().len();
    if size > limits.max_data_bytes {
        return Err(Fault(format!("match data is {size} bytes, over the {} limit", limits.max_data_bytes)));
    }
    Ok(())
}
