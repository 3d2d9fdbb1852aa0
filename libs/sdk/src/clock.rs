//! Turn clocks: thinking time measured with the operation's captured instant and enforced
//! with one persisted deadline.
//!
//! A game that offers clocks embeds the config types in its own config and keeps a
//! [`ClockState`] in its data; the helpers here do the bookkeeping and build the
//! [`DeadlineOp`]s the game returns in its transitions. The engine does the rest: it persists
//! the deadline, gives every scheduling a generation (a new `Schedule` for the same id
//! replaces the old one, whose firing is then refused as stale) and calls `on_lifecycle`
//! with [`Lifecycle::DeadlineExpired`](crate::Lifecycle) when the current one falls due.
//!
//! Which config to use:
//! - [`TurnClock`] for turn-based phases: [`ClockMode::PerTurn`] gives every turn the same
//!   allowance (unused time is lost); [`ClockMode::PerPlayer`] gives each seat a budget for
//!   the whole match, charged with the time it actually thinks, plus an optional increment
//!   per move (a Fischer chess clock).
//! - [`PhaseClock`] for a simultaneous phase (every enabled actor prepares at once): one
//!   deadline for the phase, nobody's budget charged.
//! - [`TimeoutPolicy`] says what the rules do when time runs out; each game accepts only the
//!   policies that make sense for it ([`TurnClock::check`] with the supported list).
//!
//! The contract a game follows (the helpers enforce their part of it):
//! 1. When a clocked turn starts — at setup, after a move, after an expiry — call
//!    [`ClockState::arm_turn`] (or [`ClockState::arm_phase`]) with `services.now_ms()` and
//!    return the `Schedule` it gives. Each arming increments [`ClockState::serial`], the
//!    clock's own turn number, which the deadline's payload carries.
//! 2. When the running seat moves, call [`ClockState::settle`] first: it charges the elapsed
//!    time against a per-player budget (then adds the increment) and stops the clock. A move
//!    at or after the due instant is [`ClockError::OutOfTime`]: refuse it (`out-of-time`);
//!    the deadline then applies the game's policy, so the outcome never depends on how late
//!    the scheduler fires. Then arm the next turn, or [`ClockState::stop`] when there is none.
//! 3. When the match finishes (a result, a withdrawal), return [`ClockState::stop`]'s `Cancel`.
//! 4. When the deadline fires, call [`ClockState::expire`] with its id and payload: it checks
//!    the payload names the running turn (same serial, same seat), empties a per-player
//!    budget, stops the clock and says whose time ran out. A payload for an older turn is
//!    [`ClockError::Stale`]: refuse it and the engine commits nothing. (The engine's
//!    generations already refuse a replaced deadline; the serial makes the rules safe on
//!    their own.)
//!
//! Everything in a [`ClockState`] is public information: a game may show the running turn's
//! instants and the remaining budgets to every recipient. The deadline payload
//! ([`ClockPayload`]) is internal and never projected.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::game::DeadlineOp;
use crate::position::Seat;

/// The deadline id the helpers schedule, replace and cancel. A game has one clock deadline
/// at a time: arming a turn (or a phase) replaces whatever clock deadline was pending.
pub const CLOCK_DEADLINE: &str = "clock";

/// The shortest allowance a clock may give (a turn, a phase, a budget): one second.
pub const MIN_CLOCK_MS: u32 = 1_000;
/// The longest per-turn allowance or simultaneous phase: one day.
pub const MAX_TURN_MS: u32 = 86_400_000;
/// The largest per-player budget: seven days.
pub const MAX_BUDGET_MS: u32 = 604_800_000;
/// The largest per-move increment: one hour.
pub const MAX_INCREMENT_MS: u32 = 3_600_000;

/// How thinking time is measured in a turn-based phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum ClockMode {
    /// Every turn has `turnMs`; unused time is lost.
    PerTurn {
        #[schemars(range(min = 1_000, max = 86_400_000))]
        turn_ms: u32,
    },
    /// Each seat has `budgetMs` for the whole match, charged with the time it thinks on its
    /// turns; each move it makes in time adds `incrementMs` (0 when absent).
    PerPlayer {
        #[schemars(range(min = 1_000, max = 604_800_000))]
        budget_ms: u32,
        #[serde(default)]
        #[schemars(range(max = 3_600_000))]
        increment_ms: u32,
    },
}

