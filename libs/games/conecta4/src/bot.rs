//! The `default` bot: negamax with alpha-beta pruning on a bitboard.
//!
//! Layout: column `c`, row `r` (row 0 at the bottom) is bit `c * (rows + 1) + r`. Each column
//! has one spare bit on top that is never set, so shifted lines cannot wrap from one column
//! into the next. The largest board (10 × 10) uses 110 of a `u128`'s bits.
//!
//! The search is deterministic: it counts nodes, never time. It deepens one ply at a time
//! from [`MIN_DEPTH`] up to [`MAX_DEPTH`] while the node budget allows; the entropy source
//! only breaks ties between root moves of exactly equal score.
//!
//! Pruning rules taken at every node: a side that can complete a line wins at once; a side
//! facing two immediate threats loses; a side facing one must block it; and no side plays
//! directly below a cell where the rival would complete a line.

use juegoland_sdk::EntropySource;
use juegoland_sdk::random::below;

use crate::model::{Config, Disc, Grid};

/// Plies always searched (fewer only when the board has fewer empty cells). Depths are
/// odd: the leaf is then quiet for the side that just moved, and the leaf checks (a win in
/// one, a double threat) look one ply further, which removes the even/odd swing of the
/// heuristic.
pub const MIN_DEPTH: u32 = 7;
/// Plies never exceeded.
pub const MAX_DEPTH: u32 = 11;
/// Nodes the iterative deepening may spend; keeps a 7 × 6 answer in a few milliseconds.
const NODE_BUDGET: u64 = 40_000;
/// The bonus per disc in the centre column(s), which take part in the most lines.
const CENTRE_BONUS: i32 = 3;

const WIN: i32 = 1_000_000;

/// A position as seen by the side to move.
#[derive(Clone, Copy, Debug)]
struct State {
    /// The discs of the side to move.
    own: u128,
    /// Every disc on the board.
    mask: u128,
    moves: u32,
}

struct Search {
    h1: u32,
    connect: u32,
    cells: u32,
    columns: usize,
    bottom: u128,
    board: u128,
    /// The centre column, or the two central columns of an even-width board.
    centre: u128,
    /// Every window of `connect` cells in a line, as a bit mask.
    windows: Vec<u128>,
    /// Columns, centre first.
    order: Vec<usize>,
    nodes: u64,
}

impl Search {
    fn new(config: &Config) -> Self {
        let (rows, columns) = (u32::from(config.rows), u32::from(config.columns));
        let h1 = rows + 1;
        let bit = |c: i64, r: i64| -> Option<u128> {
            ((0..i64::from(columns)).contains(&c) && (0..i64::from(rows)).contains(&r))
                .then(|| 1u128 << (c as u32 * h1 + r as u32))
        };
        let mut bottom = 0;
        let mut board = 0;
        for c in 0..i64::from(columns) {
            bottom |= bit(c, 0).unwrap_or(0);
            for r in 0..i64::from(rows) {
                board |= bit(c, r).unwrap_or(0);
            }
        }
        let n = i64::from(config.connect);
        let mut windows = Vec::new();
        for c in 0..i64::from(columns) {
            for r in 0..i64::from(rows) {
                for (dc, dr) in [(1, 0), (0, 1), (1, 1), (1, -1)] {
                    let cells: Option<u128> = (0..n).map(|k| bit(c + k * dc, r + k * dr)).sum();
                    windows.extend(cells);
                }
            }
        }
        // Distances from the centre are doubled so that they stay integers.
        let distance = |c: usize| (2 * c as i64 - (i64::from(columns) - 1)).abs();
        let mut order: Vec<usize> = (0..columns as usize).collect();
        // A stable sort keeps the left one of two equally central columns first.
        order.sort_by_key(|c| distance(*c));
        let mut centre = 0;
        for c in order.iter().copied().filter(|c| distance(*c) <= 1) {
            for r in 0..i64::from(rows) {
                centre |= bit(c as i64, r).unwrap_or(0);
            }
        }
        Self {
            h1,
            connect: u32::from(config.connect),
            cells: rows * columns,
            columns: columns as usize,
            bottom,
            board,
            centre,
            windows,
            order,
            nodes: 0,
        }
    }

    fn column_mask(&self, c: usize) -> u128 {
        ((1u128 << (self.h1 - 1)) - 1) << (c as u32 * self.h1)
    }

    /// Empty cells where the next disc of each column would land.
    fn playable(&self, s: &State) -> u128 {
        (s.mask + self.bottom) & self.board
    }

    fn play(&self, s: &State, c: usize) -> State {
        let landing = self.playable(s) & self.column_mask(c);
        State { own: s.own ^ s.mask, mask: s.mask | landing, moves: s.moves + 1 }
    }

    /// Empty cells that would complete a line for `discs`.
    fn threats(&self, discs: u128, mask: u128) -> u128 {
        let empty = !mask & self.board;
        let n = self.connect as i64;
        let mut out = 0;
        for step in [1, self.h1 - 1, self.h1, self.h1 + 1] {
            let step = i64::from(step);
            for gap in 0..n {
                let mut acc = empty;
                for k in (0..n).filter(|k| *k != gap) {
                    let offset = (k - gap) * step;
                    acc &= if offset > 0 { discs >> offset } else { discs << -offset };
                }
                out |= acc;
            }
        }
        out
    }

