//! `validate_position`: the global invariants of a Hundido position. A failure means
//! corruption (a bug or tampered storage), never a user error.

use std::collections::BTreeSet;

use juegoland_sdk::{MatchResult, Outcome, ParticipantStatus, Pos, TimeoutPolicy};

use crate::model::{Cell, ShotOutcome, Side};
use crate::{
    Hundido, PHASE_BATTLE, PHASE_PLACEMENT, REASON_ABANDONED, REASON_FLEET_DESTROYED, REASON_TIMEOUT,
    REASON_WITHDRAWAL, REASON_WITHDRAWAL_IN_PLACEMENT, STAGE_FIRE, fleet, placement_flow,
};
use juegoland_sdk::Corrupt;

fn corrupt(message: impl Into<String>) -> Corrupt {
    Corrupt(message.into())
}

/// What replaying the shots in order says.
struct Battle {
    /// Who fires next (meaningless once a fleet is destroyed).
    shooter: Side,
    /// How many times the turn passed.
    round: u32,
    /// The seat that sank its rival's last ship, if any.
    winner: Option<Side>,
    /// Whether the last two turns were both skipped on a timeout (nobody is playing: the
    /// match must have been cancelled as `abandoned`).
    idle: bool,
}

pub(crate) fn position(p: &Pos<Hundido>) -> Result<(), Corrupt> {
    let config = &p.config;
    config.check().map_err(|e| corrupt(format!("config: {e}")))?;
    let seats: Vec<&str> = p.participants.keys().map(String::as_str).collect();
    if seats != ["p0", "p1"] {
        return Err(corrupt(format!("participants must be exactly p0 and p1, found {seats:?}")));
    }
    let data = &p.data;
    if data.players.len() != 2 {
        return Err(corrupt(format!("data.players has {} entries, not 2", data.players.len())));
    }
    for side in Side::BOTH {
        let player = &data.players[side.index()];
        fleet::check_fleet(config, &player.fleet).map_err(|e| corrupt(format!("{} fleet: {e}", side.seat())))?;
        if player.ready && !fleet::is_complete(config, &player.fleet) {
            return Err(corrupt(format!("{} is ready with an incomplete fleet", side.seat())));
        }
    }
    let battle = shots(p)?;
    let withdrawn = |s: Side| p.participants[s.seat()].status == ParticipantStatus::Withdrawn;
    let flow = &p.flow;
    let placement_policy = config.placement_clock().map(|c| c.policy);
    let unready: Vec<Side> = Side::BOTH.into_iter().filter(|s| !data.players[s.index()].ready).collect();

    match flow.phase.as_str() {
        PHASE_PLACEMENT => {
            if !data.shots.is_empty() || !data.skips.is_empty() {
                return Err(corrupt("shots were fired during placement"));
            }
            if flow.round != 0 || flow.turn != 0 {
                return Err(corrupt("placement keeps round and turn at 0"));
            }
            if data.players.iter().all(|x| x.ready) {
                return Err(corrupt("both seats are ready but the battle has not started"));
            }
            match &p.result {
                None => {
                    if let Some(s) = Side::BOTH.into_iter().find(|s| withdrawn(*s)) {
                        return Err(corrupt(format!("{} withdrew but the match is active", s.seat())));
                    }
                    if flow.actors != placement_flow(data).actors {
                        return Err(corrupt("in placement every seat is an actor: arrange until ready, waiting after"));
                    }
                }
                Some(result) => {
                    if !flow.actors.is_empty() {
                        return Err(corrupt("a finished match has no actors"));
                    }
                    match result {
                        MatchResult::Completed { reason_code, participants } if reason_code == REASON_TIMEOUT => {
                            if placement_policy != Some(TimeoutPolicy::Forfeit) {
                                return Err(corrupt("a placement timeout result needs the forfeit policy"));
                            }
                            let [loser] = unready[..] else {
                                return Err(corrupt("a placement timeout result needs exactly one unready seat"));
                            };
                            let outcome = |s: Side| participants.get(s.seat()).map(|r| r.outcome);
                            if participants.len() != 2
                                || outcome(loser) != Some(Outcome::Loss)
                                || outcome(loser.other()) != Some(Outcome::Win)
                            {
                                return Err(corrupt(format!(
                                    "{}, not ready in time, loses and its rival wins",
                                    loser.seat()
                                )));
                            }
                            if Side::BOTH.into_iter().any(withdrawn) {
                                return Err(corrupt("a timeout result with a withdrawn seat"));
                            }
                        }
                        MatchResult::Completed { .. } => {
                            return Err(corrupt("a match cannot be completed during placement"));
                        }
                        MatchResult::Cancelled { reason_code } if reason_code == REASON_WITHDRAWAL_IN_PLACEMENT => {
                            if !Side::BOTH.into_iter().any(withdrawn) {
                                return Err(corrupt("cancelled for a withdrawal, but nobody withdrew"));
                            }
                        }
                        MatchResult::Cancelled { reason_code } if reason_code == REASON_ABANDONED => {
                            if placement_policy != Some(TimeoutPolicy::Forfeit) || unready.len() != 2 {
                                return Err(corrupt(
                                    "abandoned in placement needs the forfeit policy and both seats unready",
                                ));
                            }
                        }
                        // The engine or an administrator may cancel; then no one wins.
                        MatchResult::Cancelled { .. } => {}
                    }
                }
            }
        }
        PHASE_BATTLE => {
            for side in Side::BOTH {
                if !data.players[side.index()].ready {
                    return Err(corrupt(format!("the battle started but {} is not ready", side.seat())));
                }
            }
            let turns = data.shots.len() + data.skips.len();
            if flow.turn as usize != turns || flow.round != battle.round {
                return Err(corrupt(format!(
                    "turn {} and round {} must be the shots fired and turns skipped ({turns}) and the turn changes ({})",
                    flow.turn, flow.round, battle.round
                )));
            }
            match &p.result {
                None => {
                    if let Some(s) = Side::BOTH.into_iter().find(|s| withdrawn(*s)) {
                        return Err(corrupt(format!("{} withdrew but the match is active", s.seat())));
                    }
                    if let Some(w) = battle.winner {
                        return Err(corrupt(format!(
                            "{} destroyed its rival's fleet but the match is active",
                            w.seat()
                        )));
                    }
                    if battle.idle {
                        return Err(corrupt("two turns in a row timed out but the match is active"));
                    }
                    let next = battle.shooter.seat();
                    if flow.actors.len() != 1 || flow.stage_of(next) != Some(STAGE_FIRE) {
                        return Err(corrupt(format!("an active battle has exactly one actor, {next} in stage fire")));
                    }
                }
                Some(result) => {
                    if !flow.actors.is_empty() {
                        return Err(corrupt("a finished match has no actors"));
                    }
                    finished(p, result, &battle)?;
                }
            }
        }
        other => return Err(corrupt(format!("unknown phase {other:?}"))),
    }
    clock(p, &battle)
}

