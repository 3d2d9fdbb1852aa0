//! Projections and visible events: what each recipient may know.
//!
//! The rule of thumb: everything about a seat's fleet is private to that seat until a shot
//! reveals it. A shot reveals its outcome (`water`, `hit`, `sunk`) at one cell; a sinking
//! also reveals the ship's name and all its cells. Readiness and the number of placed ships
//! are public; where a ship lies is not, not even to its owner through an event (the owner
//! reads its fleet in its own view).

use juegoland_sdk::{Pos, Projection, Recipient};

use crate::model::{
    BattleStarted, ClockView, Context, Event, FleetChanged, OwnBoard, OwnShip, PublicSeat, PublicShot, SeatOnly,
    ShotFired, ShotOutcome, Side, SunkShip, View, VisibleEvent,
};
use crate::{Hundido, PHASE_BATTLE, STAGE_ARRANGE, STAGE_FIRE, fleet, shooter};

pub(crate) fn project(p: &Pos<Hundido>, recipient: Recipient<'_>) -> Projection<View, Context> {
    let (config, data) = (&p.config, &p.data);
    let side = recipient.seat().and_then(Side::from_seat);
    let player = |s: Side| data.players.get(s.index()).cloned().unwrap_or_default();

    let seats = Side::BOTH
        .iter()
        .map(|&s| {
            let own = player(s);
            let sunk: Vec<SunkShip> = data
                .shots
                .iter()
                .filter(|shot| shot.seat == s.other() && shot.outcome == ShotOutcome::Sunk)
                .filter_map(|shot| {
                    let ship = shot.ship.as_ref()?;
                    let cells = fleet::cells_of(config, ship, own.fleet.get(ship)?).ok()?;
                    Some(SunkShip { ship: ship.clone(), size: cells.len() as u8, cells })
                })
                .collect();
            PublicSeat {
                seat: s,
                ready: own.ready,
                placed: own.fleet.len() as u32,
                shots: data
                    .shots
                    .iter()
                    .filter(|shot| shot.seat == s)
                    .map(|shot| PublicShot {
                        row: shot.row,
                        column: shot.column,
                        outcome: shot.outcome,
                        ship: shot.ship.clone().filter(|_| shot.outcome == ShotOutcome::Sunk),
                    })
                    .collect(),
                afloat: config.fleet.len().saturating_sub(sunk.len()) as u32,
                sunk,
            }
        })
        .collect();

    let own = side.map(|s| {
        let own = player(s);
        let received: Vec<_> = data.shots.iter().filter(|shot| shot.seat == s.other()).map(|x| x.cell()).collect();
        let ships = config
            .fleet
            .iter()
            .filter_map(|spec| {
                let placement = own.fleet.get(&spec.ship)?;
                let cells = fleet::cells_of(config, &spec.ship, placement).ok()?;
                let hits: Vec<_> = cells.iter().copied().filter(|c| received.contains(c)).collect();
                Some(OwnShip {
                    ship: spec.ship.clone(),
                    size: spec.size,
                    row: placement.row,
                    column: placement.column,
                    orientation: placement.orientation,
                    sunk: hits.len() == cells.len(),
                    hits,
                    cells,
                })
            })
            .collect();
        let unplaced = config.fleet.iter().filter(|spec| !own.fleet.contains_key(&spec.ship)).cloned().collect();
        OwnBoard { seat: s, ships, unplaced, ready: own.ready }
    });

    let current = shooter(p);
    let stage = side.and_then(|s| p.flow.stage_of(s.seat()));
    let context = Context {
        seat: side,
        phase: p.flow.phase.clone(),
        shooter: current,
        your_turn: side.is_some() && current == side && p.flow.phase == PHASE_BATTLE,
        can_act: !p.is_finished() && matches!(stage, Some(STAGE_ARRANGE | STAGE_FIRE)),
    };
    Projection {
        view: View {
            rows: config.rows,
            columns: config.columns,
            fleet: config.fleet.clone(),
            adjacency: config.adjacency,
            keep_turn_on_hit: config.keep_turn_on_hit,
            clock: config.clock.zip(data.clock.as_ref()).map(|(settings, state)| ClockView {
                settings,
                // A cancelled match keeps its last bookkeeping; no clock runs after the end.
                running: state.running.clone().filter(|_| !p.is_finished()),
                remaining_ms: state.remaining_ms.clone(),
            }),
            own,
            seats,
        },
        context,
        result: p.result.clone(),
    }
}

/// The visible form of an internal event; the same for every recipient. A placement yields
/// only a count, never a coordinate.
pub(crate) fn visible(event: &Event) -> Vec<VisibleEvent> {
    match event {
        Event::ShipPositioned { seat, placed, .. } => {
            vec![VisibleEvent::FleetChanged(FleetChanged { seat: *seat, placed: *placed })]
        }
        Event::SeatReady { seat } => vec![VisibleEvent::PlayerReady(SeatOnly { seat: *seat })],
        Event::BattleBegan { shooter } => vec![VisibleEvent::BattleStarted(BattleStarted { shooter: *shooter })],
        Event::ShotResolved { seat, row, column, outcome, ship, cells } => {
            let sunk = *outcome == ShotOutcome::Sunk;
            vec![VisibleEvent::ShotFired(ShotFired {
                seat: *seat,
                row: *row,
                column: *column,
                outcome: *outcome,
                ship: ship.clone().filter(|_| sunk),
                cells: cells.clone().filter(|_| sunk),
            })]
        }
        Event::SeatWithdrew { seat } => vec![VisibleEvent::PlayerWithdrew(SeatOnly { seat: *seat })],
        Event::SeatTimedOut { seat } => vec![VisibleEvent::ClockExpired(SeatOnly { seat: *seat })],
        Event::FleetAutoPlaced { seat, fleet } => {
            vec![VisibleEvent::FleetChanged(FleetChanged { seat: *seat, placed: fleet.len() as u32 })]
        }
    }
}
