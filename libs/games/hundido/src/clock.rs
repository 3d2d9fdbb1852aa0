//! The clocks' consequences: arming and stopping the clock deadline as the match moves on,
//! refusing late actions, and what each timeout policy does when the deadline fires.
//!
//! One deadline ([`juegoland_sdk::CLOCK_DEADLINE`]) serves both phases: the placement deadline (one for
//! the simultaneous phase, nobody's budget charged) is replaced by the battle clock when the
//! battle starts, and each battle turn replaces the previous one. Placement actions never
//! touch the clock, so they stay independent (`actor` policy) and confluent.

use std::collections::BTreeSet;

use juegoland_sdk::{
    ClockError, Flow, MatchResult, Outcome, Pos, Position, RuleError, Services, TimeoutPolicy, Trans, Transition,
};
use serde_json::Value;

use crate::model::{Cell, Config, Data, Event, Fleet, Side, SkippedTurn};
use crate::{
    Hundido, PHASE_BATTLE, PHASE_PLACEMENT, REASON_ABANDONED, REASON_TIMEOUT, STAGE_FIRE, fleet, illegal, shooter,
};

/// A clock refusal as a rule error: a bookkeeping mismatch is a fault, the rest are refusals.
pub(crate) fn refusal(e: ClockError) -> RuleError {
    match e {
        ClockError::NotRunning(_) => RuleError::fault(format!("clock: {e}")),
        e => illegal(e.reason()),
    }
}

/// Refuses an action at or after the running deadline (the placement deadline for placement
/// actions). The clock keeps running: the deadline applies the policy.
pub(crate) fn in_time(p: &Pos<Hundido>, now_ms: i64) -> Result<(), RuleError> {
    p.data.clock.as_ref().map_or(Ok(()), |c| c.in_time(now_ms).map_err(refusal))
}

/// Charges the shooter's battle turn at a shot made at `now_ms` (refused when late).
pub(crate) fn settle(config: &Config, data: &mut Data, side: Side, now_ms: i64) -> Result<(), RuleError> {
    match (config.battle_clock(), data.clock.as_mut()) {
        (Some(clock), Some(state)) => state.settle(clock, side.seat(), now_ms).map(drop).map_err(refusal),
        _ => Ok(()),
    }
}

/// Arms the clock the transition's position needs, or stops it: the placement deadline
/// (only called at setup: placement actions never re-arm it), the shooter's battle turn, or
/// nothing once the match is over. `was_running` says whether a clock deadline may be
/// pending before the transition (then a stop cancels it). A no-op for an untimed match.
pub(crate) fn retime(config: &Config, was_running: bool, t: &mut Trans<Hundido>, now_ms: i64) {
    let Some(state) = t.data.clock.as_mut() else { return };
    let op = if t.result.is_some() {
        was_running.then(|| state.stop())
    } else if t.flow.phase == PHASE_BATTLE {
        match (config.battle_clock(), t.flow.actors.keys().next()) {
            (Some(clock), Some(seat)) => Some(state.arm_turn(clock, seat, now_ms)),
            _ => was_running.then(|| state.stop()),
        }
    } else {
        config.placement_clock().map(|c| state.arm_phase(c, now_ms))
    };
    t.deadlines.extend(op);
}

/// The cell the battle's `defaultMove` policy fires at: `side`'s first untargeted cell in
/// reading order (row by row, left to right). It depends only on `side`'s own shots, which
/// are public. `None` when `side` fired at every cell.
pub fn default_target(config: &Config, data: &Data, side: Side) -> Option<Cell> {
    let fired: BTreeSet<Cell> = data.shots.iter().filter(|s| s.seat == side).map(|s| s.cell()).collect();
    (0..config.rows).flat_map(|r| (0..config.columns).map(move |c| Cell::new(r, c))).find(|c| !fired.contains(c))
}

/// The fleet the placement's `defaultMove` policy gives `side`: its placed ships kept and the
/// missing ones placed in a random valid layout, drawn with labelled randomness (recorded in
/// the private trace, so replays reproduce it) — a fixed layout would let the rival predict
/// an idle seat's fleet. If the placed ships admit no completion, a random layout from
/// scratch; if the search budget runs out, the deterministic layout the config check proved.
fn auto_fleet(config: &Config, own: &Fleet, side: Side, services: &mut Services<'_>) -> Result<Fleet, RuleError> {
    let none = BTreeSet::new();
    let seat = side.seat();
    let kept = fleet::complete_with(config, own, &none, |ship, all| {
        services.random.shuffle(&format!("autoPlace.{seat}.{ship}"), &all)
    })?;
    if let Some(f) = kept {
        return Ok(f);
    }
    let fresh = fleet::complete_with(config, &Fleet::new(), &none, |ship, all| {
        services.random.shuffle(&format!("autoPlace.{seat}.fresh.{ship}"), &all)
    })?;
    fresh
        .or_else(|| fleet::complete(config, &Fleet::new(), &none, None))
        .ok_or_else(|| RuleError::fault("the configured fleet does not fit on the board"))
}

