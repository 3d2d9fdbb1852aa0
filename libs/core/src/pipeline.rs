//! The command pipeline (steps 3–6 of the engine spec) as pure code: a live match plus an
//! operation in, a [`Decision`] out. The caller (the match actor) does steps 1–2 (limits,
//! authentication, the lock) and 7 (store the commit, then send and dispatch).

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use juegoland_protocol::{CommandEnvelope, Precondition, RejectionCode};
use juegoland_sdk::{
    ConflictPolicy, DeadlineOp, EntropySource, ErasedTransition, Flow, Lifecycle, LoadedPosition, MatchResult,
    Participant, Participation, Randomness, RawJson, Recipient, RuleError, Seat, Services, Trace, seat_ids,
};
use serde_json::Value;
use uuid::Uuid;

use crate::packages::{PinError, PublishedPackages};
use crate::project::{build_snapshot, publications};
use crate::registry::{LoadedGame, Registry};
use crate::state::{
    Commit, Deadline, GameKey, LogEntry, LoggedOp, MatchState, Receipt, ReceiptKey, ReceiptOutcome, SeatHolder,
    StoredMatch,
};

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

/// A reason code: a short machine key (`[a-z0-9][a-z0-9._-]*`, at most 64 bytes).
pub fn valid_reason_code(code: &str) -> bool {
    let mut bytes = code.bytes();
    code.len() <= 64
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CreateError {
    #[error("unknown game")]
    UnknownGame,
    #[error("invalid seats: {0}")]
    InvalidSeats(String),
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    #[error("internal failure: {0}")]
    Fault(Fault),
}

/// A match loaded in memory: its persisted state and the decoded position.
pub struct LiveMatch {
    pub(crate) state: Arc<MatchState>,
    pub(crate) game: Arc<LoadedGame>,
    pub(crate) loaded: LoadedPosition,
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
            _ => Precondition::Match { revision: s.revision },
        }
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
        if let (Some(state), Some(next)) = (&pending.commit.state, pending.next) {
            self.state = Arc::clone(state);
            self.loaded = next;
        }
        pending.commit
    }

    /// The sync snapshot for `recipient` at the current revision (no events).
    pub fn snapshot(
        &self,
        recipient: Recipient<'_>,
        engine: &Engine,
    ) -> Result<juegoland_protocol::ServerMessage, Fault> {
        let snapshot = build_snapshot(&self.game, &self.state, &self.loaded, None, recipient, None)?;
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
        Draws::Replay(recorded) => Randomness::replay(recorded),
    };
    let mut services = Services::new(now_ms, randomness);
    let t = guarded(what, || f(&mut services))?;
    let trace = services.finish()?;
    Ok((t, trace))
}

