//! Conecta 4 (`conecta4`): the minimal public loop of the Juegoland engine.
//!
//! Owns: the rules of connect-N on a configurable grid (6 × 7, connect 4 by default), its
//! typed config, data, actions, events, view and context ([`model`]), the position
//! invariants checked by `validate_position`, this game's withdrawal and timeout policies
//! and the `default` bot (a deterministic negamax search).
//!
//! Must not use: anything but `juegoland-sdk` among workspace crates; IO of any kind,
//! clocks, OS randomness, tokio, or `HashMap`/`HashSet` iteration. Every function is
//! synchronous and deterministic; this game draws no randomness, and schedules a deadline
//! only for its optional turn clock.
//!
//! Rules in one paragraph: `p0` moves first and the seats alternate. In phase `playing`
//! (participation `single`) the one enabled actor, in stage `move`, sends
//! `drop { column }`; the disc lands in the lowest free row. A run of `connect` discs
//! horizontally, vertically or diagonally wins (`connect`); a full board without one is a
//! draw (`board-full`). Everything is public: every seat and every spectator sees the same
//! view and the same `disc.dropped` events.
//!
//! Flow counters: `turn` is the number of discs dropped and `round` the number of completed
//! pairs of moves (`turn / 2`); neither ever decreases. A finished match has no actors.
//!
//! Clock (optional, `config.clock`, see [`juegoland_sdk::clock`]): every turn is timed,
//! per turn or from a per-player budget. A drop at or after the turn's due instant is
//! refused (`out-of-time`); when the clock deadline fires, the policy applies: `forfeit`
//! (the seat to move loses, the rival wins, `timeout`) or `defaultMove` (the rules drop the
//! seat's disc in the centre-most column that is not full, leftmost on a tie; it may win or
//! fill the board like any drop). `skip` is refused at setup: Conecta 4 has no passes. The
//! view shows the clock (public), and the visible `clock.expired` event precedes the
//! default disc or the result.

pub mod agents;
pub mod model;

mod board;
mod bot;
mod v1_1;
mod validate;

use juegoland_sdk::{
    ActionSpec, ClockError, ClockState, ConflictPolicy, Corrupt, Descriptor, EntropySource, Flow, Game, Lifecycle,
    MatchResult, Offer, Outcome, Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Services, Setup,
    StageSpec, TimeoutPolicy, Trans, Transition,
};

pub use bot::{MAX_DEPTH, MIN_DEPTH};
pub use model::{
    Action, CLOCK_POLICIES, Cell, ClockExpired, ClockView, Config, Context, Data, Disc, DiscDropped, DropPayload,
    Event, Grid, MAX_COLUMNS, MAX_ROWS, MIN_CONNECT, MIN_SIDE, Move, View, VisibleEvent,
};
pub use v1_1::{Conecta4V11, REASON_CENTRE_OPENING, VERSION_1_1};

/// The game id.
pub const GAME_ID: &str = "conecta4";
/// The only phase.
pub const PHASE: &str = "playing";
/// The only stage.
pub const STAGE: &str = "move";
/// The only action type.
pub const ACTION_DROP: &str = "drop";
/// The only bot profile.
pub const BOT_DEFAULT: &str = "default";
/// Result reason: a seat completed a line.
pub const REASON_CONNECT: &str = "connect";
/// Result reason: the board filled up without a line (a draw).
pub const REASON_BOARD_FULL: &str = "board-full";
/// Result reason: a seat withdrew; it loses and its rival wins.
pub const REASON_WITHDRAWAL: &str = "withdrawal";
/// Result reason: the seat to move ran out of time under the `forfeit` policy; it loses and
/// its rival wins.
pub const REASON_TIMEOUT: &str = "timeout";

/// The Conecta 4 rules, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conecta4;

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

/// A clock refusal as a rule error: a bookkeeping mismatch is a fault, the rest are refusals.
fn clock_refusal(e: ClockError) -> RuleError {
    match e {
        ClockError::NotRunning(_) => RuleError::fault(format!("clock: {e}")),
        e => illegal(e.reason()),
    }
}

/// The column the `defaultMove` policy drops in: the centre-most column that is not full,
/// the leftmost of two equally central ones. `None` on a full board.
pub fn default_column(config: &Config, grid: &Grid) -> Option<u8> {
    (0..config.columns)
        .filter(|c| board::height(grid, usize::from(*c)) < usize::from(config.rows))
        .min_by_key(|c| ((2 * i16::from(*c) - i16::from(config.columns) + 1).abs(), *c))
}

/// Starts the clock of the transition's next turn, or stops it when the match is over. A
/// no-op for an untimed match.
fn retime(config: &Config, t: &mut Trans<Conecta4>, now_ms: i64) {
    let (Some(clock), Some(state)) = (config.clock.as_ref(), t.data.clock.as_mut()) else { return };
    let op = match (&t.result, t.flow.actors.keys().next()) {
        (None, Some(seat)) => state.arm_turn(clock, seat, now_ms),
        _ => state.stop(),
    };
    t.deadlines.push(op);
}

