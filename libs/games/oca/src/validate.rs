//! `validate_position`: the invariants of an Oca position. An error is corruption.

use juegoland_sdk::{Corrupt, MatchResult, Outcome, Pos};

use crate::board::{DEATH, GOAL, MAZE, WELL, graph};
use crate::{Oca, PHASE, REASON_FINISHED, STAGE};

fn corrupt(message: impl Into<String>) -> Corrupt {
    Corrupt(message.into())
}

pub(crate) fn position(p: &Pos<Oca>) -> Result<(), Corrupt> {
    let data = &p.data;
    let seats: Vec<&String> = p.participants.keys().collect();
    for (what, keys) in [
        ("positions", data.positions.keys().collect::<Vec<_>>()),
        ("turnsLost", data.turns_lost.keys().collect()),
        ("rolls", data.rolls.keys().collect()),
    ] {
        if keys != seats {
            return Err(corrupt(format!("{what} must name exactly the participants")));
        }
    }
    for (seat, square) in &data.positions {
        if !graph().has_node(&square.to_string()) {
            return Err(corrupt(format!("{seat} is on square {square}, which is not on the board")));
        }
        if [MAZE, DEATH].contains(square) {
            return Err(corrupt(format!("{seat} rests on square {square}, which always moves a piece on")));
        }
    }
    for (seat, lost) in &data.turns_lost {
        if *lost > 2 || (*lost > 0 && !p.participants[seat].is_active()) {
            return Err(corrupt(format!("{seat} has {lost} turns to lose")));
        }
    }
    if let Some(held) = &data.well
        && (data.positions.get(held) != Some(&WELL) || !p.participants[held].is_active())
    {
        return Err(corrupt(format!("{held} is held in the well but is not an active seat on {WELL}")));
    }
    match (&p.config.clock, &data.clock) {
        (None, None) => {}
        (Some(clock), Some(state)) => {
            state.check(Some(clock), seats.iter().map(|s| s.as_str())).map_err(corrupt)?;
            let running = state.running.as_ref().and_then(|r| r.seat.as_deref());
            let actor = p.flow.actors.keys().next().map(String::as_str);
            if running != if p.result.is_none() { actor } else { None } {
                return Err(corrupt(format!("the clock runs for {running:?}, the seat to move is {actor:?}")));
            }
        }
        _ => return Err(corrupt("a clocked match keeps its clock, an untimed one none")),
    }
    let rolls: u32 = data.rolls.values().sum();
    if rolls != p.flow.turn {
        return Err(corrupt(format!("{rolls} rolls but turn {}", p.flow.turn)));
    }
    let die_ok = |last: &crate::LastRoll| {
        p.participants.contains_key(&last.seat)
            && last.roll.len() == usize::from(p.config.dice)
            && last.roll.iter().all(|d| (1..=6).contains(d))
    };
    match &data.last_roll {
        Some(last) if !die_ok(last) => {
            return Err(corrupt("the last roll is not the configured dice of a participant"));
        }
        None if rolls > 0 => return Err(corrupt("rolls were made but there is no last roll")),
        _ => {}
    }
    if p.flow.phase != PHASE {
        return Err(corrupt(format!("unknown phase {}", p.flow.phase)));
    }
    let at_goal: Vec<&String> = data.positions.iter().filter(|(_, sq)| **sq == GOAL).map(|(s, _)| s).collect();
    match &p.result {
        None => {
            let (seat, stage) = match p.flow.actors.iter().next() {
                Some(a) if p.flow.actors.len() == 1 => a,
                _ => return Err(corrupt("an active match has exactly one actor")),
            };
            if stage != STAGE || !p.participants[seat].is_active() {
                return Err(corrupt(format!("the actor {seat} must be an active seat in stage {STAGE}")));
            }
            if data.well.as_ref() == Some(seat) || data.turns_lost[seat] > 0 {
                return Err(corrupt(format!("the actor {seat} is held in the well or has turns to lose")));
            }
            if !at_goal.is_empty() {
                return Err(corrupt("a piece is on 63 but the match goes on"));
            }
        }
        Some(result) => {
            if !p.flow.actors.is_empty() {
                return Err(corrupt("a finished match has no actors"));
            }
            if let MatchResult::Completed { reason_code, participants } = result {
                if participants.keys().collect::<Vec<_>>() != seats {
                    return Err(corrupt("the result must list every participant"));
                }
                let winners: Vec<&String> =
                    participants.iter().filter(|(_, r)| r.outcome == Outcome::Win).map(|(s, _)| s).collect();
                if reason_code == REASON_FINISHED && (at_goal.len() != 1 || winners != at_goal) {
                    return Err(corrupt("a finished race has one winner, the piece on 63"));
                }
                if winners.len() > 1 {
                    return Err(corrupt("the race has at most one winner"));
                }
            }
        }
    }
    Ok(())
}
