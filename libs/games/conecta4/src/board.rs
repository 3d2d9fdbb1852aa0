//! Grid helpers shared by the rules and the validator. They never panic on a malformed grid:
//! [`shape`] checks the dimensions first, and every other helper indexes with `get`.

use std::collections::BTreeSet;

use crate::model::{Cell, Config, Disc, Grid};

/// The four line directions as (row step, column step): horizontal, vertical and both
/// diagonals. Each line is found from either end, so the opposite directions are not needed.
const DIRECTIONS: [(isize, isize); 4] = [(0, 1), (1, 0), (1, 1), (1, -1)];

/// An empty grid for `config`.
pub(crate) fn empty(config: &Config) -> Grid {
    vec![vec![None; usize::from(config.columns)]; usize::from(config.rows)]
}

/// Checks that `grid` has exactly `rows` rows of `columns` cells.
pub(crate) fn shape(config: &Config, grid: &Grid) -> Result<(), String> {
    if grid.len() != usize::from(config.rows) {
        return Err(format!("grid has {} rows, config says {}", grid.len(), config.rows));
    }
    if let Some((r, row)) = grid.iter().enumerate().find(|(_, row)| row.len() != usize::from(config.columns)) {
        return Err(format!("grid row {r} has {} cells, config says {}", row.len(), config.columns));
    }
    Ok(())
}

pub(crate) fn at(grid: &Grid, row: isize, column: isize) -> Option<Disc> {
    let (row, column) = (usize::try_from(row).ok()?, usize::try_from(column).ok()?);
    grid.get(row)?.get(column).copied().flatten()
}

/// The number of discs stacked from the bottom of `column`: the row where the next disc
/// lands. On a grid without floating discs this is the column's disc count.
pub(crate) fn height(grid: &Grid, column: usize) -> usize {
    grid.iter().take_while(|row| row.get(column).copied().flatten().is_some()).count()
}

/// Every maximal run of at least `connect` equal discs through `(row, column)`, as sorted,
/// deduplicated cells; `None` when there is no such run.
pub(crate) fn line_through(grid: &Grid, row: usize, column: usize, connect: usize) -> Option<Vec<Cell>> {
    let (r0, c0) = (row as isize, column as isize);
    let disc = at(grid, r0, c0)?;
    let mut cells = BTreeSet::new();
    for (dr, dc) in DIRECTIONS {
        let mut run = vec![(r0, c0)];
        for sign in [1, -1] {
            let (mut r, mut c) = (r0 + sign * dr, c0 + sign * dc);
            while at(grid, r, c) == Some(disc) {
                run.push((r, c));
                r += sign * dr;
                c += sign * dc;
            }
        }
        if run.len() >= connect {
            cells.extend(run.into_iter().map(|(r, c)| Cell { row: r as u8, column: c as u8 }));
        }
    }
    (!cells.is_empty()).then(|| cells.into_iter().collect())
}

/// Whether `disc` has `connect` in a row anywhere on the grid.
pub(crate) fn has_line(grid: &Grid, disc: Disc, connect: usize) -> bool {
    grid.iter().enumerate().any(|(r, row)| {
        row.iter().enumerate().any(|(c, cell)| {
            *cell == Some(disc)
                && DIRECTIONS.iter().any(|(dr, dc)| {
                    (1..connect as isize).all(|k| at(grid, r as isize + k * dr, c as isize + k * dc) == Some(disc))
                })
        })
    })
}

/// How many discs each seat has, as `[p0, p1]`.
pub(crate) fn counts(grid: &Grid) -> [u32; 2] {
    let mut counts = [0; 2];
    for cell in grid.iter().flatten().flatten() {
        counts[usize::from(*cell == Disc::P1)] += 1;
    }
    counts
}