/// The flow after `moves` discs: the next seat to move, or no actors once `finished`.
fn flow_after(moves: u32, finished: bool) -> Flow {
    let flow = Flow::single(PHASE, moves / 2, moves, Disc::to_move_after(moves).seat(), STAGE);
    if finished { flow.terminal() } else { flow }
}

/// The seat whose turn it is in an active, well-formed position.
fn enabled(position: &Pos<Conecta4>) -> Option<Disc> {
    if position.is_finished() {
        return None;
    }
    match position.flow.actors.iter().collect::<Vec<_>>()[..] {
        [(seat, stage)] if stage == STAGE => Disc::from_seat(seat),
        _ => None,
    }
}

/// Drops `seat`'s disc in `column`: the transition without any clock change (the clock
/// bookkeeping is copied as is).
fn drop_disc(config: &Config, data: &Data, seat: Disc, column: u8) -> Result<Trans<Conecta4>, RuleError> {
    board::shape(config, &data.grid).map_err(RuleError::fault)?;
    if seat != Disc::to_move_after(data.move_count) {
        return Err(RuleError::fault("the enabled actor disagrees with the move count"));
    }
    let c = usize::from(column);
    if column >= config.columns {
        return Err(illegal("column-out-of-range"));
    }
    let r = board::height(&data.grid, c);
    if r >= usize::from(config.rows) {
        return Err(illegal("column-full"));
    }

    let mut grid = data.grid.clone();
    grid[r][c] = Some(seat);
    let row = r as u8;
    let line = board::line_through(&grid, r, c, usize::from(config.connect));
    let moves = data.move_count + 1;
    let result = if line.is_some() {
        Some(MatchResult::completed(
            REASON_CONNECT,
            [(seat.seat(), Outcome::Win), (seat.other().seat(), Outcome::Loss)],
        ))
    } else if moves == config.cells() {
        Some(MatchResult::completed(REASON_BOARD_FULL, [("p0", Outcome::Draw), ("p1", Outcome::Draw)]))
    } else {
        None
    };
    Ok(Transition {
        flow: flow_after(moves, result.is_some()),
        result,
        events: vec![Event::DiscDropped { row, column, seat, line: line.clone() }],
        data: Data {
            grid,
            move_count: moves,
            last_move: Some(Move { row, column, seat }),
            line,
            clock: data.clock.clone(),
        },
        deadlines: Vec::new(),
    })
}

/// A fired clock deadline: checks it ends the running turn, then applies the policy;
/// `default_move` chooses the column of a `defaultMove` (the rules version's choice).
pub(crate) fn timeout(
    position: &Pos<Conecta4>,
    id: &str,
    payload: &serde_json::Value,
    now_ms: i64,
    default_move: impl Fn(&Config, &Data) -> Option<u8>,
) -> Result<Trans<Conecta4>, RuleError> {
    let config = &position.config;
    let (Some(clock), Some(state)) = (config.clock.as_ref(), position.data.clock.as_ref()) else {
        return Err(illegal("no-deadlines"));
    };
    if position.is_finished() {
        return Err(illegal("match-finished"));
    }
    let mut data = position.data.clone();
    let mut state = state.clone();
    let seat = state.expire(id, payload).map_err(clock_refusal)?;
    let seat = match (seat.as_deref().and_then(Disc::from_seat), enabled(position)) {
        (Some(s), Some(e)) if s == e => s,
        _ => return Err(RuleError::fault("the clock ran for a seat that is not the one to move")),
    };
    data.clock = Some(state);
    let timed_out = Event::SeatTimedOut { seat };
    let mut t = match clock.policy {
        TimeoutPolicy::Forfeit => Transition {
            data,
            flow: position.flow.terminal(),
            result: Some(MatchResult::completed(
                REASON_TIMEOUT,
                [(seat.seat(), Outcome::Loss), (seat.other().seat(), Outcome::Win)],
            )),
            events: vec![timed_out],
            deadlines: Vec::new(),
        },
        TimeoutPolicy::DefaultMove => {
            let column =
                default_move(config, &data).ok_or_else(|| RuleError::fault("an active match on a full board"))?;
            let mut t = drop_disc(config, &data, seat, column)?;
            t.events.insert(0, timed_out);
            t
        }
        TimeoutPolicy::Skip => return Err(RuleError::fault("conecta4 has no skip policy")),
    };
    retime(config, &mut t, now_ms);
    Ok(t)
}