/// What the rules do when a seat's time runs out. Each game documents which it supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TimeoutPolicy {
    /// The turn passes without a move.
    Skip,
    /// The rules play a deterministic default move for the seat.
    DefaultMove,
    /// The seat loses the match.
    Forfeit,
}

impl TimeoutPolicy {
    /// The policy's JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutPolicy::Skip => "skip",
            TimeoutPolicy::DefaultMove => "defaultMove",
            TimeoutPolicy::Forfeit => "forfeit",
        }
    }
}

impl std::fmt::Display for TimeoutPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A clock for a turn-based phase, as a game embeds it in its config:
/// `{"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "forfeit"}` or
/// `{"mode": {"kind": "perPlayer", "budgetMs": 300000, "incrementMs": 2000}, "policy": "defaultMove"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnClock {
    pub mode: ClockMode,
    pub policy: TimeoutPolicy,
}

/// A deadline for a simultaneous phase: `{"timeoutMs": 120000, "policy": "defaultMove"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseClock {
    #[schemars(range(min = 1_000, max = 86_400_000))]
    pub timeout_ms: u32,
    pub policy: TimeoutPolicy,
}

/// Why a clock config is refused or a clock operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error("{field} must be between {min} and {max} ms, got {value}")]
    OutOfRange { field: &'static str, value: u32, min: u32, max: u32 },
    #[error("timeout policy {policy:?} is not supported here (supported: {supported})")]
    UnsupportedPolicy { policy: &'static str, supported: String },
    #[error("the clock is not running for {0}")]
    NotRunning(String),
    #[error("out of time")]
    OutOfTime,
    #[error("the deadline {0:?} is not a clock deadline")]
    UnknownDeadline(String),
    #[error("invalid clock deadline payload: {0}")]
    InvalidPayload(String),
    #[error("the clock deadline is for an earlier turn")]
    Stale,
}

impl ClockError {
    /// A short machine key for a rule refusal (`RuleError::illegal`).
    pub fn reason(&self) -> &'static str {
        match self {
            ClockError::OutOfRange { .. } | ClockError::UnsupportedPolicy { .. } => "invalid-clock",
            ClockError::NotRunning(_) => "clock-not-running",
            ClockError::OutOfTime => "out-of-time",
            ClockError::UnknownDeadline(_) => "unknown-deadline",
            ClockError::InvalidPayload(_) => "invalid-clock-payload",
            ClockError::Stale => "stale-clock",
        }
    }
}

fn in_range(field: &'static str, value: u32, min: u32, max: u32) -> Result<(), ClockError> {
    if (min..=max).contains(&value) { Ok(()) } else { Err(ClockError::OutOfRange { field, value, min, max }) }
}

fn supported_policy(policy: TimeoutPolicy, supported: &[TimeoutPolicy]) -> Result<(), ClockError> {
    if supported.contains(&policy) {
        return Ok(());
    }
    let list: Vec<&str> = supported.iter().map(|p| p.as_str()).collect();
    Err(ClockError::UnsupportedPolicy { policy: policy.as_str(), supported: list.join(", ") })
}

impl TurnClock {
    /// Checks the durations are within bounds and the policy is one of `supported` (the
    /// policies the calling game implements).
    pub fn check(&self, supported: &[TimeoutPolicy]) -> Result<(), ClockError> {
        match self.mode {
            ClockMode::PerTurn { turn_ms } => in_range("turnMs", turn_ms, MIN_CLOCK_MS, MAX_TURN_MS)?,
            ClockMode::PerPlayer { budget_ms, increment_ms } => {
                in_range("budgetMs", budget_ms, MIN_CLOCK_MS, MAX_BUDGET_MS)?;
                in_range("incrementMs", increment_ms, 0, MAX_INCREMENT_MS)?;
            }
        }
        supported_policy(self.policy, supported)
    }

    /// Whether each seat has its own budget.
    pub fn per_player(&self) -> bool {
        matches!(self.mode, ClockMode::PerPlayer { .. })
    }
}

impl PhaseClock {
    /// Checks the timeout is within bounds and the policy is one of `supported`.
    pub fn check(&self, supported: &[TimeoutPolicy]) -> Result<(), ClockError> {
        in_range("timeoutMs", self.timeout_ms, MIN_CLOCK_MS, MAX_TURN_MS)?;
        supported_policy(self.policy, supported)
    }
}

