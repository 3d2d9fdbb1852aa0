//! Hundido (`hundido`, battleship): hidden fleets and independent simultaneous placement.
//!
//! Owns: the rules of battleship on a configurable board (10 × 10 and the classic fleet by
//! default), its typed config, data, actions, events, view and context ([`model`]), the fleet
//! geometry ([`fleet`]: bounds, overlap, the adjacency policy, fleet completion), the
//! position invariants checked by `validate_position`, the projections that keep each
//! fleet secret, this game's withdrawal and timeout policies and the `default` bot (random
//! fleet, then parity hunting and line targeting).
//!
//! Must not use: anything but `juegoland-sdk` among workspace crates; IO of any kind,
//! clocks, OS randomness, tokio, or `HashMap`/`HashSet` iteration. Every function is
//! synchronous and deterministic; the rules draw randomness only to auto-place a fleet on a
//! placement timeout, and schedule a deadline only for the optional clocks (the bot's
//! choices come from the entropy it is given).
//!
//! Rules in one paragraph: phase `placement` (participation `multiple`) enables both seats
//! in stage `arrange`, where `placeShip` places or moves one of the seat's own ships and
//! `ready` (only with the whole fleet placed) moves the seat to stage `waiting`. Both use
//! policy `actor`: each changes only its author's fleet, readiness and own stage, so
//! placements of different seats commute (proved by the confluence tests), except the
//! second `ready`, a barrier that starts phase `battle` (participation `single`, stage
//! `fire`). There `p0` fires first; `fire { row, column }` (policy `match`) must be on the
//! board and not fired at before by the same seat. Water passes the turn; a hit or sinking
//! passes it too unless `keepTurnOnHit`. Sinking the rival's last ship wins
//! (`fleet-destroyed`). A withdrawal during placement cancels the match with no winner
//! (`withdrawal-in-placement`); during battle the leaver loses and the rival wins
//! (`withdrawal`).
//!
//! Privacy: a seat sees its own fleet and the hits it received, and about the rival only
//! what is public: readiness, how many ships are placed, every shot with its outcome, and
//! sunk ships with their cells. Spectators see exactly the public part. Placement events
//! carry no coordinates for anyone; a `hit` never names the ship it hit.
//!
//! Flow counters: in placement, round and turn stay 0 (so a placement never changes
//! anything but its author's own stage). In battle, `turn` is the number of shots fired
//! plus the turns skipped on a timeout, and `round` the number of times the turn passed to
//! the other seat; neither ever decreases. A finished match has no actors.
//!
//! Clocks (optional, `config.clock`, see [`juegoland_sdk::clock`]): a placement deadline
//! for the simultaneous phase and a battle turn clock (per turn or per player), each
//! optional. An action at or after the running deadline is refused (`out-of-time`); when
//! the deadline fires, the policy applies. Placement: `defaultMove` completes every unready
//! fleet (the ships it placed stay; the missing ones go to a random valid layout drawn
//! with labelled randomness, so an idle seat's fleet is not predictable) and readies it,
//! which starts the battle; `forfeit` makes the one unready seat lose (`timeout`), or
//! cancels the match when neither is ready (`abandoned`). Battle: `skip` passes the turn
//! (two timeouts in a row, one per seat, cancel the match: `abandoned`), `defaultMove`
//! fires at the shooter's first untargeted cell in reading order, `forfeit` makes the
//! shooter lose (`timeout`). The visible `clock.expired` event names the seat; views show
//! the running deadline and per-player budgets (public); deadline payloads are internal.

pub mod agents;
pub mod fleet;
pub mod model;

mod bot;
mod clock;
mod validate;
mod view;

use juegoland_sdk::{
    ActionSpec, ClockState, ConflictPolicy, Corrupt, Descriptor, EntropySource, Flow, Game, Lifecycle, MatchResult,
    Offer, Outcome, Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Services, Setup, StageSpec, Trans,
    Transition,
};
use serde_json::json;