impl Game for Conecta4 {
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
            min_seats: 2,
            max_seats: 2,
            phases: vec![PhaseSpec {
                id: PHASE.to_owned(),
                participation: Participation::Single,
                stages: vec![StageSpec { id: STAGE.to_owned(), actions: vec![ACTION_DROP.to_owned()] }],
            }],
            actions: vec![ActionSpec::of::<DropPayload>(ACTION_DROP, ConflictPolicy::Match)],
            bots: vec![BOT_DEFAULT.to_owned()],
            agents: Some(agents::virtual_players()),
        }
    }

    /// Everything is public: spectators see the whole board, as the seats do.
    fn spectators(&self) -> bool {
        true
    }

    /// A bot takes the seat of a human away for 30 s and hands it back when the human returns.
    fn handover(&self) -> juegoland_sdk::Handover {
        juegoland_sdk::Handover::Bot { after_ms: 30_000, profile: BOT_DEFAULT.to_owned() }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let config = &input.config;
        config.check_board().map_err(RuleError::illegal)?;
        config.check_clock().map_err(|e| RuleError::illegal(format!("invalid-clock: {e}")))?;
        let seats: Vec<&str> = input.participants.keys().map(String::as_str).collect();
        if seats != ["p0", "p1"] || !input.participants.values().all(|p| p.is_active()) {
            return Err(illegal("invalid-participants"));
        }
        let clock = config.clock.as_ref().map(|c| ClockState::new(Some(c), seats));
        let mut t = Transition {
            data: Data { grid: board::empty(config), move_count: 0, last_move: None, line: None, clock },
            flow: flow_after(0, false),
            result: None,
            events: Vec::new(),
            deadlines: Vec::new(),
        };
        retime(config, &mut t, services.now_ms());
        Ok(t)
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        validate::position(position)
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let Action::Drop(DropPayload { column }) = *action;
        if position.is_finished() {
            return Err(illegal("match-finished"));
        }
        let seat = match enabled(position) {
            Some(seat) if seat.seat() == actor => seat,
            _ => return Err(illegal("not-your-turn")),
        };
        let config = &position.config;
        let mut t = drop_disc(config, &position.data, seat, column)?;
        let now_ms = services.now_ms();
        if let (Some(clock), Some(state)) = (config.clock.as_ref(), t.data.clock.as_mut()) {
            state.settle(clock, seat.seat(), now_ms).map_err(clock_refusal)?;
        }
        retime(config, &mut t, now_ms);
        Ok(t)
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let Some(seat) = enabled(position) else { return Vec::new() };
        if recipient.seat() != Some(seat.seat()) || board::shape(&position.config, &position.data.grid).is_err() {
            return Vec::new();
        }
        (0..position.config.columns)
            .filter(|c| board::height(&position.data.grid, usize::from(*c)) < usize::from(position.config.rows))
            .map(|c| Offer::Concrete(Action::drop(c)))
            .collect()
    }

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        let (config, data) = (&position.config, &position.data);
        let seat = recipient.seat().and_then(Disc::from_seat);
        Projection {
            view: View {
                rows: config.rows,
                columns: config.columns,
                connect: config.connect,
                grid: data.grid.clone(),
                move_count: data.move_count,
                last_move: data.last_move,
                line: data.line.clone(),
                clock: config.clock.zip(data.clock.as_ref()).map(|(settings, state)| ClockView {
                    settings,
                    // A cancelled match keeps its last bookkeeping; no clock runs after the end.
                    running: state.running.clone().filter(|_| !position.is_finished()),
                    remaining_ms: state.remaining_ms.clone(),
                }),
            },
            context: Context { seat, your_turn: seat.is_some() && enabled(position) == seat },
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
        // Everything is public: every recipient sees the same event.
        match event {
            Event::DiscDropped { row, column, seat, line } => vec![VisibleEvent::DiscDropped(DiscDropped {
                row: *row,
                column: *column,
                seat: *seat,
                line: line.clone(),
            })],
            Event::SeatTimedOut { seat } => vec![VisibleEvent::ClockExpired(ClockExpired { seat: *seat })],
        }
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
                let leaver = Disc::from_seat(seat)
                    .filter(|_| position.participants.contains_key(seat.as_str()))
                    .ok_or_else(|| illegal("unknown-seat"))?;
                let result = MatchResult::completed(
                    REASON_WITHDRAWAL,
                    [(leaver.seat(), Outcome::Loss), (leaver.other().seat(), Outcome::Win)],
                );
                let mut t = Transition {
                    data: position.data.clone(),
                    flow: position.flow.terminal(),
                    result: Some(result),
                    events: Vec::new(),
                    deadlines: Vec::new(),
                };
                retime(&position.config, &mut t, services.now_ms());
                Ok(t)
            }
            Lifecycle::DeadlineExpired { id, payload } => {
                timeout(position, id, payload, services.now_ms(), |config, data| default_column(config, &data.grid))
            }
        }
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        let disc = enabled(position).filter(|d| d.seat() == seat && profile == BOT_DEFAULT)?;
        if position.config.check().is_err() || board::shape(&position.config, &position.data.grid).is_err() {
            return None;
        }
        bot::choose(&position.config, &position.data.grid, disc, entropy).map(Action::drop)
    }
}

#[cfg(test)]
mod tests;
