//! La Oca (`oca`): server dice, a directed board with jumps, whole resolved movements.
//!
//! Owns: the rules of the Game of the Goose on its 63-square board, its typed config, data,
//! actions, events, view and context ([`model`]), the board and the die as SDK components
//! ([`board`]: a directed graph whose jumps are connections), the position invariants of
//! `validate_position`, this game's withdrawal policy and the `default` bot (it rolls).
//!
//! Must not use: anything but `juegoland-sdk` among workspace crates; IO of any kind,
//! clocks, OS randomness, tokio, or `HashMap`/`HashSet` iteration. Every function is
//! synchronous and deterministic; the only random draws are the dice, labelled `die0`
//! (and `die1` with two dice), through the services.
//!
//! Rules in one paragraph: 2–4 seats, `p0` first; pieces start off the board (square 0)
//! and may share squares. In phase `playing` (participation `single`) the actor, in stage
//! `roll`, sends `roll {}`: the server throws `config.dice` dice (1 by default, or 2) and
//! counts forward; past 63 the excess counts back from 63. The square counted to applies
//! its effect, once: a goose jumps to the next goose and rolls again (59 → 63 wins); a bridge
//! (6 ↔ 12) and a dice square (26 ↔ 53) jump and roll again; the maze (42) goes to 30 and
//! death (58) to 1; the inn (19) loses one turn and the prison (52) two; the well (31) holds
//! the piece until another falls in and takes its place, and meanwhile the held seat's turns
//! are skipped. With two dice, a first throw of 6+3 goes to 26 and 4+5 to 53 (and rolls
//! again, as a dice square does). Reaching 63 wins (`finished`); every other seat loses.
//! Otherwise the turn passes to the next active seat that is not in the well, each seat
//! with turns to lose losing one as it is passed over ([`Data::turns_lost`] counts down).
//!
//! Withdrawal policy: the leaver loses; while two or more seats remain active the game goes
//! on (the leaver leaves the well; the turn passes on if the leaver held it); when one
//! remains, it wins (`withdrawal`).
//!
//! Every roll emits one visible `piece.moved {seat, roll, path}` with the whole path: the
//! square counted to (`step`; with an excess, `63` then the square counted back to,
//! `bounce`), then the jump (`goose`, `bridge`, `dice`, `maze`, `death`) or the fall into
//! the well (`well`, the same square). Lost turns show in the view's `turnsLost`, the held
//! seat in `well`. Nothing is hidden: every recipient sees the same view and events.
//!
//! Clock (optional, `config.clock`, see [`juegoland_sdk::clock`]): every turn is timed (a
//! roll again starts a new turn for the same seat), per turn or from a per-player budget;
//! the only policy is `defaultMove` — when the deadline fires, the server rolls for the seat
//! (a visible `clock.expired`, then its `piece.moved`). A roll at or after the turn's due
//! instant is refused (`out-of-time`). The view shows the clock (public).
//!
//! Flow counters: `turn` is the number of rolls, `round` the number of times play passed
//! from a seat back to one before it; neither decreases. A finished match has no actors.

pub mod agents;
pub mod board;
pub mod model;

mod validate;

use juegoland_sdk::{
    ActionSpec, ClockError, ClockState, ConflictPolicy, Corrupt, Descriptor, EntropySource, Flow, Game, Lifecycle,
    MatchResult, Offer, Outcome, Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Services, Setup,
    StageSpec, TimeoutPolicy, Trans, Transition,
};

pub use board::{GEESE, GOAL, Movement, components, oca63, resolve};
pub use model::{
    Action, ClockExpired, ClockView, Config, Context, Data, Event, LastRoll, NoPayload, PathStep, PieceMoved, Via,
    View, VisibleEvent,
};

/// The game id.
pub const GAME_ID: &str = "oca";
/// The only phase.
pub const PHASE: &str = "playing";
/// The only stage.
pub const STAGE: &str = "roll";
/// The only action type.
pub const ACTION_ROLL: &str = "roll";
/// The only bot profile.
pub const BOT_DEFAULT: &str = "default";
/// The fewest seats.
pub const MIN_SEATS: u32 = 2;
/// The most seats.
pub const MAX_SEATS: u32 = 4;
/// Result reason: a piece reached square 63.
pub const REASON_FINISHED: &str = "finished";
/// Result reason: withdrawals left one seat, which wins.
pub const REASON_WITHDRAWAL: &str = "withdrawal";

