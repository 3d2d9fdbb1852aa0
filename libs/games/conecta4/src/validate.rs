//! `validate_position`: the global invariants of a Conecta 4 position. A failure means
//! corruption (a bug or tampered storage), never a user error.

use juegoland_sdk::{Corrupt, MatchResult, Outcome, ParticipantStatus, Pos, TimeoutPolicy};

use crate::board;
use crate::model::{Disc, Grid};
use crate::{Conecta4, PHASE, REASON_BOARD_FULL, REASON_CONNECT, REASON_TIMEOUT, REASON_WITHDRAWAL, STAGE};

fn corrupt(message: impl Into<String>) -> Corrupt {
    Corrupt(message.into())
}

pub(crate) fn position(p: &Pos<Conecta4>) -> Result<(), Corrupt> {
    p.config.check().map_err(|e| corrupt(format!("config: {e}")))?;
    let seats: Vec<&str> = p.participants.keys().map(String::as_str).collect();
    if seats != ["p0", "p1"] {
        return Err(corrupt(format!("participants must be exactly p0 and p1, found {seats:?}")));
    }
    let connect = usize::from(p.config.connect);
    let grid = &p.data.grid;
    board::shape(&p.config, grid).map_err(corrupt)?;
    gravity(grid)?;

    let [n0, n1] = board::counts(grid);
    if n0 != n1 && n0 != n1 + 1 {
        return Err(corrupt(format!("p0 has {n0} discs and p1 {n1}: p0 moves first and turns alternate")));
    }
    let moves = n0 + n1;
    if p.data.move_count != moves {
        return Err(corrupt(format!("moveCount is {} but the grid holds {moves} discs", p.data.move_count)));
    }
    let full = moves == p.config.cells();

    // The last move, and whether it won. Lines only grow, so "nobody had a line before the
    // last move" proves the match did not go on after an earlier win.
    let winner = match p.data.last_move {
        None if moves == 0 => None,
        None => return Err(corrupt("lastMove is null after moves were made")),
        Some(_) if moves == 0 => return Err(corrupt("lastMove is set on an empty grid")),
        Some(m) => {
            let (row, column) = (usize::from(m.row), usize::from(m.column));
            if m.seat != Disc::to_move_after(moves - 1) {
                return Err(corrupt(format!("lastMove is by {} but move {moves} was the other seat's", m.seat.seat())));
            }
            if board::at(grid, row as isize, column as isize) != Some(m.seat) {
                return Err(corrupt("lastMove does not point at a disc of its seat"));
            }
            if board::height(grid, column) != row + 1 {
                return Err(corrupt("lastMove is not the top disc of its column"));
            }
            let mut before = grid.clone();
            before[row][column] = None;
            if Disc::BOTH.iter().any(|d| board::has_line(&before, *d, connect)) {
                return Err(corrupt("a line existed before the last move, yet the match went on"));
            }
            board::line_through(grid, row, column, connect).map(|line| (m.seat, line))
        }
    };
    let expected_line = winner.as_ref().map(|(_, line)| line);
    if p.data.line.as_ref() != expected_line {
        return Err(corrupt("data.line does not match the winning cells of the last move"));
    }

    let flow = &p.flow;
    if flow.phase != PHASE {
        return Err(corrupt(format!("unknown phase {:?}", flow.phase)));
    }
    if flow.turn != moves || flow.round != moves / 2 {
        return Err(corrupt(format!(
            "turn {} and round {} must be the moves made ({moves}) and the completed pairs ({})",
            flow.turn,
            flow.round,
            moves / 2
        )));
    }

    match &p.result {
        None => {
            if let Some((disc, _)) = winner {
                return Err(corrupt(format!("{} has a line but the match is active", disc.seat())));
            }
            if full {
                return Err(corrupt("the board is full but the match is active"));
            }
            if let Some((seat, _)) = p.participants.iter().find(|(_, x)| !x.is_active()) {
                return Err(corrupt(format!("{seat} withdrew but the match is active")));
            }
            let next = Disc::to_move_after(moves).seat();
            if flow.actors.len() != 1 || flow.stage_of(next) != Some(STAGE) {
                return Err(corrupt(format!("an active match has exactly one actor, {next} in stage {STAGE}")));
            }
        }
        Some(result) => {
            if !flow.actors.is_empty() {
                return Err(corrupt("a finished match has no actors"));
            }
            finished(p, result, winner.map(|(d, _)| d), full)?;
        }
    }
    clock(p, moves)
}

