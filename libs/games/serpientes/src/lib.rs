//! Serpientes y escaleras (`serpientes`): server dice and whole resolved movements.
//!
//! Owns: the rules of snakes and ladders on the classic 1943 layout, its typed config,
//! data, actions, events, view and context ([`model`]), the board and the die as SDK
//! components ([`board`]: a directed graph whose ladders and snakes are connections), the
//! position invariants of `validate_position`, this game's withdrawal policy and the
//! `default` bot (it rolls).
//!
//! Must not use: anything but `juegoland-sdk` among workspace crates; IO of any kind,
//! clocks, OS randomness, tokio, or `HashMap`/`HashSet` iteration. Every function is
//! synchronous and deterministic; the only random draw is the die, labelled
//! [`ROLL_LABEL`], through the services.
//!
//! Rules in one paragraph: 1–6 seats (`p0` first, then in seat order); every piece starts
//! off the board (square 0) and several may share a square. In phase `playing`
//! (participation `single`) the one actor, in stage `roll`, sends `roll {}`: the server rolls
//! one die, counts the piece forward along the board's `next` edges and takes the ladder or
//! snake leaving the square it counts to (jumps never chain on this layout). Past 100, the
//! config's `finish` decides: `exact` (default) — the piece does not move and the path is
//! empty; `bounce` — it counts up to 100 and back by the excess along the `back` edges, and
//! the square it comes back to applies its snake. Reaching 100 wins (`finished`): the roller
//! wins, every other seat loses. Then the turn passes to the next active seat.
//!
//! Seats: the spec's rooms hold 2–6 players; the module also accepts one seat, the solo race
//! the test oracle measures (expected rolls from the layout's Markov chain).
//!
//! Withdrawal policy: the leaver loses; while two or more seats remain active the race goes
//! on (the turn passes on if the leaver held it); when one remains, it wins (`withdrawal`);
//! a solo player who withdraws loses.
//!
//! Every roll emits one visible `piece.moved {seat, roll, path}` with the whole path
//! resolved: the square counted to (`step`), a `bounce` back from 100, then a `ladder` or
//! `snake`. The view carries the destination, so a client that skips the animation shows
//! the confirmed position. Nothing is hidden: every recipient sees the same view and events.
//!
//! Clock (optional, `config.clock`, see [`juegoland_sdk::clock`]): every turn is timed, per
//! turn or from a per-player budget; the only policy is `defaultMove` — when the deadline
//! fires, the server rolls for the seat (a visible `clock.expired`, then its `piece.moved`).
//! A roll at or after the turn's due instant is refused (`out-of-time`). The view shows the
//! clock (public).
//!
//! Flow counters: `turn` is the number of rolls, `round` the number of times play passed
//! from the last seat back to the first; neither decreases. A finished match has no actors.

pub mod agents;
pub mod board;
pub mod model;

mod validate;

use juegoland_sdk::{
    ActionSpec, ClockError, ClockState, ConflictPolicy, Corrupt, Descriptor, EntropySource, Flow, Game, Lifecycle,
    MatchResult, Offer, Outcome, Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Services, Setup,
    StageSpec, TimeoutPolicy, Trans, Transition,
};

pub use board::{GOAL, LADDERS, SNAKES, components, resolve, serpientes100};
pub use model::{
    Action, ClockExpired, ClockView, Config, Context, Data, Event, Finish, LastRoll, NoPayload, PathStep, PieceMoved,
    Via, View, VisibleEvent,
};

/// The game id.
pub const GAME_ID: &str = "serpientes";
/// The only phase.
pub const PHASE: &str = "playing";
/// The only stage.
pub const STAGE: &str = "roll";
/// The only action type.
pub const ACTION_ROLL: &str = "roll";
/// The only bot profile.
pub const BOT_DEFAULT: &str = "default";
/// The randomness label of the die.
pub const ROLL_LABEL: &str = "die";
/// The most seats.
pub const MAX_SEATS: u32 = 6;
/// Result reason: a piece reached square 100.
pub const REASON_FINISHED: &str = "finished";
/// Result reason: withdrawals left one seat (it wins) or none (the solo player loses).
pub const REASON_WITHDRAWAL: &str = "withdrawal";

/// The Serpientes y escaleras rules, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serpientes;

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

/// The seat to move, if the match is running.
pub fn actor(position: &Pos<Serpientes>) -> Option<&str> {
    if position.is_finished() {
        return None;
    }
    match position.flow.actors.iter().next() {
        Some((seat, stage)) if position.flow.actors.len() == 1 && stage == STAGE => Some(seat),
        _ => None,
    }
}

/// The next active seat after `seat` in seat order (wrapping), and whether it wrapped.
fn next_seat<'a>(position: &'a Pos<Serpientes>, seat: &str) -> Option<(&'a str, bool)> {
    let seats: Vec<&str> = position.participants.keys().map(String::as_str).collect();
    let from = seats.iter().position(|s| *s == seat)?;
    (1..=seats.len()).map(|k| (from + k) % seats.len()).find_map(|i| {
        let s = seats[i];
        position.participants[s].is_active().then_some((s, i <= from))
    })
}

fn completed(position: &Pos<Serpientes>, reason: &str, winner: Option<&str>) -> MatchResult {
    MatchResult::completed(
        reason,
        position
            .participants
            .keys()
            .map(|s| (s.as_str(), if Some(s.as_str()) == winner { Outcome::Win } else { Outcome::Loss })),
    )
}

