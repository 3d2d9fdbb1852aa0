//! The maze: geometry, generation from labelled randomness, object placement, paths.
//!
//! Generation is randomized Kruskal over ONE labelled shuffle of every interior wall: walk
//! the shuffled walls and open each one that joins two cells not yet connected, which gives
//! a perfect maze (every cell reachable, no loop); then open the first `loops` walls the walk
//! kept closed. Placement draws are labelled too, so the trace replays the whole setup.

use std::collections::VecDeque;

use juegoland_sdk::{RandomError, Services};

use crate::model::{Bearing, Direction};

/// A grid of `width × height` cells; cell `index = row * width + column`, row 0 on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub width: u32,
    pub height: u32,
}

impl Grid {
    pub fn len(self) -> u32 {
        self.width * self.height
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn row_col(self, cell: u32) -> (u32, u32) {
        (cell / self.width, cell % self.width)
    }

    pub fn index(self, row: u32, col: u32) -> u32 {
        row * self.width + col
    }

    /// The cell beyond `side` of `cell`, or `None` past the border.
    pub fn neighbour(self, cell: u32, side: Direction) -> Option<u32> {
        let (r, c) = self.row_col(cell);
        match side {
            Direction::North => r.checked_sub(1).map(|r| self.index(r, c)),
            Direction::South => (r + 1 < self.height).then(|| self.index(r + 1, c)),
            Direction::West => c.checked_sub(1).map(|c| self.index(r, c)),
            Direction::East => (c + 1 < self.width).then(|| self.index(r, c + 1)),
        }
    }

    /// The Chebyshev distance between two cells.
    pub fn chebyshev(self, a: u32, b: u32) -> u32 {
        let ((ra, ca), (rb, cb)) = (self.row_col(a), self.row_col(b));
        ra.abs_diff(rb).max(ca.abs_diff(cb))
    }

    /// The cells within Chebyshev distance `radius` of `centre`, clipped by the border, in
    /// index order.
    pub fn square(self, centre: u32, radius: u32) -> impl Iterator<Item = u32> {
        let (r, c) = self.row_col(centre);
        let rows = r.saturating_sub(radius)..=(r + radius).min(self.height - 1);
        let cols = c.saturating_sub(radius)..=(c + radius).min(self.width - 1);
        rows.flat_map(move |row| cols.clone().map(move |col| self.index(row, col)))
    }

    /// The bearing from `from` towards `to` (one of eight), `None` on the same cell.
    pub fn bearing(self, from: u32, to: u32) -> Option<Bearing> {
        let ((rf, cf), (rt, ct)) = (self.row_col(from), self.row_col(to));
        let (dr, dc) = (i64::from(rt) - i64::from(rf), i64::from(ct) - i64::from(cf));
        // Diagonal when the smaller offset is at least half the larger (22.5° sectors are
        // approximated by the 1:2 ratio), else the dominant axis.
        let (ar, ac) = (dr.abs(), dc.abs());
        let vertical = if ar * 2 >= ac { dr.signum() } else { 0 };
        let horizontal = if ac * 2 >= ar { dc.signum() } else { 0 };
        Some(match (vertical, horizontal) {
            (0, 0) => return None,
            (-1, 0) => Bearing::N,
            (-1, 1) => Bearing::Ne,
            (0, 1) => Bearing::E,
            (1, 1) => Bearing::Se,
            (1, 0) => Bearing::S,
            (1, -1) => Bearing::Sw,
            (0, -1) => Bearing::W,
            _ => Bearing::Nw,
        })
    }
}

/// Generates the passages: a perfect maze plus `loops` extra openings.
pub fn generate(grid: Grid, loops: u32, services: &mut Services<'_>) -> Result<Vec<u8>, RandomError> {
    // Every interior wall once: (cell, East) and (cell, South).
    let mut walls = Vec::new();
    for cell in 0..grid.len() {
        for side in [Direction::East, Direction::South] {
            if grid.neighbour(cell, side).is_some() {
                walls.push((cell, side));
            }
        }
    }
    let order = services.random.shuffle("maze.walls", &walls)?;
    let mut sets = UnionFind::new(grid.len() as usize);
    let mut cells = vec![0u8; grid.len() as usize];
    let mut kept = Vec::new();
    for (cell, side) in order {
        let other = grid.neighbour(cell, side).expect("an interior wall");
        if sets.union(cell as usize, other as usize) {
            open(&mut cells, grid, cell, side);
        } else {
            kept.push((cell, side));
        }
    }
    for (cell, side) in kept.into_iter().take(loops as usize) {
        open(&mut cells, grid, cell, side);
    }
    Ok(cells)
}

/// Opens the wall on `side` of `cell` (and the same wall seen from the neighbour).
pub fn open(cells: &mut [u8], grid: Grid, cell: u32, side: Direction) {
    if let Some(other) = grid.neighbour(cell, side) {
        cells[cell as usize] |= side.bit();
        cells[other as usize] |= side.opposite().bit();
    }
}

/// Whether the passage on `side` of `cell` is open.
pub fn is_open(cells: &[u8], cell: u32, side: Direction) -> bool {
    cells.get(cell as usize).is_some_and(|c| c & side.bit() != 0)
}

/// Every cell reachable from `from` through open passages, with the first step of a
/// shortest path to it (`None` for `from` itself and unreachable cells).
pub fn first_steps(cells: &[u8], grid: Grid, from: u32) -> Vec<Option<Direction>> {
    let mut first: Vec<Option<Direction>> = vec![None; cells.len()];
    let mut seen = vec![false; cells.len()];
    let mut queue = VecDeque::from([from]);
    seen[from as usize] = true;
    while let Some(cell) = queue.pop_front() {
        for side in Direction::ALL {
            if !is_open(cells, cell, side) {
                continue;
            }
            let Some(next) = grid.neighbour(cell, side) else { continue };
            if !seen[next as usize] {
                seen[next as usize] = true;
                first[next as usize] = if cell == from { Some(side) } else { first[cell as usize] };
                queue.push_back(next);
            }
        }
    }
    first
}

/// How many cells are reachable from cell 0 (the whole grid in a valid maze).
pub fn reachable(cells: &[u8], grid: Grid) -> usize {
    let steps = first_steps(cells, grid, 0);
    1 + steps.iter().filter(|s| s.is_some()).count()
}

struct UnionFind(Vec<usize>);

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind((0..n).collect())
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    /// Joins the sets of `a` and `b`; false if they were one set already.
    fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.0[ra] = rb;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearings_name_eight_sectors() {
        let g = Grid { width: 9, height: 9 };
        let centre = g.index(4, 4);
        let cases = [
            ((0, 4), Bearing::N),
            ((0, 8), Bearing::Ne),
            ((4, 8), Bearing::E),
            ((8, 8), Bearing::Se),
            ((8, 4), Bearing::S),
            ((8, 0), Bearing::Sw),
            ((4, 0), Bearing::W),
            ((0, 0), Bearing::Nw),
            ((0, 5), Bearing::N),
            ((3, 8), Bearing::E),
        ];
        for ((r, c), expected) in cases {
            assert_eq!(g.bearing(centre, g.index(r, c)), Some(expected), "to ({r}, {c})");
        }
        assert_eq!(g.bearing(centre, centre), None);
    }

    #[test]
    fn a_square_is_the_chebyshev_ball_clipped_by_the_border() {
        let g = Grid { width: 9, height: 7 };
        for centre in 0..g.len() {
            for radius in [0, 1, 3, 6] {
                let square: Vec<u32> = g.square(centre, radius).collect();
                let ball: Vec<u32> = (0..g.len()).filter(|c| g.chebyshev(centre, *c) <= radius).collect();
                assert_eq!(square, ball, "centre {centre}, radius {radius}");
            }
        }
    }

    #[test]
    fn neighbours_stop_at_the_border() {
        let g = Grid { width: 5, height: 6 };
        assert_eq!(g.neighbour(0, Direction::North), None);
        assert_eq!(g.neighbour(0, Direction::West), None);
        assert_eq!(g.neighbour(4, Direction::East), None);
        assert_eq!(g.neighbour(29, Direction::South), None);
        assert_eq!(g.neighbour(7, Direction::North), Some(2));
        assert_eq!(g.chebyshev(0, 29), 5);
    }
}