    /// Scores a quiet position for the side to move: open windows weighted by how close they
    /// are to a line.
    fn evaluate(&self, s: &State) -> i32 {
        let opp = s.own ^ s.mask;
        let n = self.connect;
        let weight = |have: u32| match n - have {
            1 => 40,
            2 => 8,
            _ => 1,
        };
        let mut score =
            CENTRE_BONUS * ((s.own & self.centre).count_ones() as i32 - (opp & self.centre).count_ones() as i32);
        for w in &self.windows {
            let (a, b) = ((w & s.own).count_ones(), (w & opp).count_ones());
            if b == 0 && a > 0 {
                score += weight(a);
            } else if a == 0 && b > 0 {
                score -= weight(b);
            }
        }
        score
    }

    /// Moves that do not lose at once, given the rival's threats; `None` when every move loses
    /// on the next ply.
    fn non_losing(&self, s: &State) -> Option<u128> {
        let playable = self.playable(s);
        let rival = self.threats(s.own ^ s.mask, s.mask);
        let forced = playable & rival;
        let candidates = match forced.count_ones() {
            0 => playable,
            1 => forced,
            _ => return None,
        };
        let safe = candidates & !(rival >> 1);
        (safe != 0).then_some(safe)
    }

    fn negamax(&mut self, s: &State, depth: u32, mut alpha: i32, beta: i32, ply: i32) -> i32 {
        self.nodes += 1;
        if s.moves == self.cells {
            return 0;
        }
        let playable = self.playable(s);
        if self.threats(s.own, s.mask) & playable != 0 {
            return WIN - ply - 1;
        }
        let Some(candidates) = self.non_losing(s) else {
            return -(WIN - ply - 2);
        };
        if depth == 0 {
            return self.evaluate(s);
        }
        let mut best = -WIN;
        for i in 0..self.order.len() {
            let c = self.order[i];
            if candidates & self.column_mask(c) == 0 {
                continue;
            }
            let score = -self.negamax(&self.play(s, c), depth - 1, -beta, -alpha, ply + 1);
            if score > best {
                best = score;
            }
            if score > alpha {
                alpha = score;
            }
            if alpha >= beta {
                break;
            }
        }
        best
    }

    /// The root: every candidate column with its exact score when it ties or beats the best.
    fn root(&mut self, s: &State, candidates: &[usize], depth: u32) -> Vec<(usize, i32)> {
        let mut best = -WIN - 1;
        let mut scored = Vec::with_capacity(candidates.len());
        for &c in candidates {
            // A window just under the best so far keeps ties exact, so they can be broken.
            let score = -self.negamax(&self.play(s, c), depth - 1, -WIN - 1, -(best - 1), 1);
            best = best.max(score);
            scored.push((c, score));
        }
        scored.retain(|(_, score)| *score == best);
        scored
    }
}

/// The bot's column for `seat` on `grid` (already validated against `config`), or `None` if
/// no column is free.
pub(crate) fn choose(config: &Config, grid: &Grid, seat: Disc, entropy: &mut dyn EntropySource) -> Option<u8> {
    let mut search = Search::new(config);
    let mut s = State { own: 0, mask: 0, moves: 0 };
    for (r, row) in grid.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            if let Some(d) = cell {
                let bit = 1u128 << (c as u32 * search.h1 + r as u32);
                s.mask |= bit;
                s.moves += 1;
                if *d == seat {
                    s.own |= bit;
                }
            }
        }
    }
    let playable = search.playable(&s);
    let columns_of = |set: u128| -> Vec<usize> {
        search.order.iter().copied().filter(|c| set & search.column_mask(*c) != 0).collect()
    };
    let wins = columns_of(search.threats(s.own, s.mask) & playable);
    let pick = |options: &[usize], entropy: &mut dyn EntropySource| -> Option<u8> {
        let i = if options.len() > 1 { below(entropy, options.len() as u64) as usize } else { 0 };
        options.get(i).map(|c| *c as u8)
    };
    if !wins.is_empty() {
        return pick(&wins, entropy);
    }
    let candidates = columns_of(search.non_losing(&s).unwrap_or(playable));
    if candidates.len() <= 1 {
        return pick(&candidates, entropy);
    }
    let empties = search.cells - s.moves;
    let mut depth = MIN_DEPTH.min(empties);
    let best: Vec<usize> = loop {
        let before = search.nodes;
        let scored = search.root(&s, &candidates, depth);
        let spent = search.nodes - before;
        // A decided result needs no deeper look.
        let decided = scored.first().is_some_and(|(_, score)| score.abs() > WIN / 2);
        // Two more plies cost roughly the branching factor times this depth.
        let next = spent.saturating_mul(search.columns as u64 + 1);
        if decided || depth >= MAX_DEPTH.min(empties) || search.nodes + next > NODE_BUDGET {
            break scored.iter().map(|(c, _)| *c).collect();
        }
        depth += 2;
    };
    pick(&best, entropy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_line_of_the_classic_board() {
        let s = Search::new(&Config::default());
        // 24 horizontal, 21 vertical, 12 + 12 diagonal.
        assert_eq!(s.windows.len(), 69);
        assert_eq!(s.order, vec![3, 2, 4, 1, 5, 0, 6]);
    }

    #[test]
    fn threats_find_the_gap_of_a_broken_line_but_never_wrap_columns() {
        let config = Config::default();
        let s = Search::new(&config);
        let bit = |c: u32, r: u32| 1u128 << (c * s.h1 + r);
        // Bottom row: columns 0, 1 and 3; the gap at column 2 completes the line.
        let discs = bit(0, 0) | bit(1, 0) | bit(3, 0);
        assert_eq!(s.threats(discs, discs), bit(2, 0));
        // Three discs at the top of column 0 and one at the bottom of column 1 are not a line.
        let discs = bit(0, 3) | bit(0, 4) | bit(0, 5);
        let others = bit(0, 0) | bit(0, 1) | bit(0, 2);
        assert_eq!(s.threats(discs, discs | others), 0);
    }
}