/// Where an operation's randomness comes from: live entropy when it is decided, its recorded
/// trace when a stored revision is recovered ([`Engine::recover`]).
enum Draws<'a> {
    Live(&'a mut dyn EntropySource),
    Replay(&'a [juegoland_sdk::TraceEntry]),
}

impl Draws<'_> {
    /// Whether the operation is decided now (and publishes), not recovered.
    fn live(&self) -> bool {
        matches!(self, Draws::Live(_))
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
        Ok(LiveMatch { state: Arc::new(state), game, loaded })
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
            LoggedOp::Command { principal, command_id, precondition, action_type, payload, .. } => {
                let envelope = CommandEnvelope {
                    match_id: state.match_id,
                    command_id: *command_id,
                    precondition: *precondition,
                    action: juegoland_protocol::Action { r#type: action_type.clone(), payload: payload.clone() },
                };
                match self.decide_command(&live, principal, &envelope, None, now_ms, draws) {
                    Decision::Commit(p) if p.commit.state.is_some() => *p,
                    Decision::Fault(f) => return Err(diverged(f.0)),
                    _ => return Err(diverged("the command is not accepted".into())),
                }
            }
            LoggedOp::Lifecycle { event, generation } => {
                let request = match (event, generation) {
                    (Lifecycle::Withdrawal { seat }, None) => LifecycleRequest::Withdraw { seat: seat.clone() },
                    (Lifecycle::DeadlineExpired { id, .. }, Some(generation)) => {
                        LifecycleRequest::FireDeadline { id: id.clone(), generation: *generation }
                    }
                    _ => return Err(diverged("an unknown lifecycle event".into())),
                };
                self.decide_lifecycle(&live, &request, now_ms, draws).map_err(|e| diverged(e.to_string()))?
            }
            LoggedOp::Cancel { reason_code } => {
                let request = LifecycleRequest::Cancel { reason_code: reason_code.clone() };
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
        game: &GameKey,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
        now_ms: i64,
        entropy: &mut dyn EntropySource,
    ) -> Result<(Pending, LiveMatch), CreateError> {
        let loaded_game = self.registry.get(game).ok_or(CreateError::UnknownGame)?.clone();
        let d = loaded_game.descriptor();
        let n = seats.len();
        if n < d.min_seats as usize || n > d.max_seats as usize {
            return Err(CreateError::InvalidSeats(format!("{} needs {}..={} seats", d.id, d.min_seats, d.max_seats)));
        }
        if seats.keys().cloned().collect::<Vec<_>>() != sorted_seat_ids(n) {
            return Err(CreateError::InvalidSeats("seats must be p0..p(n-1)".into()));
        }
        for (seat, holder) in &seats {
            match holder {
                SeatHolder::Principal(p) if p.starts_with(crate::state::BOT_PREFIX) => {
                    return Err(CreateError::InvalidSeats(format!("{seat}: principals may not start with \"bot:\"")));
                }
                SeatHolder::Principal(p) if p.is_empty() => {
                    return Err(CreateError::InvalidSeats(format!("{seat} has an empty principal")));
                }
                SeatHolder::Bot(profile) if !d.bots.contains(profile) => {
                    return Err(CreateError::InvalidSeats(format!("{seat}: {} has no bot {profile:?}", d.id)));
                }
                _ => {}
            }
        }
        let principals: Vec<_> =
            seats.values().filter_map(|h| if let SeatHolder::Principal(p) = h { Some(p) } else { None }).collect();
        if principals.iter().enumerate().any(|(i, p)| principals[..i].contains(p)) {
            return Err(CreateError::InvalidSeats("a principal may hold only one seat".into()));
        }
        if !loaded_game.config.is_valid(config) {
            return Err(CreateError::InvalidConfig("does not match the config schema".into()));
        }
        let config = loaded_game.game.decode_config(config).map_err(|e| CreateError::InvalidConfig(e.to_string()))?;
        let package = crate::packages::pin_for(self.packages.as_deref(), &d.id, &d.version)
            .map_err(|e| CreateError::Fault(Fault(e)))?;
        let participants: BTreeMap<Seat, Participant> =
            seats.keys().map(|s| (s.clone(), Participant::active())).collect();

        let (t, trace) = match run_rules("setup", now_ms, Draws::Live(entropy), |s| {
            loaded_game.game.setup(&config, &participants, s)
        }) {
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
            game: game.clone(),
            game_version: d.version.clone(),
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
        };
        apply_deadline_ops(&mut state, &t.deadlines);
        let log = LogEntry { revision: 0, instant_ms: now_ms, op: LoggedOp::Create { config }, trace, events };
        let state = Arc::new(state);
        let live = LiveMatch { state: Arc::clone(&state), game: loaded_game, loaded: t.next };
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
        self.decide_command(live, principal, envelope, existing, now_ms, Draws::Live(entropy))
    }

    fn decide_command(
        &self,
        live: &LiveMatch,
        principal: &str,
        envelope: &CommandEnvelope,
        existing: Option<Receipt>,
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
        let reject = |code: RejectionCode| {
            Decision::Commit(Box::new(Pending {
                commit: Commit {
                    match_id: state.match_id,
                    expected_revision: Some(state.revision),
                    state: None,
                    receipt: Some(Receipt {
                        key: key.clone(),
                        fingerprint: fingerprint.to_owned(),
                        outcome: ReceiptOutcome::Rejected { code, revision: state.revision },
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
        };
        let bump = match policy {
            ConflictPolicy::Actor => Bump::Actor(seat),
            ConflictPolicy::Match => Bump::Barrier,
        };
        match self.accept_with(live, Accepted { t, trace, op, bump, now_ms, consumed_deadline: None, fresh }, |s| {
            Some(Receipt {
                key: key.clone(),
                fingerprint: fingerprint.to_owned(),
                outcome: ReceiptOutcome::Applied { revision: s.revision },
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
        let (t, trace, op, consumed) = match request {
            LifecycleRequest::Cancel { reason_code } => {
                if !valid_reason_code(reason_code) {
                    return Err(LifecycleError::InvalidReason(reason_code.clone()));
                }
                let mut t = game.game.cancelled(&live.loaded, reason_code);
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
            LifecycleRequest::FireDeadline { id, generation } => {
                let d = state.deadlines.get(id).filter(|d| d.generation == *generation);
                let d = d.ok_or(LifecycleError::StaleDeadline)?;
                let event = Lifecycle::DeadlineExpired { id: id.clone(), payload: d.payload.clone() };
                let (t, trace) = run_lifecycle(game, &live.loaded, &event, now_ms, draws)?;
                (t, trace, LoggedOp::Lifecycle { event, generation: Some(*generation) }, Some(id.clone()))
            }
        };
        let accepted = Accepted { t, trace, op, bump: Bump::Barrier, now_ms, consumed_deadline: consumed, fresh };
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
        };
        apply_counters(&mut state, &before.position.flow, before.position.result.as_ref(), bump);
        if let Some(id) = consumed_deadline {
            state.deadlines.remove(&id);
        }
        apply_deadline_ops(&mut state, &t.deadlines);
        let log = LogEntry { revision: state.revision, instant_ms: now_ms, op, trace, events };
        let publications = if fresh { publications(game, &live.loaded, &state, &t, &self.limits)? } else { Vec::new() };
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
        // A precondition of the wrong kind was not built from an offer of this action.
        _ => Err(RejectionCode::IllegalAction),
    }
}

/// Which counter rule an accepted change falls under.
#[derive(Clone, Copy, Debug)]
enum Bump<'a> {
    /// An `actor` action by this seat (rules 1 and 3).
    Actor(&'a str),
    /// A `match` action or a lifecycle event (rule 2).
    Barrier,
}

/// Applies the counter rules 1–4. `state.revision` is already incremented.
fn apply_counters(state: &mut MatchState, before_flow: &Flow, before_result: Option<&MatchResult>, bump: Bump<'_>) {
    let after = &state.position.flow;
    let structural = after.phase != before_flow.phase
        || after.round != before_flow.round
        || after.turn != before_flow.turn
        || state.position.result.as_ref() != before_result;
    let barrier = match bump {
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