pub use clock::default_target;
pub use model::{
    Action, Adjacency, BATTLE_POLICIES, BattleStarted, Cell, ClockView, Clocks, Config, Context, Data, Event,
    FirePayload, Fleet, FleetChanged, MAX_NAME, MAX_SHIP, MAX_SHIPS, MAX_SIDE, MIN_SHIP, MIN_SIDE, Orientation,
    OwnBoard, OwnShip, PLACEMENT_POLICIES, PlaceShipPayload, Placement, PlayerData, PublicSeat, PublicShot,
    ReadyPayload, SeatOnly, ShipSpec, Shot, ShotFired, ShotOutcome, Side, SkippedTurn, SunkShip, View, VisibleEvent,
    classic_fleet,
};

/// The game id.
pub const GAME_ID: &str = "hundido";
/// The preparation phase.
pub const PHASE_PLACEMENT: &str = "placement";
/// The shooting phase.
pub const PHASE_BATTLE: &str = "battle";
/// Placement stage of a seat still arranging its fleet.
pub const STAGE_ARRANGE: &str = "arrange";
/// Placement stage of a seat that is ready (no actions).
pub const STAGE_WAITING: &str = "waiting";
/// Battle stage of the shooter.
pub const STAGE_FIRE: &str = "fire";
pub const ACTION_PLACE_SHIP: &str = "placeShip";
pub const ACTION_READY: &str = "ready";
pub const ACTION_FIRE: &str = "fire";
/// The only bot profile.
pub const BOT_DEFAULT: &str = "default";
/// Result reason: the shooter sank the rival's last ship.
pub const REASON_FLEET_DESTROYED: &str = "fleet-destroyed";
/// Result reason: a seat withdrew during battle; it loses and its rival wins.
pub const REASON_WITHDRAWAL: &str = "withdrawal";
/// Cancellation reason: a seat withdrew during placement; no one wins.
pub const REASON_WITHDRAWAL_IN_PLACEMENT: &str = "withdrawal-in-placement";
/// Result reason: a seat ran out of time under a `forfeit` policy (its placement, or its
/// battle turn); it loses and its rival wins.
pub const REASON_TIMEOUT: &str = "timeout";
/// Cancellation reason: both seats ran out of time (neither was ready at a `forfeit`
/// placement deadline, or two battle turns in a row were skipped); no one wins.
pub const REASON_ABANDONED: &str = "abandoned";

/// The Hundido rules, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hundido;

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

/// The placement flow for `data`: every seat is an actor, in `arrange` until it is ready and
/// in `waiting` after.
pub(crate) fn placement_flow(data: &Data) -> Flow {
    Flow {
        phase: PHASE_PLACEMENT.to_owned(),
        round: 0,
        turn: 0,
        actors: Side::BOTH
            .iter()
            .map(|s| {
                let ready = data.players.get(s.index()).is_some_and(|p| p.ready);
                (s.seat().to_owned(), if ready { STAGE_WAITING } else { STAGE_ARRANGE }.to_owned())
            })
            .collect(),
    }
}

/// The shooter of an active battle, if the position is one.
pub(crate) fn shooter(position: &Pos<Hundido>) -> Option<Side> {
    if position.is_finished() || position.flow.phase != PHASE_BATTLE {
        return None;
    }
    match position.flow.actors.iter().collect::<Vec<_>>()[..] {
        [(seat, stage)] if stage == STAGE_FIRE => Side::from_seat(seat),
        _ => None,
    }
}

/// Checks the data has one entry per seat, so indexing by [`Side::index`] cannot panic.
fn shaped(data: &Data) -> Result<(), RuleError> {
    if data.players.len() == 2 { Ok(()) } else { Err(RuleError::fault("data.players must hold exactly two seats")) }
}