/// The clocks' bookkeeping exists exactly for a clocked config and is coherent: while active,
/// the placement deadline runs (for no seat, `timeoutMs` long) during placement if there is
/// one, and the shooter's turn runs in battle if there is a battle clock; nothing runs once
/// the match is completed. (An engine cancellation keeps the data as it was.)
fn clock(p: &Pos<Hundido>, battle: &Battle) -> Result<(), Corrupt> {
    let config = &p.config;
    if !p.data.skips.is_empty() && config.battle_clock().map(|c| c.policy) != Some(TimeoutPolicy::Skip) {
        return Err(corrupt("turns were skipped without a battle clock with the skip policy"));
    }
    let state = match (&config.clock, &p.data.clock) {
        (None, None) => return Ok(()),
        (Some(_), Some(state)) => state,
        (None, Some(_)) => return Err(corrupt("data.clock is set but the config has no clock")),
        (Some(_), None) => return Err(corrupt("the config has clocks but data.clock is missing")),
    };
    state.check(config.battle_clock(), ["p0", "p1"]).map_err(|e| corrupt(format!("clock: {e}")))?;
    let running = state.running.as_ref();
    match &p.result {
        None if p.flow.phase == PHASE_PLACEMENT => match (config.placement_clock(), running) {
            (None, None) => {}
            (Some(c), Some(r))
                if r.seat.is_none() && r.due_ms == r.started_ms.saturating_add(i64::from(c.timeout_ms)) => {}
            (Some(c), _) => {
                return Err(corrupt(format!("the placement deadline must run, {} ms long, for no seat", c.timeout_ms)));
            }
            (None, Some(_)) => return Err(corrupt("a clock runs in placement without a placement deadline")),
        },
        None => {
            let next = battle.shooter.seat();
            match (config.battle_clock(), running) {
                (None, None) => {}
                (Some(_), Some(r)) if r.seat.as_deref() == Some(next) => {}
                (Some(_), _) => return Err(corrupt(format!("the battle clock must run for {next}, the shooter"))),
                (None, Some(_)) => return Err(corrupt("a clock runs in battle without a battle clock")),
            }
        }
        Some(MatchResult::Completed { .. }) if running.is_some() => {
            return Err(corrupt("the clock still runs after the match completed"));
        }
        Some(_) => {}
    }
    Ok(())
}

