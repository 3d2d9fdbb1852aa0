//! What each player has seen: the rules update every player's [`Memory`] after every
//! transition from exactly what that player's view shows at the new position (`view.rs`:
//! the Chebyshev square, the ground keys in it, the rival and the key it carries while the
//! rival is in it, the own status). The bot (`bot.rs`) plans on it alone.

use crate::maze::Grid;
use crate::model::{CellSet, Data, Memory, Player, Sighting};
use crate::view::radius;

/// A memory of nothing yet (`look` fills it in at setup).
pub fn blank(g: Grid) -> Memory {
    Memory { seen: CellSet::empty(g.len()), swept: CellSet::empty(g.len()), keys: Default::default(), bearing: None }
}

/// A player as the match starts: on `cell`, carrying nothing, having seen nothing.
pub fn newcomer(cell: u32, g: Grid) -> Player {
    Player {
        cell,
        inventory: None,
        vision_moves: 0,
        compass: None,
        last_ms: None,
        last_move_ms: None,
        exited_ms: None,
        memory: blank(g),
    }
}

/// Updates every player's memory with what its view shows in `data`: the cells of its
/// square are seen and swept; each key is sighted where the view shows it (on the ground in
/// the square, or carried by the rival in the square), forgotten while the player carries it
/// or when the view shows its last sighting's cell without it; the own compass's bearing is
/// kept. The sweep starts over from the square when the player's own key is seen gone, or
/// when it has covered every cell.
pub fn look(data: &mut Data, g: Grid) {
    let seats: Vec<String> = data.players.keys().cloned().collect();
    for seat in seats {
        let memory = looked(data, g, &seat);
        data.players.get_mut(&seat).expect("a player of the position").memory = memory;
    }
}

