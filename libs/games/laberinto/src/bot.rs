//! The `default` bot: it explores the maze through the fog and plays to the end, from what
//! its seat has seen and nothing else — the player's [`Memory`] (kept by the rules from the
//! views: `memory.rs`), its own status (cell, carried key, exit open) and the public rules
//! (the exits' placement, the compass's bearing). It never reads a cell, a wall, a key or the
//! rival it has not seen.
//!
//! It plans over its knowledge: a wall it has seen blocks; space it has not seen is assumed
//! open (optimistic exploration: the true maze is a part of the believed one, so a believed
//! path always exists). It re-plans at every move, so a wall found on the way only turns it.
//! The objective: its own key where it last saw it (on the ground, or the rival carrying it
//! there: a meeting gives it back), else the nearest cell its current sweep has not looked
//! at; with its key, its exit if seen, else the nearest unseen cell where the placement rule
//! may put it (narrowed to the compass's bearing once it has stepped on its compass); from
//! its open exit, out. It drops a rival's key it picked up on the way, so its one slot is
//! free for its own. Deterministic: no entropy is drawn. It is the server's seat; its pace
//! is the host's (each move is a `queue` command judged like any other, cooldown included).
//!
//! What the fog costs it in moves, against the all-seeing bot it replaced, is measured in
//! docs/decisions.md (§ Real-time play).

use std::collections::VecDeque;

use juegoland_sdk::Pos;

use crate::maze::{Grid, is_open};
use crate::model::{Action, Direction, DropPayload, Memory, MovePayload};
use crate::play::{exit_candidates, grid};
use crate::{Laberinto, RACING};

pub(crate) fn action(p: &Pos<Laberinto>, seat: &str) -> Option<Action> {
    if p.result.is_some() || p.flow.phase != RACING {
        return None;
    }
    let data = &p.data;
    let me = data.players.get(seat)?;
    if me.exited_ms.is_some() {
        return None;
    }
    let exit = data.exits.get(seat)?;
    let known = Known { cells: &data.cells, grid: grid(&p.config), memory: &me.memory };
    let step = |direction: Direction| Action::Move(MovePayload { direction });
    // Standing on one's own open exit: out (the outward side is the border's).
    if exit.open && me.cell == exit.cell {
        return Some(step(exit.side));
    }
    // A rival's key: drop it — but not where one's own key lies, since entering a cell picks
    // up its lowest owner's key first (p1 could never take its own back): step off first.
    if me.inventory.as_deref().is_some_and(|owner| owner != seat) {
        let own_here = me.memory.keys.get(seat).is_some_and(|s| !s.carried && s.cell == me.cell);
        return if own_here { known.step_off(me.cell).map(step) } else { Some(Action::Drop(DropPayload {})) };
    }
    let targets = if exit.open || me.inventory.as_deref() == Some(seat) {
        let compass = data.compasses.get(seat).copied().filter(|c| known.seen(*c));
        let exit_seen = known.seen(exit.cell).then_some(exit.cell);
        known.exit_targets(seat, exit_seen, compass)
    } else {
        known.key_targets(seat)
    };
    // Standing on the target (an exit entered without the key, a key dropped where one
    // stands): only entering acts, so step off and come back.
    known.first_step(me.cell, &targets).or_else(|| known.step_off(me.cell)).map(step)
}

/// What the bot's seat knows of the maze: the passages of the cells it has seen.
struct Known<'a> {
    cells: &'a [u8],
    grid: Grid,
    memory: &'a Memory,
}

impl Known<'_> {
    fn seen(&self, cell: u32) -> bool {
        self.memory.seen.contains(cell)
    }

    /// The cell beyond `side` of `cell` if the passage is believed open: as seen when either
    /// cell has been seen (a seen cell shows its four sides), else assumed open.
    fn passage(&self, cell: u32, side: Direction) -> Option<u32> {
        let next = self.grid.neighbour(cell, side)?;
        let open = if self.seen(cell) {
            is_open(self.cells, cell, side)
        } else if self.seen(next) {
            is_open(self.cells, next, side.opposite())
        } else {
            true
        };
        open.then_some(next)
    }

    /// The first step of a believed-shortest path to the nearest of `targets` (ties go to
    /// the first direction in `Direction::ALL` order); `None` when standing on one of them.
    fn first_step(&self, from: u32, targets: &[u32]) -> Option<Direction> {
        let n = self.grid.len() as usize;
        let mut target = vec![false; n];
        for t in targets.iter().filter(|t| (**t as usize) < n) {
            target[*t as usize] = true;
        }
        if target.get(from as usize).is_none_or(|t| *t) {
            return None;
        }
        let mut first: Vec<Option<Direction>> = vec![None; n];
        let mut reached = vec![false; n];
        reached[from as usize] = true;
        let mut queue = VecDeque::from([from]);
        while let Some(cell) = queue.pop_front() {
            for side in Direction::ALL {
                let Some(next) = self.passage(cell, side) else { continue };
                if std::mem::replace(&mut reached[next as usize], true) {
                    continue;
                }
                let step = if cell == from { Some(side) } else { first[cell as usize] };
                if target[next as usize] {
                    return step;
                }
                first[next as usize] = step;
                queue.push_back(next);
            }
        }
        None
    }

    /// A side to step off `cell` through (the first believed open).
    fn step_off(&self, cell: u32) -> Option<Direction> {
        Direction::ALL.into_iter().find(|side| self.passage(cell, *side).is_some())
    }

    /// Where to look for one's own key: where it was last seen, else every cell the current
    /// sweep has not looked at.
    fn key_targets(&self, seat: &str) -> Vec<u32> {
        match self.memory.keys.get(seat) {
            Some(sighting) => vec![sighting.cell],
            None => (0..self.grid.len()).filter(|c| !self.memory.swept.contains(*c)).collect(),
        }
    }

    /// Where to go with one's key: the exit if seen; else every unseen cell the placement
    /// rule allows, narrowed by the compass's bearing once it gave one (the exit is on the
    /// border and never moves, so the rule and the bearing are all a player knows of it
    /// unseen); else, should the rule have no unseen cell left, every unseen cell.
    fn exit_targets(&self, seat: &str, exit: Option<u32>, compass: Option<u32>) -> Vec<u32> {
        if let Some(exit) = exit {
            return vec![exit];
        }
        let g = self.grid;
        let unseen: Vec<u32> = exit_candidates(g, seat).filter(|c| !self.seen(*c)).collect();
        let aimed: Vec<u32> = match (self.memory.bearing, compass) {
            (Some(bearing), Some(compass)) => {
                unseen.iter().copied().filter(|c| g.bearing(compass, *c) == Some(bearing)).collect()
            }
            _ => vec![],
        };
        if !aimed.is_empty() {
            aimed
        } else if !unseen.is_empty() {
            unseen
        } else {
            (0..g.len()).filter(|c| !self.seen(*c)).collect()
        }
    }
}