/// A clock refusal as a rule error: a bookkeeping mismatch is a fault, the rest are refusals.
fn clock_refusal(e: ClockError) -> RuleError {
    match e {
        ClockError::NotRunning(_) => RuleError::fault(format!("clock: {e}")),
        e => illegal(e.reason()),
    }
}

/// Starts the clock of the transition's next turn, or stops it when the match is over. A
/// no-op for an untimed match.
fn retime(config: &Config, t: &mut Trans<Serpientes>, now_ms: i64) {
    let (Some(clock), Some(state)) = (config.clock.as_ref(), t.data.clock.as_mut()) else { return };
    let op = match (&t.result, t.flow.actors.keys().next()) {
        (None, Some(seat)) => state.arm_turn(clock, seat, now_ms),
        _ => state.stop(),
    };
    t.deadlines.push(op);
}

/// `seat` rolls: the die, the whole movement, the turn passed on or the race won. The clock
/// bookkeeping is copied as is (the callers settle and re-arm it).
fn roll_for(
    position: &Pos<Serpientes>,
    seat: &str,
    services: &mut Services<'_>,
) -> Result<Trans<Serpientes>, RuleError> {
    let from = *position.data.positions.get(seat).ok_or_else(|| RuleError::fault("no position"))?;
    let die = board::roll_die(ROLL_LABEL, &mut services.random)?;
    let (path, to) = resolve(from, u32::from(die), position.config.finish)?;
    let mut data = position.data.clone();
    data.positions.insert(seat.to_owned(), to);
    *data.rolls.entry(seat.to_owned()).or_default() += 1;
    data.last_roll = Some(LastRoll { seat: seat.to_owned(), roll: vec![die] });
    let events = vec![Event::PieceMoved { seat: seat.to_owned(), roll: vec![die], path }];
    let turn = position.flow.turn + 1;
    if to == GOAL {
        return Ok(Transition {
            data,
            flow: Flow { turn, ..position.flow.terminal() },
            result: Some(completed(position, REASON_FINISHED, Some(seat))),
            events,
            deadlines: Vec::new(),
        });
    }
    let (next, wrapped) = next_seat(position, seat).ok_or_else(|| RuleError::fault("no active seat"))?;
    let round = position.flow.round + u32::from(wrapped);
    Ok(Transition {
        data,
        flow: Flow::single(PHASE, round, turn, next, STAGE),
        result: None,
        events,
        deadlines: Vec::new(),
    })
}

impl Game for Serpientes {
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
            min_seats: 1,
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

    /// Nothing in Serpientes y escaleras is hidden: spectators see what the seats see, with no
    /// offers.
    fn spectators(&self) -> bool {
        true
    }

    /// A bot takes the seat of a human away for 30 s and hands it back when the human returns.
    fn handover(&self) -> juegoland_sdk::Handover {
        juegoland_sdk::Handover::Bot { after_ms: 30_000, profile: BOT_DEFAULT.to_owned() }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let seats: Vec<&String> = input.participants.keys().collect();
        let expected = juegoland_sdk::seat_ids(seats.len());
        if seats.is_empty()
            || seats.len() > MAX_SEATS as usize
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
        let data = Data {
            positions: seats.iter().map(|s| ((*s).clone(), 0)).collect(),
            rolls: seats.iter().map(|s| ((*s).clone(), 0)).collect(),
            last_roll: None,
            clock: input.config.clock.as_ref().map(|c| ClockState::new(Some(c), seats.iter().map(|s| s.as_str()))),
        };
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
        actor_seat: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let Action::Roll(NoPayload {}) = action;
        if position.is_finished() {
            return Err(illegal("match-finished"));
        }
        if actor(position) != Some(actor_seat) {
            return Err(illegal("not-your-turn"));
        }
        let now_ms = services.now_ms();
        let mut position = std::borrow::Cow::Borrowed(position);
        if let Some(clock) = position.config.clock
            && let Some(state) = position.to_mut().data.clock.as_mut()
        {
            state.settle(&clock, actor_seat, now_ms).map_err(clock_refusal)?;
        }
        let mut t = roll_for(&position, actor_seat, services)?;
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
        let seat = recipient.seat().filter(|s| position.participants.contains_key(*s)).map(str::to_owned);
        let your_turn = seat.is_some() && actor(position) == seat.as_deref();
        Projection {
            view: View {
                positions: position.data.positions.clone(),
                last_roll: position.data.last_roll.clone(),
                finish: position.config.finish,
                clock: position
                    .config
                    .clock
                    .zip(position.data.clock.clone())
                    .map(|(settings, state)| ClockView { settings, state }),
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
                let active: Vec<&str> = position.active_seats().filter(|s| *s != seat).collect();
                let data = position.data.clone();
                let (flow, result) = match active.as_slice() {
                    [] => (position.flow.terminal(), Some(completed(position, REASON_WITHDRAWAL, None))),
                    [last] if position.participants.len() > 1 => {
                        (position.flow.terminal(), Some(completed(position, REASON_WITHDRAWAL, Some(last))))
                    }
                    _ if actor(position) == Some(seat.as_str()) => {
                        let (next, wrapped) =
                            next_seat(position, seat).ok_or_else(|| RuleError::fault("no active seat"))?;
                        let f = &position.flow;
                        (Flow::single(PHASE, f.round + u32::from(wrapped), f.turn, next, STAGE), None)
                    }
                    _ => (position.flow.clone(), None),
                };
                let mut t = Transition { data, flow, result, events: Vec::new(), deadlines: Vec::new() };
                if t.flow.actors != position.flow.actors || t.result.is_some() {
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