impl Hundido {
    fn place(
        &self,
        p: &Pos<Self>,
        side: Side,
        payload: &PlaceShipPayload,
        now_ms: i64,
    ) -> Result<Trans<Self>, RuleError> {
        let config = &p.config;
        let placement = payload.placement();
        let own = &p.data.players[side.index()];
        fleet::check_placement(config, &own.fleet, &payload.ship, &placement).map_err(|e| illegal(e.reason()))?;
        clock::in_time(p, now_ms)?;
        let mut data = p.data.clone();
        let own = &mut data.players[side.index()];
        own.fleet.insert(payload.ship.clone(), placement);
        let placed = own.fleet.len() as u32;
        Ok(Transition {
            events: vec![Event::ShipPositioned { seat: side, ship: payload.ship.clone(), placement, placed }],
            // Only the author's fleet changed: the flow is untouched.
            flow: p.flow.clone(),
            data,
            result: None,
            deadlines: Vec::new(),
        })
    }

    fn ready(&self, p: &Pos<Self>, side: Side, now_ms: i64) -> Result<Trans<Self>, RuleError> {
        if !fleet::is_complete(&p.config, &p.data.players[side.index()].fleet) {
            return Err(illegal("fleet-incomplete"));
        }
        clock::in_time(p, now_ms)?;
        let mut data = p.data.clone();
        data.players[side.index()].ready = true;
        let mut events = vec![Event::SeatReady { seat: side }];
        if data.players.iter().all(|x| x.ready) {
            // The barrier: both fleets are final, the battle begins (with its clock, which
            // replaces the placement deadline).
            events.push(Event::BattleBegan { shooter: Side::P0 });
            let flow = Flow::single(PHASE_BATTLE, 0, 0, Side::P0.seat(), STAGE_FIRE);
            let was_running = p.data.clock.as_ref().is_some_and(|c| c.running.is_some());
            let mut t = Transition { data, flow, result: None, events, deadlines: Vec::new() };
            clock::retime(&p.config, was_running, &mut t, now_ms);
            return Ok(t);
        }
        // Only the author's own stage changes; the clock is untouched.
        let mut flow = p.flow.clone();
        flow.actors.insert(side.seat().to_owned(), STAGE_WAITING.to_owned());
        Ok(Transition { data, flow, result: None, events, deadlines: Vec::new() })
    }

    /// A shot by `side` at `target`: the transition without any clock change.
    fn fire(&self, p: &Pos<Self>, side: Side, target: Cell) -> Result<Trans<Self>, RuleError> {
        let config = &p.config;
        if !config.contains(target) {
            return Err(illegal("out-of-bounds"));
        }
        if p.data.shots.iter().any(|s| s.seat == side && s.cell() == target) {
            return Err(illegal("already-fired"));
        }
        let rival = &p.data.players[side.other().index()].fleet;
        let hit = fleet::ship_at(config, rival, target);
        let mut data = p.data.clone();
        let (outcome, sunk) = match hit {
            None => (ShotOutcome::Water, None),
            Some(ship) => {
                let cells = fleet::cells_of(config, ship, &rival[ship]).map_err(|e| RuleError::fault(e.reason()))?;
                let all_hit =
                    cells.iter().all(|c| *c == target || p.data.shots.iter().any(|s| s.seat == side && s.cell() == *c));
                if all_hit { (ShotOutcome::Sunk, Some((ship.to_owned(), cells))) } else { (ShotOutcome::Hit, None) }
            }
        };
        let ship = sunk.as_ref().map(|(name, _)| name.clone());
        data.shots.push(Shot { seat: side, row: target.row, column: target.column, outcome, ship: ship.clone() });
        let sunk_count = data.shots.iter().filter(|s| s.seat == side && s.outcome == ShotOutcome::Sunk).count();
        let destroyed = sunk_count == config.fleet.len();
        let turn = p.flow.turn + 1;
        let (flow, result) = if destroyed {
            let result = MatchResult::completed(
                REASON_FLEET_DESTROYED,
                [(side.seat(), Outcome::Win), (side.other().seat(), Outcome::Loss)],
            );
            (Flow { turn, ..p.flow.terminal() }, Some(result))
        } else if config.keep_turn_on_hit && outcome != ShotOutcome::Water {
            (Flow::single(PHASE_BATTLE, p.flow.round, turn, side.seat(), STAGE_FIRE), None)
        } else {
            (Flow::single(PHASE_BATTLE, p.flow.round + 1, turn, side.other().seat(), STAGE_FIRE), None)
        };
        let event = Event::ShotResolved {
            seat: side,
            row: target.row,
            column: target.column,
            outcome,
            ship,
            cells: sunk.map(|(_, cells)| cells),
        };
        Ok(Transition { data, flow, result, events: vec![event], deadlines: Vec::new() })
    }
}