/// The La Oca rules, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Oca;

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

/// The seat to move, if the match is running.
pub fn actor(position: &Pos<Oca>) -> Option<&str> {
    if position.is_finished() {
        return None;
    }
    match position.flow.actors.iter().next() {
        Some((seat, stage)) if position.flow.actors.len() == 1 && stage == STAGE => Some(seat),
        _ => None,
    }
}

/// Passes the turn on from `seat`: the next active seat, in seat order and wrapping, that is
/// not held in the well and has no turn to lose; each seat passed over with turns to lose
/// loses one. Returns the seat and whether play wrapped. `None` when no seat can ever play.
fn pass_turn(position: &Pos<Oca>, data: &mut Data, seat: &str) -> Option<(String, bool)> {
    let seats: Vec<&str> = position.participants.keys().map(String::as_str).collect();
    let from = seats.iter().position(|s| *s == seat)?;
    let playable = |s: &str, data: &Data| position.participants[s].is_active() && data.well.as_deref() != Some(s);
    if !seats.iter().any(|s| playable(s, data)) {
        return None;
    }
    let mut wrapped = false;
    let mut i = from;
    // Each pass over a seat with turns to lose takes one away, so this ends within
    // (1 + the most turns any seat has to lose) laps.
    loop {
        i = (i + 1) % seats.len();
        wrapped |= i <= from;
        let s = seats[i];
        if !playable(s, data) {
            continue;
        }
        let lost = data.turns_lost.get_mut(s)?;
        if *lost > 0 {
            *lost -= 1;
            continue;
        }
        return Some((s.to_owned(), wrapped));
    }
}

fn completed(position: &Pos<Oca>, reason: &str, winner: &str) -> MatchResult {
    MatchResult::completed(
        reason,
        position.participants.keys().map(|s| (s.as_str(), if s == winner { Outcome::Win } else { Outcome::Loss })),
    )
}

/// A clock refusal as a rule error: a bookkeeping mismatch is a fault, the rest are refusals.
fn clock_refusal(e: ClockError) -> RuleError {
    match e {
        ClockError::NotRunning(_) => RuleError::fault(format!("clock: {e}")),
        e => illegal(e.reason()),
    }
}

/// Starts the clock of the transition's next turn (a roll again re-arms the same seat), or
/// stops it when the match is over. A no-op for an untimed match.
fn retime(config: &Config, t: &mut Trans<Oca>, now_ms: i64) {
    let (Some(clock), Some(state)) = (config.clock.as_ref(), t.data.clock.as_mut()) else { return };
    let op = match (&t.result, t.flow.actors.keys().next()) {
        (None, Some(seat)) => state.arm_turn(clock, seat, now_ms),
        _ => state.stop(),
    };
    t.deadlines.push(op);
}

/// `seat` rolls: the dice, the whole movement and its square's effect, then the turn kept
/// (roll again), passed on, or the game won. The clock bookkeeping is copied as is (the
/// callers settle and re-arm it).
fn roll_for(position: &Pos<Oca>, seat: &str, services: &mut Services<'_>) -> Result<Trans<Oca>, RuleError> {
    let mut data = position.data.clone();
    let from = *data.positions.get(seat).ok_or_else(|| RuleError::fault("no position"))?;
    let first_throw = data.rolls.get(seat).copied().unwrap_or(0) == 0;
    let dice = board::roll_dice(position.config.dice, &mut services.random)?;
    let movement = resolve(from, &dice, first_throw)?;
    data.positions.insert(seat.to_owned(), movement.to);
    *data.rolls.entry(seat.to_owned()).or_default() += 1;
    data.last_roll = Some(LastRoll { seat: seat.to_owned(), roll: dice.clone() });
    let lost = board::turns_lost_at(movement.to);
    if lost > 0 {
        data.turns_lost.insert(seat.to_owned(), lost);
    }
    if board::is_well(movement.to) {
        // Whoever was held is released: the newcomer takes its place.
        data.well = Some(seat.to_owned());
    }
    let events = vec![Event::PieceMoved { seat: seat.to_owned(), roll: dice, path: movement.path }];
    let turn = position.flow.turn + 1;
    if movement.to == GOAL {
        return Ok(Transition {
            result: Some(completed(position, REASON_FINISHED, seat)),
            data,
            flow: Flow { turn, ..position.flow.terminal() },
            events,
            deadlines: Vec::new(),
        });
    }
    let (next, wrapped) = if movement.again {
        (seat.to_owned(), false)
    } else {
        pass_turn(position, &mut data, seat).ok_or_else(|| RuleError::fault("no seat can play"))?
    };
    let flow = Flow::single(PHASE, position.flow.round + u32::from(wrapped), turn, &next, STAGE);
    Ok(Transition { data, flow, result: None, events, deadlines: Vec::new() })
}