/// A fired clock deadline: checks it ends the running deadline, then applies the policy.
pub(crate) fn timeout(
    p: &Pos<Hundido>,
    id: &str,
    payload: &Value,
    services: &mut Services<'_>,
) -> Result<Trans<Hundido>, RuleError> {
    let Some(state) = p.data.clock.as_ref() else { return Err(illegal("no-deadlines")) };
    if p.is_finished() {
        return Err(illegal("match-finished"));
    }
    let mut data = p.data.clone();
    let mut state = state.clone();
    let seat = state.expire(id, payload).map_err(refusal)?;
    data.clock = Some(state);
    let now_ms = services.now_ms();
    let mut t = match (p.flow.phase.as_str(), seat) {
        (PHASE_PLACEMENT, None) => placement_timeout(p, data, services)?,
        (PHASE_BATTLE, Some(seat)) => match (Side::from_seat(&seat), shooter(p)) {
            (Some(s), Some(shooting)) if s == shooting => battle_timeout(p, data, s)?,
            _ => return Err(RuleError::fault("the battle clock ran for a seat that is not the shooter")),
        },
        _ => return Err(RuleError::fault("the clock deadline does not match the phase")),
    };
    // The consumed deadline is gone; arm the next one if the match goes on.
    retime(&p.config, false, &mut t, now_ms);
    Ok(t)
}

fn placement_timeout(
    p: &Pos<Hundido>,
    mut data: Data,
    services: &mut Services<'_>,
) -> Result<Trans<Hundido>, RuleError> {
    let config = &p.config;
    let policy = config.placement_clock().map(|c| c.policy);
    let late: Vec<Side> = Side::BOTH.into_iter().filter(|s| !data.players[s.index()].ready).collect();
    let mut events: Vec<Event> = Vec::new();
    match policy {
        Some(TimeoutPolicy::Forfeit) => {
            events.extend(late.iter().map(|&seat| Event::SeatTimedOut { seat }));
            let result = match late[..] {
                [loser] => MatchResult::completed(
                    REASON_TIMEOUT,
                    [(loser.seat(), Outcome::Loss), (loser.other().seat(), Outcome::Win)],
                ),
                _ => MatchResult::cancelled(REASON_ABANDONED),
            };
            Ok(Transition { data, flow: p.flow.terminal(), result: Some(result), events, deadlines: Vec::new() })
        }
        Some(TimeoutPolicy::DefaultMove) => {
            for side in late {
                events.push(Event::SeatTimedOut { seat: side });
                let player = &mut data.players[side.index()];
                // A complete fleet (public: its count) is kept as is; otherwise it is completed.
                if !fleet::is_complete(config, &player.fleet) {
                    let completed = auto_fleet(config, &player.fleet, side, services)?;
                    events.push(Event::FleetAutoPlaced { seat: side, fleet: completed.clone() });
                    player.fleet = completed;
                }
                player.ready = true;
                events.push(Event::SeatReady { seat: side });
            }
            events.push(Event::BattleBegan { shooter: Side::P0 });
            let flow = Flow::single(PHASE_BATTLE, 0, 0, Side::P0.seat(), STAGE_FIRE);
            Ok(Transition { data, flow, result: None, events, deadlines: Vec::new() })
        }
        _ => Err(RuleError::fault("a placement deadline without a supported policy")),
    }
}

fn battle_timeout(p: &Pos<Hundido>, mut data: Data, side: Side) -> Result<Trans<Hundido>, RuleError> {
    let config = &p.config;
    let timed_out = Event::SeatTimedOut { seat: side };
    let (round, turn) = (p.flow.round, p.flow.turn);
    match config.battle_clock().map(|c| c.policy) {
        Some(TimeoutPolicy::Forfeit) => {
            let result = MatchResult::completed(
                REASON_TIMEOUT,
                [(side.seat(), Outcome::Loss), (side.other().seat(), Outcome::Win)],
            );
            Ok(Transition {
                data,
                flow: p.flow.terminal(),
                result: Some(result),
                events: vec![timed_out],
                deadlines: Vec::new(),
            })
        }
        Some(TimeoutPolicy::DefaultMove) => {
            let cell = default_target(config, &data, side)
                .ok_or_else(|| RuleError::fault("an active battle in which the shooter fired at every cell"))?;
            let expired = Position { data, ..p.clone() };
            let mut t = Hundido.fire(&expired, side, cell)?;
            t.events.insert(0, timed_out);
            Ok(t)
        }
        Some(TimeoutPolicy::Skip) => {
            let shots = data.shots.len() as u32;
            // Both seats let their turn run out, one after the other: nobody is playing.
            let idle = data.skips.last() == Some(&SkippedTurn { seat: side.other(), shots });
            data.skips.push(SkippedTurn { seat: side, shots });
            let (flow, result) = if idle {
                let flow = Flow { round: round + 1, turn: turn + 1, ..p.flow.terminal() };
                (flow, Some(MatchResult::cancelled(REASON_ABANDONED)))
            } else {
                (Flow::single(PHASE_BATTLE, round + 1, turn + 1, side.other().seat(), STAGE_FIRE), None)
            };
            Ok(Transition { data, flow, result, events: vec![timed_out], deadlines: Vec::new() })
        }
        None => Err(RuleError::fault("a battle deadline without a battle clock")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_target_is_the_first_untargeted_cell_in_reading_order() {
        let config = Config { rows: 6, columns: 6, ..Config::default() };
        let mut data = Data { players: vec![Default::default(); 2], shots: Vec::new(), skips: Vec::new(), clock: None };
        assert_eq!(default_target(&config, &data, Side::P0), Some(Cell::new(0, 0)));
        for c in 0..6 {
            data.shots.push(crate::model::Shot {
                seat: Side::P0,
                row: 0,
                column: c,
                outcome: crate::model::ShotOutcome::Water,
                ship: None,
            });
        }
        assert_eq!(default_target(&config, &data, Side::P0), Some(Cell::new(1, 0)));
        assert_eq!(default_target(&config, &data, Side::P1), Some(Cell::new(0, 0)), "only the seat's own shots count");
    }
}