/// The clock turn that is running: whose time runs, since when, and until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunningTurn {
    /// The seat whose time runs; absent for a simultaneous phase (every enabled actor's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat: Option<Seat>,
    /// The captured instant the turn started at.
    pub started_ms: i64,
    /// The instant time runs out: a move at or after it is out of time.
    pub due_ms: i64,
}

/// The internal payload of a clock deadline: which clock turn it ends. Never projected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClockPayload {
    /// The [`ClockState::serial`] of the turn the deadline was armed for.
    pub serial: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat: Option<Seat>,
}

/// A clock's bookkeeping, kept in the game's data. All of it is public.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClockState {
    /// How many times the clock was armed: the clock's own turn number (independent of
    /// `flow.turn`), carried by each deadline's payload so that a stale firing is told apart.
    pub serial: u32,
    /// The running turn; `null` while the clock is stopped.
    pub running: Option<RunningTurn>,
    /// Per-player mode: each seat's remaining budget, NOT counting the running turn (the
    /// running seat's live remaining time is `dueMs - now`). Empty in per-turn mode.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub remaining_ms: BTreeMap<Seat, i64>,
}

impl ClockState {
    /// A stopped clock; with a per-player `clock`, every seat of `seats` has a full budget.
    pub fn new<'a>(clock: Option<&TurnClock>, seats: impl IntoIterator<Item = &'a str>) -> Self {
        let remaining_ms = match clock.map(|c| c.mode) {
            Some(ClockMode::PerPlayer { budget_ms, .. }) => {
                seats.into_iter().map(|s| (s.to_owned(), i64::from(budget_ms))).collect()
            }
            _ => BTreeMap::new(),
        };
        Self { serial: 0, running: None, remaining_ms }
    }

    /// `seat`'s remaining budget (0 for an unknown seat or in per-turn mode).
    pub fn remaining(&self, seat: &str) -> i64 {
        self.remaining_ms.get(seat).copied().unwrap_or(0)
    }

    fn arm(&mut self, seat: Option<&str>, now_ms: i64, allowance_ms: i64) -> DeadlineOp {
        self.serial = self.serial.wrapping_add(1);
        let due_ms = now_ms.saturating_add(allowance_ms.max(0));
        let seat = seat.map(str::to_owned);
        let payload = ClockPayload { serial: self.serial, seat: seat.clone() };
        self.running = Some(RunningTurn { seat, started_ms: now_ms, due_ms });
        DeadlineOp::Schedule {
            id: CLOCK_DEADLINE.to_owned(),
            due_ms,
            payload: serde_json::to_value(payload).expect("a clock payload always serializes"),
        }
    }

    /// Starts `seat`'s turn at `now_ms` and returns the deadline to schedule (it replaces any
    /// pending clock deadline). The allowance is `turnMs`, or the seat's remaining budget in
    /// per-player mode (possibly 0: a seat out of budget times out at once).
    pub fn arm_turn(&mut self, clock: &TurnClock, seat: &str, now_ms: i64) -> DeadlineOp {
        let allowance = match clock.mode {
            ClockMode::PerTurn { turn_ms } => i64::from(turn_ms),
            ClockMode::PerPlayer { .. } => self.remaining(seat),
        };
        self.arm(Some(seat), now_ms, allowance)
    }

    /// Starts a simultaneous phase of `phase.timeoutMs` at `now_ms`; no budget is charged.
    pub fn arm_phase(&mut self, phase: &PhaseClock, now_ms: i64) -> DeadlineOp {
        self.arm(None, now_ms, i64::from(phase.timeout_ms))
    }

    /// Whether time is still running at `now_ms` (a stopped clock never runs out).
    pub fn in_time(&self, now_ms: i64) -> Result<(), ClockError> {
        match &self.running {
            Some(r) if now_ms >= r.due_ms => Err(ClockError::OutOfTime),
            _ => Ok(()),
        }
    }

    /// Settles `seat`'s running turn at a move made at `now_ms`: charges the elapsed time
    /// (never negative) against its per-player budget, adds the increment and stops the
    /// clock. Returns the time charged. A move at or after the due instant is
    /// [`ClockError::OutOfTime`] and changes nothing.
    pub fn settle(&mut self, clock: &TurnClock, seat: &str, now_ms: i64) -> Result<i64, ClockError> {
        let running = match &self.running {
            Some(r) if r.seat.as_deref() == Some(seat) => r,
            _ => return Err(ClockError::NotRunning(seat.to_owned())),
        };
        self.in_time(now_ms)?;
        let elapsed = now_ms.saturating_sub(running.started_ms).max(0);
        if let ClockMode::PerPlayer { increment_ms, .. } = clock.mode
            && let Some(left) = self.remaining_ms.get_mut(seat)
        {
            *left = (*left - elapsed).max(0) + i64::from(increment_ms);
        }
        self.running = None;
        Ok(elapsed)
    }

    /// Stops the clock and returns the `Cancel` of its deadline (harmless when none is
    /// pending). Budgets are not charged: call [`settle`](Self::settle) first for a move.
    pub fn stop(&mut self) -> DeadlineOp {
        self.running = None;
        DeadlineOp::Cancel { id: CLOCK_DEADLINE.to_owned() }
    }

    /// Decodes a fired deadline `(id, payload)` and checks it ends the running turn, without
    /// changing anything. Returns whose time ran out (`None` for a simultaneous phase).
    pub fn fired(&self, id: &str, payload: &Value) -> Result<Option<Seat>, ClockError> {
        if id != CLOCK_DEADLINE {
            return Err(ClockError::UnknownDeadline(id.to_owned()));
        }
        let payload: ClockPayload =
            serde_json::from_value(payload.clone()).map_err(|e| ClockError::InvalidPayload(e.to_string()))?;
        match &self.running {
            Some(r) if payload.serial == self.serial && payload.seat == r.seat => Ok(payload.seat),
            _ => Err(ClockError::Stale),
        }
    }

    /// Consumes a fired deadline: checks it like [`fired`](Self::fired), empties the
    /// running seat's per-player budget (it used all of it) and stops the clock. Returns
    /// whose time ran out. The engine already removed the consumed deadline; the game arms
    /// the next turn or stops.
    pub fn expire(&mut self, id: &str, payload: &Value) -> Result<Option<Seat>, ClockError> {
        let seat = self.fired(id, payload)?;
        if let Some(left) = seat.as_deref().and_then(|s| self.remaining_ms.get_mut(s)) {
            *left = 0;
        }
        self.running = None;
        Ok(seat)
    }

    /// The invariants of a clock kept for `clock` (`None`: no turn clock, only phases) and
    /// `seats`: budgets exactly for `seats` in per-player mode and never negative, none in
    /// per-turn mode, a running turn that ends after it starts and, for a seat's turn, whose
    /// allowance is `turnMs` or that seat's remaining budget. The game checks who runs.
    pub fn check<'a>(&self, clock: Option<&TurnClock>, seats: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
        let per_player = clock.is_some_and(TurnClock::per_player);
        if per_player {
            let keys: Vec<&str> = self.remaining_ms.keys().map(String::as_str).collect();
            let seats: Vec<&str> = seats.into_iter().collect();
            if keys != seats {
                return Err(format!("clock budgets are for {keys:?}, the seats are {seats:?}"));
            }
            if let Some((seat, ms)) = self.remaining_ms.iter().find(|(_, ms)| **ms < 0) {
                return Err(format!("{seat}'s clock budget is negative ({ms} ms)"));
            }
        } else if !self.remaining_ms.is_empty() {
            return Err("a clock without per-player budgets keeps none".to_owned());
        }
        let Some(r) = &self.running else { return Ok(()) };
        if r.due_ms < r.started_ms {
            return Err(format!("the clock is due at {} ms, before its turn started at {} ms", r.due_ms, r.started_ms));
        }
        if self.serial == 0 {
            return Err("the clock runs but was never armed (serial 0)".to_owned());
        }
        if let (Some(seat), Some(clock)) = (&r.seat, clock) {
            let allowance = match clock.mode {
                ClockMode::PerTurn { turn_ms } => i64::from(turn_ms),
                ClockMode::PerPlayer { .. } => self.remaining(seat),
            };
            if r.due_ms != r.started_ms.saturating_add(allowance) {
                return Err(format!(
                    "{seat}'s turn is due {} ms after it started, not {allowance}",
                    r.due_ms - r.started_ms
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const ALL: [TimeoutPolicy; 3] = [TimeoutPolicy::Skip, TimeoutPolicy::DefaultMove, TimeoutPolicy::Forfeit];

    fn per_turn(turn_ms: u32) -> TurnClock {
        TurnClock { mode: ClockMode::PerTurn { turn_ms }, policy: TimeoutPolicy::Forfeit }
    }

    fn per_player(budget_ms: u32, increment_ms: u32) -> TurnClock {
        TurnClock { mode: ClockMode::PerPlayer { budget_ms, increment_ms }, policy: TimeoutPolicy::Skip }
    }

    fn scheduled(op: &DeadlineOp) -> (i64, Value) {
        match op {
            DeadlineOp::Schedule { id, due_ms, payload } if id == CLOCK_DEADLINE => (*due_ms, payload.clone()),
            other => panic!("expected a clock schedule, got {other:?}"),
        }
    }

    #[test]
    fn config_json_is_camel_case_strict_and_defaults_the_increment() {
        let c: TurnClock =
            serde_json::from_value(json!({"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "forfeit"})).unwrap();
        assert_eq!(c, per_turn(30_000));
        let c: TurnClock =
            serde_json::from_value(json!({"mode": {"kind": "perPlayer", "budgetMs": 60000}, "policy": "defaultMove"}))
                .unwrap();
        assert_eq!(c.mode, ClockMode::PerPlayer { budget_ms: 60_000, increment_ms: 0 });
        assert_eq!(c.policy, TimeoutPolicy::DefaultMove);
        for bad in [
            json!({"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "forfeit", "extra": 1}),
            json!({"mode": {"kind": "perTurn", "turnMs": 30000, "budgetMs": 1}, "policy": "forfeit"}),
            json!({"mode": {"kind": "perTurn", "turnMs": -1}, "policy": "forfeit"}),
            json!({"mode": {"kind": "hourglass"}, "policy": "forfeit"}),
            json!({"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "resign"}),
            json!({"mode": {"kind": "perTurn", "turnMs": 30000}}),
        ] {
            assert!(serde_json::from_value::<TurnClock>(bad.clone()).is_err(), "{bad}");
        }
        let p: PhaseClock = serde_json::from_value(json!({"timeoutMs": 5000, "policy": "skip"})).unwrap();
        assert_eq!(p, PhaseClock { timeout_ms: 5_000, policy: TimeoutPolicy::Skip });
        let schema = schemars::schema_for!(TurnClock).to_value();
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn check_bounds_durations_and_policies_with_clear_messages() {
        assert_eq!(per_turn(30_000).check(&ALL), Ok(()));
        assert_eq!(per_player(MAX_BUDGET_MS, MAX_INCREMENT_MS).check(&ALL), Ok(()));
        assert_eq!(per_player(MIN_CLOCK_MS, 0).check(&ALL), Ok(()));
        let e = per_turn(999).check(&ALL).unwrap_err();
        assert_eq!(e.to_string(), "turnMs must be between 1000 and 86400000 ms, got 999");
        assert_eq!(e.reason(), "invalid-clock");
        assert!(per_turn(MAX_TURN_MS + 1).check(&ALL).is_err());
        assert!(per_turn(0).check(&ALL).is_err());
        assert!(per_player(MAX_BUDGET_MS + 1, 0).check(&ALL).is_err());
        let e = per_player(60_000, MAX_INCREMENT_MS + 1).check(&ALL).unwrap_err();
        assert!(e.to_string().starts_with("incrementMs must be between 0 and 3600000 ms"), "{e}");
        let e = per_player(60_000, 0).check(&[TimeoutPolicy::Forfeit, TimeoutPolicy::DefaultMove]).unwrap_err();
        assert_eq!(e.to_string(), "timeout policy \"skip\" is not supported here (supported: forfeit, defaultMove)");
        assert!(PhaseClock { timeout_ms: 500, policy: TimeoutPolicy::Forfeit }.check(&ALL).is_err());
        assert!(
            PhaseClock { timeout_ms: 5_000, policy: TimeoutPolicy::Skip }.check(&[TimeoutPolicy::Forfeit]).is_err()
        );
    }

    #[test]
    fn a_per_turn_clock_arms_settles_and_expires() {
        let clock = per_turn(30_000);
        let mut s = ClockState::new(Some(&clock), ["p0", "p1"]);
        assert!(s.remaining_ms.is_empty());
        let (due, payload) = scheduled(&s.arm_turn(&clock, "p0", 1_000));
        assert_eq!(due, 31_000);
        assert_eq!(payload, json!({"serial": 1, "seat": "p0"}));
        assert_eq!(s.running, Some(RunningTurn { seat: Some("p0".into()), started_ms: 1_000, due_ms: 31_000 }));
        s.check(Some(&clock), ["p0", "p1"]).unwrap();

        // Only the running seat settles, and only in time.
        assert_eq!(s.settle(&clock, "p1", 2_000), Err(ClockError::NotRunning("p1".into())));
        let mut late = s.clone();
        assert_eq!(late.settle(&clock, "p0", 31_000), Err(ClockError::OutOfTime));
        assert_eq!(late, s, "a refused settle changes nothing");
        assert_eq!(s.settle(&clock, "p0", 11_000), Ok(10_000));
        assert_eq!(s.running, None);
        assert_eq!(s.in_time(i64::MAX), Ok(()));

        // The next turn: a new serial; the old payload is stale.
        let (due, fresh) = scheduled(&s.arm_turn(&clock, "p1", 11_000));
        assert_eq!(due, 41_000);
        assert_eq!(s.fired(CLOCK_DEADLINE, &payload), Err(ClockError::Stale));
        assert_eq!(s.fired("other", &fresh), Err(ClockError::UnknownDeadline("other".into())));
        assert!(matches!(s.fired(CLOCK_DEADLINE, &json!({"serial": "x"})), Err(ClockError::InvalidPayload(_))));
        assert_eq!(s.fired(CLOCK_DEADLINE, &fresh), Ok(Some("p1".into())));
        assert_eq!(s.expire(CLOCK_DEADLINE, &fresh), Ok(Some("p1".into())));
        assert_eq!(s.running, None);
        // Consumed: the same payload again is stale.
        assert_eq!(s.expire(CLOCK_DEADLINE, &fresh), Err(ClockError::Stale));
        assert_eq!(s.stop(), DeadlineOp::Cancel { id: CLOCK_DEADLINE.into() });
    }

    #[test]
    fn a_per_player_clock_charges_budgets_and_adds_increments() {
        let clock = per_player(60_000, 2_000);
        let mut s = ClockState::new(Some(&clock), ["p0", "p1"]);
        assert_eq!(s.remaining_ms, BTreeMap::from([("p0".into(), 60_000), ("p1".into(), 60_000)]));
        let (due, _) = scheduled(&s.arm_turn(&clock, "p0", 0));
        assert_eq!(due, 60_000);
        assert_eq!(s.settle(&clock, "p0", 15_000), Ok(15_000));
        assert_eq!(s.remaining("p0"), 47_000);
        let (due, _) = scheduled(&s.arm_turn(&clock, "p1", 15_000));
        assert_eq!(due, 75_000);
        s.check(Some(&clock), ["p0", "p1"]).unwrap();
        let (_, payload) = scheduled(&s.arm_turn(&clock, "p0", 20_000));
        assert_eq!(s.remaining("p1"), 60_000, "re-arming does not charge");
        assert_eq!(s.expire(CLOCK_DEADLINE, &payload), Ok(Some("p0".into())));
        assert_eq!(s.remaining("p0"), 0, "the seat whose time ran out used all of it");
        // A seat out of budget times out at once.
        let (due, _) = scheduled(&s.arm_turn(&clock, "p0", 90_000));
        assert_eq!(due, 90_000);
        assert_eq!(s.in_time(90_000), Err(ClockError::OutOfTime));
    }

    #[test]
    fn a_phase_clock_names_no_seat() {
        let mut s = ClockState::new(None, ["p0", "p1"]);
        let phase = PhaseClock { timeout_ms: 5_000, policy: TimeoutPolicy::DefaultMove };
        let (due, payload) = scheduled(&s.arm_phase(&phase, 100));
        assert_eq!((due, payload.clone()), (5_100, json!({"serial": 1})));
        s.check(None, ["p0", "p1"]).unwrap();
        assert_eq!(s.in_time(5_099), Ok(()));
        assert_eq!(s.in_time(5_100), Err(ClockError::OutOfTime));
        assert_eq!(s.settle(&per_turn(1_000), "p0", 200), Err(ClockError::NotRunning("p0".into())));
        assert_eq!(s.expire(CLOCK_DEADLINE, &payload), Ok(None));
        // A payload naming a seat does not end a phase.
        s.arm_phase(&phase, 6_000);
        assert_eq!(s.fired(CLOCK_DEADLINE, &json!({"serial": 2, "seat": "p0"})), Err(ClockError::Stale));
    }

    #[test]
    fn check_catches_incoherent_bookkeeping() {
        let clock = per_player(60_000, 0);
        let good = {
            let mut s = ClockState::new(Some(&clock), ["p0", "p1"]);
            s.arm_turn(&clock, "p1", 10);
            s
        };
        good.check(Some(&clock), ["p0", "p1"]).unwrap();
        let bad = |f: &dyn Fn(&mut ClockState), needle: &str| {
            let mut s = good.clone();
            f(&mut s);
            let e = s.check(Some(&clock), ["p0", "p1"]).unwrap_err();
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
        };
        bad(&|s| *s.remaining_ms.get_mut("p0").unwrap() = -1, "negative");
        bad(
            &|s| {
                s.remaining_ms.remove("p0");
            },
            "budgets are for",
        );
        bad(&|s| s.running.as_mut().unwrap().due_ms = 5, "before its turn started");
        bad(&|s| s.running.as_mut().unwrap().due_ms += 1, "p1's turn is due 60001 ms after it started, not 60000");
        bad(&|s| s.serial = 0, "serial");
        let e = good.check(Some(&per_turn(1_000)), ["p0", "p1"]).unwrap_err();
        assert!(e.contains("keeps none"), "{e}");
    }

    /// One step of a random per-player match: the mover thinks `think` ms, and either moves
    /// (if in time) or lets the deadline fire.
    #[derive(Clone, Debug)]
    enum Step {
        Move { think: i64 },
        Timeout { late: i64 },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (0i64..90_000).prop_map(|think| Step::Move { think }),
            1 => (0i64..5_000).prop_map(|late| Step::Timeout { late }),
        ]
    }

    proptest! {
        #[test]
        fn per_player_budgets_are_charged_exactly_and_never_negative(
            budget in 1_000u32..120_000,
            increment in 0u32..10_000,
            steps in prop::collection::vec(step(), 1..60),
        ) {
            let clock = per_player(budget, increment);
            let seats = ["p0", "p1"];
            let mut s = ClockState::new(Some(&clock), seats);
            let mut now = 1_000i64;
            let mut charged = [0i64; 2];
            let mut increments = [0i64; 2];
            let mut timeouts = [false; 2];
            for (i, st) in steps.iter().enumerate() {
                let seat = seats[i % 2];
                let before = s.remaining(seat);
                let (due, payload) = scheduled(&s.arm_turn(&clock, seat, now));
                prop_assert_eq!(due, now + before);
                s.check(Some(&clock), seats).map_err(TestCaseError::fail)?;
                match *st {
                    Step::Move { think } => {
                        let at = now + think;
                        match s.settle(&clock, seat, at) {
                            Ok(c) => {
                                prop_assert!(think < before);
                                prop_assert_eq!(c, think, "charged exactly the elapsed time");
                                prop_assert_eq!(s.remaining(seat), before - think + i64::from(increment));
                                charged[i % 2] += think;
                                increments[i % 2] += i64::from(increment);
                            }
                            Err(e) => {
                                prop_assert_eq!(e, ClockError::OutOfTime);
                                prop_assert!(think >= before);
                                // The deadline fires instead.
                                prop_assert_eq!(s.expire(CLOCK_DEADLINE, &payload), Ok(Some(seat.to_owned())));
                                charged[i % 2] += before;
                                timeouts[i % 2] = true;
                            }
                        }
                        now = at;
                    }
                    Step::Timeout { late } => {
                        now = due + late;
                        prop_assert_eq!(s.expire(CLOCK_DEADLINE, &payload), Ok(Some(seat.to_owned())));
                        prop_assert_eq!(s.remaining(seat), 0);
                        charged[i % 2] += before;
                        timeouts[i % 2] = true;
                    }
                }
                prop_assert!(s.running.is_none());
                for seat in seats {
                    prop_assert!(s.remaining(seat) >= 0);
                }
                s.check(Some(&clock), seats).map_err(TestCaseError::fail)?;
            }
            // Without a timeout, a seat's budget is exactly the start, minus what it thought,
            // plus its increments; a timeout empties it, so only the later moves count.
            for (k, seat) in seats.iter().enumerate() {
                if !timeouts[k] {
                    prop_assert_eq!(s.remaining(seat), i64::from(budget) - charged[k] + increments[k]);
                }
            }
        }
    }
}
