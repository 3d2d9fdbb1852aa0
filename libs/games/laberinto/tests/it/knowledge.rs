//! What a seat knows: each player's memory is exactly what its views showed, folded in
//! order; and the bot's choice depends on nothing else — two positions identical in all the
//! seat has seen but different elsewhere get the same move.

use std::collections::BTreeMap;

use juegoland_laberinto::maze::{self, Grid, first_steps};
use juegoland_laberinto::model::{CellSet, Memory, ObjectKind, Sighting, Status};
use juegoland_laberinto::view::radius;
use juegoland_laberinto::{Action, Direction, Laberinto, VISION_MOVES};
use juegoland_sdk::{EntropySource, Game, Pos, SplitMix64, below};
use proptest::prelude::*;
use serde_json::json;

use crate::engine::Match;
use crate::props::random_play;

fn grid_of(p: &Pos<Laberinto>) -> Grid {
    Grid { width: p.config.width, height: p.config.height }
}

fn rival(seat: &str) -> &'static str {
    if seat == "p0" { "p1" } else { "p0" }
}

/// A player's memory rebuilt from the views it was sent, one per revision, in order.
struct Recollection {
    seen: CellSet,
    swept: CellSet,
    keys: BTreeMap<String, Sighting>,
    bearing: Option<juegoland_laberinto::model::Bearing>,
}

impl Recollection {
    fn new(cells: u32) -> Recollection {
        Recollection { seen: CellSet::empty(cells), swept: CellSet::empty(cells), keys: BTreeMap::new(), bearing: None }
    }

    /// Folds in one view (`seat`'s, at the next revision).
    fn view(&mut self, seat: &str, view: &juegoland_laberinto::View, cells: u32) {
        let records = &view.records;
        let Some(Status::Player(status)) = &records[0].status else { panic!("a player's view") };
        let visible: Vec<u32> = records.iter().flat_map(|r| &r.cells).map(|c| c.index).collect();
        for cell in &visible {
            self.seen.insert(*cell);
            self.swept.insert(*cell);
        }
        let mut lost = false;
        for owner in ["p0", "p1"] {
            let shown = records
                .iter()
                .flat_map(|r| &r.objects)
                .find(|o| o.kind == ObjectKind::Key && o.owner.as_deref() == Some(owner))
                .map(|o| Sighting { cell: o.cell, carried: o.variant.as_deref() == Some("carried") });
            match (status.inventory.as_deref() == Some(owner), shown) {
                (true, _) => {
                    self.keys.remove(owner);
                }
                (false, Some(s)) => {
                    self.keys.insert(owner.into(), s);
                }
                (false, None) => {
                    if self.keys.get(owner).is_some_and(|s| visible.contains(&s.cell)) {
                        self.keys.remove(owner);
                        lost |= owner == seat;
                    }
                }
            }
        }
        if lost || self.swept.len() == cells as usize {
            self.swept.clear();
            for cell in &visible {
                self.swept.insert(*cell);
            }
        }
        if status.compass.is_some() {
            self.bearing = status.compass;
        }
    }

    fn matches(&self, memory: &Memory) -> bool {
        self.seen == memory.seen
            && self.swept == memory.swept
            && self.keys == memory.keys
            && self.bearing == memory.bearing
    }
}

/// Everything `seat` has not seen, changed at random: the walls between two unseen cells,
/// the rival out of sight (cell, vision, carried key, memory), the keys out of sight, the
/// compasses, exits and artifacts on unseen cells or out of sight.
fn unseen_scrambled(p: &Pos<Laberinto>, seat: &str, rng: &mut dyn EntropySource) -> Pos<Laberinto> {
    let g = grid_of(p);
    let mut q = p.clone();
    let d = &mut q.data;
    let me = d.players[seat].clone();
    let seen = |c: u32| me.memory.seen.contains(c);
    let r = radius(d, seat);
    let visible = |c: u32| g.chebyshev(me.cell, c) <= r;
    let pick = |cells: &[u32], rng: &mut dyn EntropySource| cells[below(rng, cells.len() as u64) as usize];
    let unseen: Vec<u32> = (0..g.len()).filter(|c| !seen(*c)).collect();
    let hidden: Vec<u32> = (0..g.len()).filter(|c| !visible(*c)).collect();
    for cell in 0..g.len() {
        for side in [Direction::East, Direction::South] {
            let Some(next) = g.neighbour(cell, side) else { continue };
            if !seen(cell) && !seen(next) {
                d.cells[cell as usize] &= !side.bit();
                d.cells[next as usize] &= !side.opposite().bit();
                if below(rng, 2) == 0 {
                    maze::open(&mut d.cells, g, cell, side);
                }
            }
        }
    }
    let other = rival(seat);
    let rival_hidden = d.players[other].exited_ms.is_none() && !visible(d.players[other].cell);
    // Keys out of sight: on the ground elsewhere out of sight, or carried by the hidden rival.
    let mut free_slot = rival_hidden;
    for owner in ["p0", "p1"] {
        let carried_by_hidden_rival = rival_hidden && d.players[other].inventory.as_deref() == Some(owner);
        let out_of_sight = d.ground_keys[owner].is_some_and(|c| !visible(c));
        if !(carried_by_hidden_rival || out_of_sight) || hidden.is_empty() {
            continue;
        }
        if carried_by_hidden_rival {
            d.players.get_mut(other).unwrap().inventory = None;
        }
        if free_slot && d.players[other].inventory.is_none() && below(rng, 2) == 0 {
            d.players.get_mut(other).unwrap().inventory = Some(owner.into());
            d.ground_keys.insert(owner.into(), None);
            free_slot = false;
        } else {
            d.ground_keys.insert(owner.into(), Some(pick(&hidden, rng)));
        }
    }
    if rival_hidden {
        let them = d.players.get_mut(other).unwrap();
        them.cell = pick(&hidden, rng);
        them.vision_moves = below(rng, u64::from(VISION_MOVES) + 1) as u32;
        them.last_move_ms = them.last_move_ms.map(|t| t - below(rng, 100) as i64);
        them.memory.seen = CellSet::empty(g.len());
        them.memory.keys.clear();
    }
    if !unseen.is_empty() {
        for owner in ["p0", "p1"] {
            if !seen(d.compasses[owner]) {
                d.compasses.insert(owner.into(), pick(&unseen, rng));
            }
            let exit = d.exits.get_mut(owner).unwrap();
            if !seen(exit.cell) {
                exit.cell = pick(&unseen, rng);
            }
        }
    }
    let (kept, _): (Vec<u32>, Vec<u32>) = d.artifacts.iter().partition(|c| visible(**c));
    d.artifacts = kept;
    if !hidden.is_empty() {
        for _ in 0..below(rng, 4) {
            d.artifacts.push(pick(&hidden, rng));
        }
    }
    q
}