/// The clock's bookkeeping exists exactly for a clocked config, is coherent, and runs for the
/// seat to move while the match is active and for nobody once it is completed. (An engine
/// cancellation keeps the data as it was, running clock included.)
fn clock(p: &Pos<Conecta4>, moves: u32) -> Result<(), Corrupt> {
    let state = match (&p.config.clock, &p.data.clock) {
        (None, None) => return Ok(()),
        (Some(_), Some(state)) => state,
        (None, Some(_)) => return Err(corrupt("data.clock is set but the config has no clock")),
        (Some(_), None) => return Err(corrupt("the config has a clock but data.clock is missing")),
    };
    state.check(p.config.clock.as_ref(), ["p0", "p1"]).map_err(|e| corrupt(format!("clock: {e}")))?;
    let running = state.running.as_ref().map(|r| r.seat.as_deref());
    match &p.result {
        None => {
            let next = Disc::to_move_after(moves).seat();
            if running != Some(Some(next)) {
                return Err(corrupt(format!("the clock must run for {next}, the seat to move")));
            }
        }
        Some(MatchResult::Completed { .. }) if running.is_some() => {
            return Err(corrupt("the clock still runs after the match completed"));
        }
        Some(_) => {}
    }
    Ok(())
}

/// No disc floats above an empty cell (row 0 is the bottom).
fn gravity(grid: &Grid) -> Result<(), Corrupt> {
    for (r, pair) in grid.windows(2).enumerate() {
        if let Some(c) = (0..pair[1].len()).find(|&c| pair[1][c].is_some() && pair[0][c].is_none()) {
            return Err(corrupt(format!("floating disc at row {}, column {c}", r + 1)));
        }
    }
    Ok(())
}

fn finished(p: &Pos<Conecta4>, result: &MatchResult, winner: Option<Disc>, full: bool) -> Result<(), Corrupt> {
    let (reason, participants) = match result {
        // The rules never cancel; the engine or an administrator may, and then no one wins.
        MatchResult::Cancelled { .. } => return Ok(()),
        MatchResult::Completed { reason_code, participants } => (reason_code.as_str(), participants),
    };
    let outcome = |d: Disc| participants.get(d.seat()).map(|r| r.outcome);
    if participants.len() != 2 || outcome(Disc::P0).is_none() || outcome(Disc::P1).is_none() {
        return Err(corrupt("a completed result lists exactly p0 and p1"));
    }
    let won = |d: Disc| outcome(d) == Some(Outcome::Win) && outcome(d.other()) == Some(Outcome::Loss);
    match reason {
        REASON_CONNECT => match winner {
            Some(d) if won(d) => Ok(()),
            Some(_) => Err(corrupt("the seat with the line is not the sole winner")),
            None => Err(corrupt("a connect result without a line on the board")),
        },
        REASON_BOARD_FULL => {
            if winner.is_some() || !full {
                return Err(corrupt("board-full needs a full board and no line"));
            }
            if outcome(Disc::P0) != Some(Outcome::Draw) || outcome(Disc::P1) != Some(Outcome::Draw) {
                return Err(corrupt("board-full is a draw for both seats"));
            }
            Ok(())
        }
        REASON_TIMEOUT => {
            if p.config.clock.map(|c| c.policy) != Some(TimeoutPolicy::Forfeit) {
                return Err(corrupt("a timeout result needs a clock with the forfeit policy"));
            }
            if winner.is_some() || full {
                return Err(corrupt("a timeout cannot follow the end of the match"));
            }
            if p.participants.values().any(|x| !x.is_active()) {
                return Err(corrupt("a timeout result with a withdrawn seat"));
            }
            // The seat whose time ran out is the one that was to move.
            let late = Disc::to_move_after(p.data.move_count);
            if !won(late.other()) {
                return Err(corrupt(format!("in a timeout result {} (to move) loses and its rival wins", late.seat())));
            }
            Ok(())
        }
        REASON_WITHDRAWAL => {
            if winner.is_some() || full {
                return Err(corrupt("a withdrawal cannot follow the end of the match"));
            }
            let withdrawn = |d: Disc| p.participants[d.seat()].status == ParticipantStatus::Withdrawn;
            let Some(leaver) = Disc::BOTH.into_iter().find(|d| won(d.other())) else {
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
