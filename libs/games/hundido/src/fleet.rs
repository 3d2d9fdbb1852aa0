//! Fleet geometry shared by the rules, the validator, the bot and tests: ship cells, the
//! placement check (bounds, overlap, adjacency) and a bounded backtracking search that
//! completes a fleet (used to prove a config fits, by the bot, and by the privacy oracle to
//! relocate hidden ships).
//!
//! Nothing here panics on malformed input: unknown ships and off-board cells are errors.

use std::collections::{BTreeMap, BTreeSet};

use juegoland_sdk::{EntropySource, below};

use crate::model::{Adjacency, Cell, Config, Fleet, Orientation, Placement};

/// How many placements the search may try before it gives up (a config it cannot fill within
/// this budget is rejected, so the budget is part of the rules: do not change it without a
/// new rules version).
pub const SEARCH_BUDGET: u32 = 200_000;

/// Why a placement is refused. The reason is a short machine key, safe to show the actor (it
/// only ever speaks of the actor's own fleet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementError {
    UnknownShip,
    OutOfBounds,
    Overlap,
    Adjacent,
}

impl PlacementError {
    pub fn reason(self) -> &'static str {
        match self {
            PlacementError::UnknownShip => "unknown-ship",
            PlacementError::OutOfBounds => "out-of-bounds",
            PlacementError::Overlap => "overlap",
            PlacementError::Adjacent => "adjacent",
        }
    }
}

/// The cells of `ship` placed at `placement`, or why it does not fit on the board.
pub fn cells_of(config: &Config, ship: &str, placement: &Placement) -> Result<Vec<Cell>, PlacementError> {
    let size = config.size_of(ship).ok_or(PlacementError::UnknownShip)?;
    let cells = placement.cells(size);
    let last = match placement.orientation {
        Orientation::Horizontal => u16::from(placement.column) + u16::from(size),
        Orientation::Vertical => u16::from(placement.row) + u16::from(size),
    };
    let limit = match placement.orientation {
        Orientation::Horizontal => u16::from(config.columns),
        Orientation::Vertical => u16::from(config.rows),
    };
    if last > limit || !cells.iter().all(|c| config.contains(*c)) {
        return Err(PlacementError::OutOfBounds);
    }
    Ok(cells)
}

/// Whether two cells share an edge or a corner (or are the same cell).
fn touching(a: Cell, b: Cell) -> bool {
    a.row.abs_diff(b.row) <= 1 && a.column.abs_diff(b.column) <= 1
}

/// Checks placing (or moving) `ship` at `placement` against the board and every OTHER ship
/// of `fleet` (the ship's own current placement, if any, is ignored: placing a placed ship
/// moves it).
pub fn check_placement(
    config: &Config,
    fleet: &Fleet,
    ship: &str,
    placement: &Placement,
) -> Result<(), PlacementError> {
    let cells = cells_of(config, ship, placement)?;
    let mut adjacent = false;
    for (other, p) in fleet.iter().filter(|(name, _)| name.as_str() != ship) {
        let others = cells_of(config, other, p)?;
        if cells.iter().any(|c| others.contains(c)) {
            return Err(PlacementError::Overlap);
        }
        adjacent |= cells.iter().any(|c| others.iter().any(|o| touching(*c, *o)));
    }
    if adjacent && config.adjacency == Adjacency::NoTouch {
        return Err(PlacementError::Adjacent);
    }
    Ok(())
}

/// Checks a whole (possibly partial) fleet: known ships, on the board, no overlap, the
/// adjacency policy.
pub fn check_fleet(config: &Config, fleet: &Fleet) -> Result<(), String> {
    for (ship, p) in fleet {
        check_placement(config, fleet, ship, p).map_err(|e| format!("ship {ship:?}: {}", e.reason()))?;
    }
    Ok(())
}

/// Whether every ship of the configured fleet is placed.
pub fn is_complete(config: &Config, fleet: &Fleet) -> bool {
    fleet.len() == config.fleet.len() && config.fleet.iter().all(|s| fleet.contains_key(&s.ship))
}

/// Every cell of every placed ship.
pub fn occupied(config: &Config, fleet: &Fleet) -> BTreeSet<Cell> {
    fleet.iter().filter_map(|(ship, p)| cells_of(config, ship, p).ok()).flatten().collect()
}

