//! The `default` bot. Deterministic given its entropy, and it only ever uses what its seat
//! may know: its own fleet, and about the rival only its own shots' outcomes and the sunk
//! ships' cells (never an undiscovered ship).
//!
//! Placement: one ship per call, then `ready`. Each call completes the current fleet into a
//! random valid layout (keeping the ships already placed) and places the first unplaced
//! ship where that layout puts it; a fleet the bot started itself therefore always
//! completes. If the placed ships admit no completion (a seat handed to the bot mid-way with
//! an awkward layout), the bot moves a ship towards a layout found from scratch.
//!
//! Battle: hunt and target. With open hits (hit cells of ships not yet sunk) it targets:
//! first the cells that extend a line of two or more open hits, then any neighbour of an
//! open hit. Otherwise it hunts on a parity lattice spaced by the smallest ship still afloat
//! (with `no-touch`, it also skips cells next to sunk ships, which must be water). Ties are
//! broken with the entropy.

use std::collections::BTreeSet;

use juegoland_sdk::{EntropySource, below};

use crate::fleet;
use crate::model::{Action, Adjacency, Cell, Config, Data, Fleet, Orientation, Placement, ShotOutcome, Side};

fn pick<T: Copy>(items: &[T], entropy: &mut dyn EntropySource) -> Option<T> {
    if items.is_empty() { None } else { Some(items[below(entropy, items.len() as u64) as usize]) }
}

fn place(ship: &str, p: Placement) -> Action {
    Action::place(ship, p.row, p.column, p.orientation)
}

pub(crate) fn arrange(config: &Config, own: &Fleet, entropy: &mut dyn EntropySource) -> Action {
    let unplaced = config.fleet.iter().find(|s| !own.contains_key(&s.ship));
    let Some(next) = unplaced else { return Action::ready() };
    let none = BTreeSet::new();
    let layout =
        fleet::complete(config, own, &none, Some(&mut *entropy)).or_else(|| fleet::complete(config, own, &none, None));
    if let Some(layout) = layout {
        return place(&next.ship, layout[&next.ship]);
    }
    // Stuck: head for a layout from scratch, one legal move at a time.
    if let Some(target) = fleet::complete(config, &Fleet::new(), &none, None) {
        for spec in &config.fleet {
            let p = target[&spec.ship];
            if own.get(&spec.ship) != Some(&p) && fleet::check_placement(config, own, &spec.ship, &p).is_ok() {
                return place(&spec.ship, p);
            }
        }
    }
    // Last resort: any legal placement of any ship (a move, so the bot never stalls on an
    // illegal action).
    let options: Vec<(usize, Placement)> = config
        .fleet
        .iter()
        .enumerate()
        .flat_map(|(i, spec)| {
            (0..config.rows)
                .flat_map(move |row| {
                    (0..config.columns).flat_map(move |column| {
                        [Orientation::Horizontal, Orientation::Vertical]
                            .map(move |o| (i, Placement::new(row, column, o)))
                    })
                })
                .filter(|(_, p)| fleet::check_placement(config, own, &spec.ship, p).is_ok())
        })
        .collect();
    match pick(&options, entropy) {
        Some((i, p)) => place(&config.fleet[i].ship, p),
        // Every ship is already where it can only be: re-placing the first one is legal.
        None => place(&next.ship, Placement::new(0, 0, Orientation::Horizontal)),
    }
}

const NEIGHBOURS: [(i16, i16); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];

fn step(config: &Config, c: Cell, dr: i16, dc: i16) -> Option<Cell> {
    let (r, col) = (i16::from(c.row) + dr, i16::from(c.column) + dc);
    let cell = Cell::new(u8::try_from(r).ok()?, u8::try_from(col).ok()?);
    config.contains(cell).then_some(cell)
}

pub(crate) fn fire(config: &Config, data: &Data, side: Side, entropy: &mut dyn EntropySource) -> Option<Action> {
    let mine: Vec<_> = data.shots.iter().filter(|s| s.seat == side).collect();
    let fired: BTreeSet<Cell> = mine.iter().map(|s| s.cell()).collect();
    let sunk_cells: BTreeSet<Cell> = sunk_cells(config, data, side);
    let open: Vec<Cell> = mine
        .iter()
        .filter(|s| s.outcome == ShotOutcome::Hit)
        .map(|s| s.cell())
        .filter(|c| !sunk_cells.contains(c))
        .collect();
    let free = |c: &Cell| !fired.contains(c);

    if !open.is_empty() {
        // Extend lines of two or more open hits.
        let mut line: BTreeSet<Cell> = BTreeSet::new();
        for a in &open {
            for (dr, dc) in [(0i16, 1i16), (1, 0)] {
                let Some(b) = step(config, *a, dr, dc) else { continue };
                if !open.contains(&b) {
                    continue;
                }
                for (start, sr, sc) in [(*a, -dr, -dc), (b, dr, dc)] {
                    let mut c = start;
                    while let Some(n) = step(config, c, sr, sc) {
                        if open.contains(&n) {
                            c = n;
                            continue;
                        }
                        if free(&n) {
                            line.insert(n);
                        }
                        break;
                    }
                }
            }
        }
        let line: Vec<Cell> = line.into_iter().collect();
        if let Some(c) = pick(&line, entropy) {
            return Some(Action::fire(c.row, c.column));
        }
        let around: BTreeSet<Cell> = open
            .iter()
            .flat_map(|a| NEIGHBOURS.iter().filter_map(|(dr, dc)| step(config, *a, *dr, *dc)))
            .filter(free)
            .collect();
        let around: Vec<Cell> = around.into_iter().collect();
        if let Some(c) = pick(&around, entropy) {
            return Some(Action::fire(c.row, c.column));
        }
    }

    // Hunt.
    let sunk_names: BTreeSet<&str> = mine.iter().filter_map(|s| s.ship.as_deref()).collect();
    let spacing =
        config.fleet.iter().filter(|s| !sunk_names.contains(s.ship.as_str())).map(|s| s.size).min().unwrap_or(1).max(1);
    let water_for_sure = |c: &Cell| {
        config.adjacency == Adjacency::NoTouch
            && sunk_cells.iter().any(|s| s.row.abs_diff(c.row) <= 1 && s.column.abs_diff(c.column) <= 1)
    };
    let all: Vec<Cell> =
        (0..config.rows).flat_map(|r| (0..config.columns).map(move |c| Cell::new(r, c))).filter(free).collect();
    let useful: Vec<Cell> = all.iter().copied().filter(|c| !water_for_sure(c)).collect();
    let lattice: Vec<Cell> =
        useful.iter().copied().filter(|c| (u16::from(c.row) + u16::from(c.column)) % u16::from(spacing) == 0).collect();
    let c = pick(&lattice, entropy).or_else(|| pick(&useful, entropy)).or_else(|| pick(&all, entropy))?;
    Some(Action::fire(c.row, c.column))
}

/// The cells of the rival's ships that `side` sank. They are public (every recipient sees
/// them in `shot.fired` and in the view), so reading the rival's fleet for exactly these
/// ships tells the bot nothing hidden.
fn sunk_cells(config: &Config, data: &Data, side: Side) -> BTreeSet<Cell> {
    let rival = &data.players[side.other().index()].fleet;
    data.shots
        .iter()
        .filter(|s| s.seat == side && s.outcome == ShotOutcome::Sunk)
        .filter_map(|s| s.ship.as_deref())
        .filter_map(|ship| fleet::cells_of(config, ship, rival.get(ship)?).ok())
        .flatten()
        .collect()
}