/// The bot of old, which saw the whole maze: shortest paths to its key (or its carrier),
/// then to its exit. Here only to show that the scrambles change what such a bot would use.
fn all_seeing(p: &Pos<Laberinto>, seat: &str) -> Option<Direction> {
    let d = &p.data;
    let me = &d.players[seat];
    let exit = d.exits[seat];
    let target = if exit.open || me.inventory.as_deref() == Some(seat) {
        exit.cell
    } else if let Some(cell) = d.ground_keys[seat] {
        cell
    } else {
        d.players.values().find(|pl| pl.inventory.as_deref() == Some(seat))?.cell
    };
    first_steps(&d.cells, grid_of(p), me.cell).get(target as usize).copied().flatten()
}

fn config(w: u32, h: u32, artifacts: u32, loops: u32) -> serde_json::Value {
    json!({"width": w, "height": h, "artifacts": artifacts, "loops": loops, "cooldownMs": 0, "countdownMs": 100})
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn a_players_memory_is_what_its_views_showed(
        seed in any::<u64>(), w in 5u32..16, h in 5u32..16, artifacts in 0u32..9, loops in 0u32..10,
    ) {
        let mut recollections: BTreeMap<&str, Recollection> =
            ["p0", "p1"].into_iter().map(|s| (s, Recollection::new(w * h))).collect();
        let mut last_revision = None;
        random_play(seed, 200, config(w, h, artifacts, loops), |m: &Match| {
            let revision = m.state().revision;
            if last_revision.replace(revision) == Some(revision) {
                return;
            }
            let d = m.data();
            for (seat, recollection) in recollections.iter_mut() {
                recollection.view(seat, &m.view(Some(seat)), w * h);
                assert!(recollection.matches(&d.players[*seat].memory), "{seat} at revision {revision}");
            }
        });
    }
}

#[test]
fn the_bots_move_depends_only_on_what_its_seat_has_seen() {
    let mut rng = SplitMix64(0xf06);
    let (mut compared, mut all_seeing_differed) = (0, 0);
    for seed in 0..12u64 {
        let (w, h) = (5 + (seed % 11) as u32, 5 + (seed * 7 % 11) as u32);
        let mut positions = Vec::new();
        random_play(seed, 160, config(w, h, (seed % 4) as u32, (seed % 6) as u32), |m: &Match| {
            positions.push(m.typed());
        });
        for p in positions.iter().step_by(3) {
            for seat in ["p0", "p1"] {
                let bot = |q: &Pos<Laberinto>| Laberinto.bot_action(q, seat, "default", &mut SplitMix64(1));
                let choice = bot(p);
                for _ in 0..3 {
                    let q = unseen_scrambled(p, seat, &mut rng);
                    assert_eq!(bot(&q), choice, "seed {seed}, {seat}: the bot used what its seat has not seen");
                    compared += 1;
                    all_seeing_differed += usize::from(all_seeing(p, seat) != all_seeing(&q, seat));
                }
            }
        }
    }
    assert!(compared > 1_000, "{compared} comparisons");
    // The scrambles change what an all-seeing bot would use: the property has teeth.
    assert!(all_seeing_differed * 10 > compared, "{all_seeing_differed} of {compared}");
}

/// In the countdown the bot has nothing to do.
#[test]
fn the_bot_does_not_play_outside_the_race() {
    let m = Match::new(json!({"countdownMs": 3000}), 9);
    for seat in ["p0", "p1"] {
        assert_eq!(Laberinto.bot_action(&m.typed(), seat, "default", &mut SplitMix64(0)), None::<Action>);
    }
}