/// The ship of `fleet` covering `cell`, if any.
pub fn ship_at<'a>(config: &Config, fleet: &'a Fleet, cell: Cell) -> Option<&'a str> {
    fleet
        .iter()
        .find(|(ship, p)| cells_of(config, ship, p).is_ok_and(|cells| cells.contains(&cell)))
        .map(|(ship, _)| ship.as_str())
}

/// Every cell `fleet` covers, with its ship: [`ship_at`] for all cells at once (a placement
/// off the board covers nothing; where ships overlap, the first in name order wins, as there).
pub fn occupancy<'a>(config: &Config, fleet: &'a Fleet) -> BTreeMap<Cell, &'a str> {
    let mut cells = BTreeMap::new();
    for (ship, p) in fleet {
        for cell in cells_of(config, ship, p).unwrap_or_default() {
            cells.entry(cell).or_insert(ship.as_str());
        }
    }
    cells
}

/// Completes `fixed` into a full fleet: every ship of the config that `fixed` lacks is
/// placed so that the whole fleet is valid and no new ship covers a cell of `blocked`.
/// With `entropy`, the candidate placements are tried in a random order (a random layout);
/// without, in board order (a deterministic layout). `None` when no completion was found
/// within [`SEARCH_BUDGET`] (or `fixed` itself is invalid).
pub fn complete(
    config: &Config,
    fixed: &Fleet,
    blocked: &BTreeSet<Cell>,
    mut entropy: Option<&mut dyn EntropySource>,
) -> Option<Fleet> {
    let shuffled = complete_with(config, fixed, blocked, |_, mut all| {
        if let Some(e) = entropy.as_deref_mut() {
            for i in (1..all.len()).rev() {
                let j = below(e, i as u64 + 1) as usize;
                all.swap(i, j);
            }
        }
        Ok::<_, std::convert::Infallible>(all)
    });
    match shuffled {
        Ok(fleet) => fleet,
        Err(never) => match never {},
    }
}

/// Completes `fixed` like [`complete`], trying each missing ship's candidate placements
/// (in board order) in the order `order(ship, candidates)` returns; it is called once per
/// missing ship, biggest ships first, before the search. An error of `order` stops it.
pub fn complete_with<E>(
    config: &Config,
    fixed: &Fleet,
    blocked: &BTreeSet<Cell>,
    mut order: impl FnMut(&str, Vec<Placement>) -> Result<Vec<Placement>, E>,
) -> Result<Option<Fleet>, E> {
    if check_fleet(config, fixed).is_err() {
        return Ok(None);
    }
    // Biggest ships first: they have the fewest placements, which prunes early.
    let mut todo: Vec<(&str, u8)> =
        config.fleet.iter().filter(|s| !fixed.contains_key(&s.ship)).map(|s| (s.ship.as_str(), s.size)).collect();
    todo.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    let mut candidates: Vec<Vec<Placement>> = Vec::with_capacity(todo.len());
    for (ship, _) in &todo {
        let all: Vec<Placement> = (0..config.rows)
            .flat_map(|row| {
                (0..config.columns).flat_map(move |column| {
                    [Orientation::Horizontal, Orientation::Vertical]
                        .map(|orientation| Placement::new(row, column, orientation))
                })
            })
            .filter(|p| cells_of(config, ship, p).is_ok_and(|cells| cells.iter().all(|c| !blocked.contains(c))))
            .collect();
        candidates.push(order(ship, all)?);
    }
    let mut fleet = fixed.clone();
    let mut budget = SEARCH_BUDGET;
    Ok(search(config, &todo, &candidates, 0, &mut fleet, &mut budget).then_some(fleet))
}