/// Replays the shots and skipped turns in order: each shot on the board, fired once per
/// seat, by the seat whose turn it was, with the outcome (and sunk ship) the fleets imply;
/// each skip by the seat whose turn it was; nothing after a fleet was destroyed or after two
/// turns in a row were skipped.
fn shots(p: &Pos<Hundido>) -> Result<Battle, Corrupt> {
    let (config, data) = (&p.config, &p.data);
    let mut battle = Battle { shooter: Side::P0, round: 0, winner: None, idle: false };
    if data.skips.windows(2).any(|w| w[0].shots > w[1].shots)
        || data.skips.iter().any(|s| s.shots as usize > data.shots.len())
    {
        return Err(corrupt("skipped turns are out of order or after the last shot"));
    }
    let mut skips = data.skips.iter().peekable();
    let mut skipped_in_a_row = 0;
    // Per side, once: the rival fleet's cells, the cells fired at so far and the ships sunk,
    // so the replay is linear in the shots (it runs on every move).
    let occupied = Side::BOTH.map(|s| fleet::occupancy(config, &data.players[s.other().index()].fleet));
    let mut fired: [BTreeSet<Cell>; 2] = Default::default();
    let mut sunk = [0usize; 2];
    for i in 0..=data.shots.len() {
        while let Some(skip) = skips.next_if(|s| s.shots as usize == i) {
            if battle.winner.is_some() || battle.idle {
                return Err(corrupt(format!("a turn was skipped after shot {i} though the match was over")));
            }
            if skip.seat != battle.shooter {
                return Err(corrupt(format!(
                    "{} skipped a turn after shot {i} but it was {}'s turn",
                    skip.seat.seat(),
                    battle.shooter.seat()
                )));
            }
            battle.shooter = battle.shooter.other();
            battle.round += 1;
            skipped_in_a_row += 1;
            battle.idle = skipped_in_a_row >= 2;
        }
        let Some(shot) = data.shots.get(i) else { break };
        skipped_in_a_row = 0;
        let at = format_args!("shot {i} ({}, {})", shot.row, shot.column);
        if battle.winner.is_some() {
            return Err(corrupt(format!("{at} was fired after a fleet was destroyed")));
        }
        if battle.idle {
            return Err(corrupt(format!("{at} was fired after two turns in a row timed out")));
        }
        if shot.seat != battle.shooter {
            return Err(corrupt(format!(
                "{at} is by {} but it was {}'s turn",
                shot.seat.seat(),
                battle.shooter.seat()
            )));
        }
        let cell = shot.cell();
        if !config.contains(cell) {
            return Err(corrupt(format!("{at} is off the board")));
        }
        let earlier = &mut fired[shot.seat.index()];
        if !earlier.insert(cell) {
            return Err(corrupt(format!("{at} repeats an earlier shot of {}", shot.seat.seat())));
        }
        let rival = &data.players[shot.seat.other().index()].fleet;
        let (outcome, ship) = match occupied[shot.seat.index()].get(&cell) {
            None => (ShotOutcome::Water, None),
            Some(&ship) => {
                let cells = fleet::cells_of(config, ship, &rival[ship]).map_err(|e| corrupt(e.reason()))?;
                if cells.iter().all(|c| earlier.contains(c)) {
                    (ShotOutcome::Sunk, Some(ship.to_owned()))
                } else {
                    (ShotOutcome::Hit, None)
                }
            }
        };
        if shot.outcome != outcome || shot.ship != ship {
            return Err(corrupt(format!(
                "{at} records {:?} {:?}; the fleets say {outcome:?} {ship:?}",
                shot.outcome, shot.ship
            )));
        }
        let sunk = &mut sunk[shot.seat.index()];
        *sunk += usize::from(outcome == ShotOutcome::Sunk);
        if *sunk == config.fleet.len() {
            battle.winner = Some(shot.seat);
        } else if !(config.keep_turn_on_hit && outcome != ShotOutcome::Water) {
            battle.shooter = battle.shooter.other();
            battle.round += 1;
        }
    }
    Ok(battle)
}