/// `seat`'s memory after looking at `data`.
fn looked(data: &Data, g: Grid, seat: &str) -> Memory {
    let me = &data.players[seat];
    let r = radius(data, seat);
    let visible = |cell: u32| g.chebyshev(me.cell, cell) <= r;
    let rival = data.players.iter().find(|(s, pl)| s.as_str() != seat && pl.exited_ms.is_none() && visible(pl.cell));
    let mut memory = me.memory.clone();
    let square: Vec<u32> = g.square(me.cell, r).collect();
    for cell in &square {
        memory.seen.insert(*cell);
        memory.swept.insert(*cell);
    }
    let mut own_key_lost = false;
    for (owner, ground) in &data.ground_keys {
        let sighting = if me.inventory.as_ref() == Some(owner) {
            None
        } else if let Some(cell) = ground.filter(|c| visible(*c)) {
            Some(Sighting { cell, carried: false })
        } else if let Some((_, carrier)) = rival.filter(|(_, pl)| pl.inventory.as_ref() == Some(owner)) {
            Some(Sighting { cell: carrier.cell, carried: true })
        } else {
            match memory.keys.get(owner) {
                Some(last) if visible(last.cell) => {
                    own_key_lost |= owner == seat;
                    None
                }
                last => last.copied(),
            }
        };
        match sighting {
            Some(s) => memory.keys.insert(owner.clone(), s),
            None => memory.keys.remove(owner),
        };
    }
    if own_key_lost || memory.swept.len() == g.len() as usize {
        memory.swept.clear();
        for cell in &square {
            memory.swept.insert(*cell);
        }
    }
    if me.compass.is_some() {
        memory.bearing = me.compass;
    }
    memory
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{Bearing, Direction, Exit, Player};

    const G: Grid = Grid { width: 9, height: 9 };

    fn player(cell: u32) -> Player {
        newcomer(cell, G)
    }

    /// p0 top-left, p1 bottom-right, p0's key at (0, 4), p1's at (8, 4).
    fn data() -> Data {
        let exit = |cell, side| Exit { cell, side, open: false };
        Data {
            seq: 0,
            meeting_seq: 0,
            cells: vec![0; G.len() as usize],
            players: BTreeMap::from([("p0".into(), player(0)), ("p1".into(), player(80))]),
            ground_keys: BTreeMap::from([("p0".into(), Some(4)), ("p1".into(), Some(76))]),
            compasses: BTreeMap::from([("p0".into(), 40), ("p1".into(), 41)]),
            exits: BTreeMap::from([
                ("p0".into(), exit(73, Direction::South)),
                ("p1".into(), exit(7, Direction::North)),
            ]),
            artifacts: vec![],
            starts_ms: 0,
            finish: None,
        }
    }

    fn set(d: &Data, seat: &str, of: impl Fn(&Memory) -> &CellSet) -> Vec<u32> {
        (0..G.len()).filter(|c| of(&d.players[seat].memory).contains(*c)).collect()
    }

    fn mv(d: &mut Data, seat: &str, cell: u32) {
        d.players.get_mut(seat).unwrap().cell = cell;
        look(d, G);
    }

    #[test]
    fn a_player_has_seen_every_cell_ever_in_its_square() {
        let mut d = data();
        look(&mut d, G);
        let square: Vec<u32> = G.square(0, 3).collect();
        assert_eq!(set(&d, "p0", |m| &m.seen), square);
        assert_eq!(set(&d, "p0", |m| &m.swept), square);
        mv(&mut d, "p0", 1);
        let both: Vec<u32> = (0..G.len()).filter(|c| G.chebyshev(0, *c) <= 3 || G.chebyshev(1, *c) <= 3).collect();
        assert_eq!(set(&d, "p0", |m| &m.seen), both, "nothing seen is forgotten");
        d.players.get_mut("p0").unwrap().vision_moves = 5;
        look(&mut d, G);
        assert_eq!(set(&d, "p0", |m| &m.seen).len(), 7 * 8, "a vision effect widens the square");
    }

    #[test]
    fn a_key_is_remembered_where_last_seen_and_forgotten_when_seen_gone() {
        let mut d = data();
        look(&mut d, G);
        assert_eq!(d.players["p0"].memory.keys.get("p0"), None, "(0, 4) is out of sight");
        mv(&mut d, "p0", 1);
        let there = Sighting { cell: 4, carried: false };
        assert_eq!(d.players["p0"].memory.keys.get("p0"), Some(&there));
        assert_eq!(d.players["p1"].memory.keys.get("p0"), None, "p1 never saw it");
        // The rival takes it out of p0's sight: p0 still believes it there.
        mv(&mut d, "p0", 0);
        d.ground_keys.insert("p0".into(), None);
        d.players.get_mut("p1").unwrap().inventory = Some("p0".into());
        mv(&mut d, "p1", 8);
        assert_eq!(d.players["p0"].memory.keys.get("p0"), Some(&there));
        // Back in sight of (0, 4): gone, and the sweep for it starts over from the square.
        mv(&mut d, "p0", 1);
        assert_eq!(d.players["p0"].memory.keys.get("p0"), None);
        assert_eq!(set(&d, "p0", |m| &m.swept), G.square(1, 3).collect::<Vec<_>>());
        // The rival in sight with it: carried, at the rival's cell.
        mv(&mut d, "p1", 3);
        assert_eq!(d.players["p0"].memory.keys.get("p0"), Some(&Sighting { cell: 3, carried: true }));
        // A key one carries is not a sighting.
        d.players.get_mut("p1").unwrap().inventory = None;
        d.players.get_mut("p0").unwrap().inventory = Some("p0".into());
        look(&mut d, G);
        assert_eq!(d.players["p0"].memory.keys.get("p0"), None);
    }

    #[test]
    fn a_sweep_that_covered_every_cell_starts_over() {
        let mut d = data();
        for cell in [0, 4, 8, 36, 40, 44, 72, 76, 80] {
            mv(&mut d, "p0", cell);
        }
        assert_eq!(set(&d, "p0", |m| &m.seen).len(), 81);
        assert_eq!(set(&d, "p0", |m| &m.swept), G.square(80, 3).collect::<Vec<_>>());
    }

    #[test]
    fn the_compass_bearing_is_kept_after_the_compass_clears_it() {
        let mut d = data();
        d.players.get_mut("p0").unwrap().compass = Some(Bearing::S);
        mv(&mut d, "p0", 40);
        d.players.get_mut("p0").unwrap().compass = None;
        mv(&mut d, "p0", 41);
        assert_eq!(d.players["p0"].memory.bearing, Some(Bearing::S));
        assert_eq!(d.players["p1"].memory.bearing, None);
    }
}