fn search(
    config: &Config,
    todo: &[(&str, u8)],
    candidates: &[Vec<Placement>],
    i: usize,
    fleet: &mut Fleet,
    budget: &mut u32,
) -> bool {
    let Some((ship, _)) = todo.get(i) else { return true };
    for p in &candidates[i] {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if check_placement(config, fleet, ship, p).is_ok() {
            fleet.insert((*ship).to_owned(), *p);
            if search(config, todo, candidates, i + 1, fleet, budget) {
                return true;
            }
            fleet.remove(*ship);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ShipSpec;

    fn fleet(list: &[(&str, u8, u8, Orientation)]) -> Fleet {
        list.iter().map(|&(s, r, c, o)| (s.to_owned(), Placement::new(r, c, o))).collect()
    }

    #[test]
    fn cells_extend_right_or_down_from_the_bow() {
        let config = Config::default();
        let h = cells_of(&config, "cruiser", &Placement::new(2, 3, Orientation::Horizontal)).unwrap();
        assert_eq!(h, vec![Cell::new(2, 3), Cell::new(2, 4), Cell::new(2, 5)]);
        let v = cells_of(&config, "destroyer", &Placement::new(8, 9, Orientation::Vertical)).unwrap();
        assert_eq!(v, vec![Cell::new(8, 9), Cell::new(9, 9)]);
        for p in [Placement::new(9, 9, Orientation::Vertical), Placement::new(0, 9, Orientation::Horizontal)] {
            assert_eq!(cells_of(&config, "destroyer", &p), Err(PlacementError::OutOfBounds));
        }
        assert_eq!(
            cells_of(&config, "canoe", &Placement::new(0, 0, Orientation::Vertical)),
            Err(PlacementError::UnknownShip)
        );
    }

    #[test]
    fn overlap_and_adjacency_follow_the_policy() {
        let touch = Config::default();
        let no_touch = Config { adjacency: Adjacency::NoTouch, ..Config::default() };
        let f = fleet(&[("carrier", 0, 0, Orientation::Horizontal)]);
        let over = Placement::new(0, 4, Orientation::Vertical);
        let edge = Placement::new(1, 0, Orientation::Horizontal);
        let corner = Placement::new(1, 5, Orientation::Vertical);
        let apart = Placement::new(2, 0, Orientation::Horizontal);
        for config in [&touch, &no_touch] {
            assert_eq!(check_placement(config, &f, "battleship", &over), Err(PlacementError::Overlap));
            assert_eq!(check_placement(config, &f, "battleship", &apart), Ok(()));
        }
        assert_eq!(check_placement(&touch, &f, "battleship", &edge), Ok(()));
        assert_eq!(check_placement(&touch, &f, "battleship", &corner), Ok(()));
        assert_eq!(check_placement(&no_touch, &f, "battleship", &edge), Err(PlacementError::Adjacent));
        assert_eq!(check_placement(&no_touch, &f, "battleship", &corner), Err(PlacementError::Adjacent));
        // Moving a ship ignores its own old cells.
        assert_eq!(check_placement(&no_touch, &f, "carrier", &Placement::new(0, 1, Orientation::Horizontal)), Ok(()));
    }

    #[test]
    fn completion_respects_fixed_ships_and_blocked_cells() {
        let config = Config { adjacency: Adjacency::NoTouch, ..Config::default() };
        let fixed = fleet(&[("destroyer", 4, 4, Orientation::Vertical)]);
        let blocked: BTreeSet<Cell> = (0..10).map(|c| Cell::new(0, c)).collect();
        let full = complete(&config, &fixed, &blocked, None).unwrap();
        assert!(is_complete(&config, &full));
        check_fleet(&config, &full).unwrap();
        assert_eq!(full["destroyer"], fixed["destroyer"]);
        for (ship, p) in full.iter().filter(|(s, _)| s.as_str() != "destroyer") {
            assert!(cells_of(&config, ship, p).unwrap().iter().all(|c| !blocked.contains(c)));
        }
        let mut e = juegoland_sdk::SplitMix64(5);
        let random = complete(&config, &Fleet::new(), &BTreeSet::new(), Some(&mut e)).unwrap();
        check_fleet(&config, &random).unwrap();
        assert!(is_complete(&config, &random));
    }

    #[test]
    fn an_impossible_fleet_has_no_completion() {
        let config = Config {
            rows: 6,
            columns: 6,
            fleet: (0..10).map(|i| ShipSpec::new(&format!("s{i}"), 4)).collect(),
            adjacency: Adjacency::NoTouch,
            keep_turn_on_hit: false,
            clock: None,
        };
        assert_eq!(complete(&config, &Fleet::new(), &BTreeSet::new(), None), None);
    }
}