impl Game for Hundido {
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
            phases: vec![
                PhaseSpec {
                    id: PHASE_PLACEMENT.to_owned(),
                    participation: Participation::Multiple,
                    stages: vec![
                        StageSpec {
                            id: STAGE_ARRANGE.to_owned(),
                            actions: vec![ACTION_PLACE_SHIP.to_owned(), ACTION_READY.to_owned()],
                        },
                        StageSpec { id: STAGE_WAITING.to_owned(), actions: Vec::new() },
                    ],
                },
                PhaseSpec {
                    id: PHASE_BATTLE.to_owned(),
                    participation: Participation::Single,
                    stages: vec![StageSpec { id: STAGE_FIRE.to_owned(), actions: vec![ACTION_FIRE.to_owned()] }],
                },
            ],
            actions: vec![
                ActionSpec::of::<PlaceShipPayload>(ACTION_PLACE_SHIP, ConflictPolicy::Actor),
                ActionSpec::of::<ReadyPayload>(ACTION_READY, ConflictPolicy::Actor),
                ActionSpec::of::<FirePayload>(ACTION_FIRE, ConflictPolicy::Match),
            ],
            bots: vec![BOT_DEFAULT.to_owned()],
            agents: Some(agents::virtual_players()),
        }
    }

    /// Spectators see the public facts only: shots, their results and sunk ships, never an
    /// unsunk ship's cells (`own` is `null`).
    fn spectators(&self) -> bool {
        true
    }

    /// A bot takes the seat of a human away for 30 s and hands it back when the human returns.
    fn handover(&self) -> juegoland_sdk::Handover {
        juegoland_sdk::Handover::Bot { after_ms: 30_000, profile: BOT_DEFAULT.to_owned() }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let config = &input.config;
        config.check_board().map_err(|e| RuleError::illegal(format!("config.{e}")))?;
        config.check_clock().map_err(|e| RuleError::illegal(format!("invalid-clock: {e}")))?;
        let seats: Vec<&str> = input.participants.keys().map(String::as_str).collect();
        if seats != ["p0", "p1"] || !input.participants.values().all(|p| p.is_active()) {
            return Err(illegal("invalid-participants"));
        }
        let data = Data {
            players: vec![PlayerData::default(), PlayerData::default()],
            shots: Vec::new(),
            skips: Vec::new(),
            clock: config.clock.as_ref().map(|_| ClockState::new(config.battle_clock(), seats)),
        };
        let mut t =
            Transition { flow: placement_flow(&data), data, result: None, events: Vec::new(), deadlines: Vec::new() };
        clock::retime(config, false, &mut t, services.now_ms());
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
        if position.is_finished() {
            return Err(illegal("match-finished"));
        }
        shaped(&position.data)?;
        let side = Side::from_seat(actor).ok_or_else(|| illegal("unknown-seat"))?;
        let stage = position.flow.stage_of(actor);
        let now_ms = services.now_ms();
        match action {
            Action::PlaceShip(payload) => match (position.flow.phase.as_str(), stage) {
                (PHASE_PLACEMENT, Some(STAGE_ARRANGE)) => self.place(position, side, payload, now_ms),
                (PHASE_PLACEMENT, Some(STAGE_WAITING)) => Err(illegal("already-ready")),
                _ => Err(illegal("not-in-placement")),
            },
            Action::Ready(_) => match (position.flow.phase.as_str(), stage) {
                (PHASE_PLACEMENT, Some(STAGE_ARRANGE)) => self.ready(position, side, now_ms),
                (PHASE_PLACEMENT, Some(STAGE_WAITING)) => Err(illegal("already-ready")),
                _ => Err(illegal("not-in-placement")),
            },
            Action::Fire(FirePayload { row, column }) => match shooter(position) {
                Some(s) if s == side => {
                    let mut t = self.fire(position, side, Cell::new(*row, *column))?;
                    clock::settle(&position.config, &mut t.data, side, now_ms)?;
                    let was_running = position.data.clock.as_ref().is_some_and(|c| c.running.is_some());
                    clock::retime(&position.config, was_running, &mut t, now_ms);
                    Ok(t)
                }
                Some(_) => Err(illegal("not-your-turn")),
                None => Err(illegal("not-in-battle")),
            },
        }
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let Some(seat) = recipient.seat() else { return Vec::new() };
        let Some(side) = Side::from_seat(seat) else { return Vec::new() };
        if position.is_finished() || position.data.players.len() != 2 {
            return Vec::new();
        }
        let config = &position.config;
        match (position.flow.phase.as_str(), position.flow.stage_of(seat)) {
            (PHASE_PLACEMENT, Some(STAGE_ARRANGE)) => {
                let mut offers = vec![Offer::Parametrized {
                    action_type: ACTION_PLACE_SHIP.to_owned(),
                    constraints: json!({
                        "rows": config.rows,
                        "columns": config.columns,
                        "fleet": config.fleet,
                        "adjacency": config.adjacency,
                    }),
                }];
                if fleet::is_complete(config, &position.data.players[side.index()].fleet) {
                    offers.push(Offer::Concrete(Action::ready()));
                }
                offers
            }
            (PHASE_BATTLE, Some(STAGE_FIRE)) if shooter(position) == Some(side) => vec![Offer::Parametrized {
                action_type: ACTION_FIRE.to_owned(),
                constraints: json!({ "rows": config.rows, "columns": config.columns }),
            }],
            _ => Vec::new(),
        }
    }

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        view::project(position, recipient)
    }

    fn project_event(
        &self,
        _before: &Pos<Self>,
        _after: &Pos<Self>,
        event: &Event,
        _recipient: Recipient<'_>,
    ) -> Vec<VisibleEvent> {
        // Visible events hold only public facts, so every recipient sees the same ones.
        view::visible(event)
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
                let leaver = Side::from_seat(seat)
                    .filter(|_| position.participants.contains_key(seat.as_str()))
                    .ok_or_else(|| illegal("unknown-seat"))?;
                let result = if position.flow.phase == PHASE_PLACEMENT {
                    MatchResult::cancelled(REASON_WITHDRAWAL_IN_PLACEMENT)
                } else {
                    MatchResult::completed(
                        REASON_WITHDRAWAL,
                        [(leaver.seat(), Outcome::Loss), (leaver.other().seat(), Outcome::Win)],
                    )
                };
                let mut t = Transition {
                    data: position.data.clone(),
                    flow: position.flow.terminal(),
                    result: Some(result),
                    events: vec![Event::SeatWithdrew { seat: leaver }],
                    deadlines: Vec::new(),
                };
                let was_running = position.data.clock.as_ref().is_some_and(|c| c.running.is_some());
                clock::retime(&position.config, was_running, &mut t, services.now_ms());
                Ok(t)
            }
            Lifecycle::DeadlineExpired { id, payload } => clock::timeout(position, id, payload, services),
        }
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        if profile != BOT_DEFAULT || position.is_finished() || validate::position(position).is_err() {
            return None;
        }
        let side = Side::from_seat(seat)?;
        match (position.flow.phase.as_str(), position.flow.stage_of(seat)?) {
            (PHASE_PLACEMENT, STAGE_ARRANGE) => {
                Some(bot::arrange(&position.config, &position.data.players[side.index()].fleet, entropy))
            }
            (PHASE_BATTLE, STAGE_FIRE) => bot::fire(&position.config, &position.data, side, entropy),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