impl Game for Oca {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            id: GAME_ID.to_owned(),
            version: "1.0.0".to_owned(),
            rules_version: "1.0.0".to_owned(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: MIN_SEATS,
            max_seats: MAX_SEATS,
            phases: vec![PhaseSpec {
                id: PHASE.to_owned(),
                participation: Participation::Single,
                stages: vec![StageSpec { id: STAGE.to_owned(), actions: vec![ACTION_ROLL.to_owned()] }],
            }],
            actions: vec![ActionSpec::of::<NoPayload>(ACTION_ROLL, ConflictPolicy::Match)],
            bots: vec![BOT_DEFAULT.to_owned()],
            agents: Some(agents::virtual_players()),
        }
    }

    /// Nothing in La Oca is hidden: spectators see what the seats see, with no offers.
    fn spectators(&self) -> bool {
        true
    }

    /// A bot takes the seat of a human away for 30 s and hands it back when the human returns.
    fn handover(&self) -> juegoland_sdk::Handover {
        juegoland_sdk::Handover::Bot { after_ms: 30_000, profile: BOT_DEFAULT.to_owned() }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        if !(1..=2).contains(&input.config.dice) {
            return Err(RuleError::illegal(format!("config.dice: {} is not 1 or 2", input.config.dice)));
        }
        let seats: Vec<&String> = input.participants.keys().collect();
        let expected = juegoland_sdk::seat_ids(seats.len());
        if !(MIN_SEATS as usize..=MAX_SEATS as usize).contains(&seats.len())
            || seats.iter().zip(&expected).any(|(a, b)| *a != b)
            || !input.participants.values().all(|p| p.is_active())
        {
            return Err(illegal("invalid-participants"));
        }
        if let Some(clock) = &input.config.clock {
            clock
                .check(&[TimeoutPolicy::DefaultMove])
                .map_err(|e| RuleError::illegal(format!("invalid-clock: {e}")))?;
        }
        let zero = || seats.iter().map(|s| ((*s).clone(), 0)).collect();
        let clock = input.config.clock.as_ref().map(|c| ClockState::new(Some(c), seats.iter().map(|s| s.as_str())));
        let data = Data { positions: zero(), turns_lost: zero(), well: None, rolls: zero(), last_roll: None, clock };
        let mut t = Transition {
            data,
            flow: Flow::single(PHASE, 0, 0, "p0", STAGE),
            result: None,
            events: Vec::new(),
            deadlines: Vec::new(),
        };
        retime(&input.config, &mut t, services.now_ms());
        Ok(t)
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        validate::position(position)
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        seat: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let Action::Roll(NoPayload {}) = action;
        if position.is_finished() {
            return Err(illegal("match-finished"));
        }
        if actor(position) != Some(seat) {
            return Err(illegal("not-your-turn"));
        }
        let now_ms = services.now_ms();
        let mut position = std::borrow::Cow::Borrowed(position);
        if let Some(clock) = position.config.clock
            && let Some(state) = position.to_mut().data.clock.as_mut()
        {
            state.settle(&clock, seat, now_ms).map_err(clock_refusal)?;
        }
        let mut t = roll_for(&position, seat, services)?;
        retime(&position.config, &mut t, now_ms);
        Ok(t)
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        match (actor(position), recipient.seat()) {
            (Some(a), Some(s)) if a == s => vec![Offer::Concrete(Action::roll())],
            _ => Vec::new(),
        }
    }

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        let data = &position.data;
        let seat = recipient.seat().filter(|s| position.participants.contains_key(*s)).map(str::to_owned);
        let your_turn = seat.is_some() && actor(position) == seat.as_deref();
        Projection {
            view: View {
                positions: data.positions.clone(),
                turns_lost: data.turns_lost.clone(),
                well: data.well.clone(),
                last_roll: data.last_roll.clone(),
                dice: position.config.dice,
                clock: position
                    .config
                    .clock
                    .zip(data.clock.clone())
                    .map(|(settings, state)| ClockView { settings, state }),
                turn: actor(position).map(str::to_owned),
            },
            context: Context { seat, your_turn },
            result: position.result.clone(),
        }
    }

    fn project_event(
        &self,
        _before: &Pos<Self>,
        _after: &Pos<Self>,
        event: &Event,
        _recipient: Recipient<'_>,
    ) -> Vec<VisibleEvent> {
        vec![match event.clone() {
            Event::PieceMoved { seat, roll, path } => VisibleEvent::PieceMoved(PieceMoved { seat, roll, path }),
            Event::SeatTimedOut { seat } => VisibleEvent::ClockExpired(ClockExpired { seat }),
        }]
    }

    fn on_lifecycle(
        &self,
        position: &Pos<Self>,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        match event {
            Lifecycle::Withdrawal { seat } => {
                if position.is_finished() {
                    return Err(illegal("match-finished"));
                }
                if !position.participants.contains_key(seat.as_str()) {
                    return Err(illegal("unknown-seat"));
                }
                let mut data = position.data.clone();
                if data.well.as_deref() == Some(seat.as_str()) {
                    data.well = None;
                }
                data.turns_lost.insert(seat.clone(), 0);
                let active: Vec<&str> = position.active_seats().filter(|s| *s != seat).collect();
                if let [last] = active.as_slice() {
                    let mut t = Transition {
                        result: Some(completed(position, REASON_WITHDRAWAL, last)),
                        data,
                        flow: position.flow.terminal(),
                        events: Vec::new(),
                        deadlines: Vec::new(),
                    };
                    retime(&position.config, &mut t, services.now_ms());
                    return Ok(t);
                }
                let flow = if actor(position) == Some(seat.as_str()) {
                    let (next, wrapped) =
                        pass_turn(position, &mut data, seat).ok_or_else(|| RuleError::fault("no seat can play"))?;
                    let f = &position.flow;
                    Flow::single(PHASE, f.round + u32::from(wrapped), f.turn, &next, STAGE)
                } else {
                    position.flow.clone()
                };
                let mut t = Transition { data, flow, result: None, events: Vec::new(), deadlines: Vec::new() };
                if t.flow.actors != position.flow.actors {
                    retime(&position.config, &mut t, services.now_ms());
                }
                Ok(t)
            }
            Lifecycle::DeadlineExpired { id, payload } => {
                let (Some(_), Some(state)) = (position.config.clock, position.data.clock.as_ref()) else {
                    return Err(illegal("no-deadlines"));
                };
                if position.is_finished() {
                    return Err(illegal("match-finished"));
                }
                let mut state = state.clone();
                let seat = state.expire(id, payload).map_err(clock_refusal)?;
                let seat = match (seat, actor(position)) {
                    (Some(s), Some(a)) if s == a => s,
                    _ => return Err(RuleError::fault("the clock ran for a seat that is not the one to move")),
                };
                let mut expired = position.clone();
                expired.data.clock = Some(state);
                let mut t = roll_for(&expired, &seat, services)?;
                t.events.insert(0, Event::SeatTimedOut { seat });
                retime(&position.config, &mut t, services.now_ms());
                Ok(t)
            }
        }
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        _entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        (profile == BOT_DEFAULT && actor(position) == Some(seat)).then(Action::roll)
    }
}

#[cfg(test)]
mod tests;