fn finished(p: &Pos<Hundido>, result: &MatchResult, battle: &Battle) -> Result<(), Corrupt> {
    let winner = battle.winner;
    let abandoned = matches!(result, MatchResult::Cancelled { reason_code } if reason_code == REASON_ABANDONED);
    if battle.idle != abandoned {
        return Err(corrupt("a battle is abandoned exactly when two turns in a row timed out"));
    }
    let (reason, participants) = match result {
        MatchResult::Cancelled { reason_code } if reason_code == REASON_WITHDRAWAL_IN_PLACEMENT => {
            return Err(corrupt("a withdrawal during battle is not a cancellation"));
        }
        // The engine or an administrator may cancel; then no one wins.
        MatchResult::Cancelled { .. } => return Ok(()),
        MatchResult::Completed { reason_code, participants } => (reason_code.as_str(), participants),
    };
    let outcome = |s: Side| participants.get(s.seat()).map(|r| r.outcome);
    if participants.len() != 2 || outcome(Side::P0).is_none() || outcome(Side::P1).is_none() {
        return Err(corrupt("a completed result lists exactly p0 and p1"));
    }
    let won = |s: Side| outcome(s) == Some(Outcome::Win) && outcome(s.other()) == Some(Outcome::Loss);
    let withdrawn = |s: Side| p.participants[s.seat()].status == ParticipantStatus::Withdrawn;
    match reason {
        REASON_FLEET_DESTROYED => match winner {
            Some(w) if won(w) => {
                if Side::BOTH.into_iter().any(withdrawn) {
                    return Err(corrupt("a withdrawal cannot follow the end of the match"));
                }
                Ok(())
            }
            Some(_) => Err(corrupt("the seat that destroyed its rival's fleet is not the sole winner")),
            None => Err(corrupt("fleet-destroyed without a destroyed fleet")),
        },
        REASON_TIMEOUT => {
            if p.config.battle_clock().map(|c| c.policy) != Some(TimeoutPolicy::Forfeit) {
                return Err(corrupt("a battle timeout result needs a battle clock with the forfeit policy"));
            }
            if winner.is_some() {
                return Err(corrupt("a timeout cannot follow the end of the match"));
            }
            if Side::BOTH.into_iter().any(withdrawn) {
                return Err(corrupt("a timeout result with a withdrawn seat"));
            }
            let late = battle.shooter;
            if !won(late.other()) {
                return Err(corrupt(format!(
                    "in a timeout result {} (the shooter) loses and its rival wins",
                    late.seat()
                )));
            }
            Ok(())
        }
        REASON_WITHDRAWAL => {
            if winner.is_some() {
                return Err(corrupt("a withdrawal cannot follow the end of the match"));
            }
            let Some(leaver) = Side::BOTH.into_iter().find(|s| won(s.other())) else {
                return Err(corrupt("a withdrawal result has one winner and one loser"));
            };
            if !withdrawn(leaver) || withdrawn(leaver.other()) {
                return Err(corrupt("in a withdrawal result the loser, and only the loser, withdrew"));
            }
            Ok(())
        }
        other => Err(corrupt(format!("unknown result reason {other:?}"))),
    }
}
