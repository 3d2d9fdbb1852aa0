//! Properties of random play through the engine: key conservation, the projection's radius
//! (rebuilt from zero each time), and the records' bound and chunk indices.

use std::collections::BTreeSet;

use juegoland_laberinto::model::{Record, Status};
use juegoland_laberinto::view::{PLACEHOLDER, RECORD_MAX_BYTES, radius};
use juegoland_sdk::below;
use proptest::prelude::*;
use serde_json::json;

use crate::engine::Match;

const DIRECTIONS: [&str; 4] = ["north", "east", "south", "west"];

/// A racing match played at random for `steps` commands (bots' moves mixed with random
/// ones and drops, both seats, instants advancing 0–80 ms), calling `check` after each.
pub fn random_play(seed: u64, steps: usize, config: serde_json::Value, mut check: impl FnMut(&Match)) -> Match {
    let mut m = Match::new(config, seed);
    let mut rng = juegoland_sdk::SplitMix64(seed ^ 0x5eed);
    if m.state().position.flow.phase == "countdown" {
        let due = m.state().deadlines["countdown"].due_ms;
        m.fire_at("countdown", due).unwrap();
    }
    check(&m);
    for _ in 0..steps {
        if m.finished() {
            if let Some(d) = m.state().deadlines.get(juegoland_laberinto::FINISH_DEADLINE) {
                let due = d.due_ms;
                let _ = m.fire_at(juegoland_laberinto::FINISH_DEADLINE, due);
            }
            break;
        }
        let seat = if below(&mut rng, 2) == 0 { "p0" } else { "p1" };
        let at = m.now_ms + below(&mut rng, 80) as i64;
        let typed = m.typed();
        let bot = <juegoland_laberinto::Laberinto as juegoland_sdk::Game>::bot_action(
            &juegoland_laberinto::Laberinto,
            &typed,
            seat,
            "default",
            &mut rng,
        );
        let roll = below(&mut rng, 10);
        let action = match (roll, bot) {
            (0, _) => ("drop".to_owned(), json!({})),
            (1..=4, _) | (_, None) => {
                ("move".to_owned(), json!({"direction": DIRECTIONS[below(&mut rng, 4) as usize]}))
            }
            (_, Some(a)) => {
                let v = serde_json::to_value(a).unwrap();
                (v["type"].as_str().unwrap().to_owned(), v["payload"].clone())
            }
        };
        m.send_at(seat, at, &action.0, action.1);
        check(&m);
    }
    m
}

fn config(w: u32, h: u32, artifacts: u32, loops: u32, cooldown: i64) -> serde_json::Value {
    json!({"width": w, "height": h, "artifacts": artifacts, "loops": loops, "cooldownMs": cooldown, "countdownMs": 100})
}

/// Checks every record of `records` and returns what they carry together.
fn check_records(records: &[Record]) -> (BTreeSet<u32>, usize, BTreeSet<String>) {
    let k = records.len() as u32;
    assert!(k >= 1);
    let mut cells = BTreeSet::new();
    let mut cell_count = 0;
    let mut objects = 0;
    let mut players = BTreeSet::new();
    for (i, r) in records.iter().enumerate() {
        let text = serde_json::to_string(r).unwrap();
        assert!(text.len() <= RECORD_MAX_BYTES, "record {i} is {} bytes: {text}", text.len());
        assert_eq!((r.chunk, r.chunks), (i as u32, k), "chunk indices");
        assert_eq!(r.status.is_some(), i == 0, "the status is in chunk 0 only");
        let first = &records[0];
        assert_eq!((r.seq, r.role, r.phase, r.meeting_seq), (first.seq, first.role, first.phase, first.meeting_seq));
        cells.extend(r.cells.iter().map(|c| c.index));
        cell_count += r.cells.len();
        objects += r.objects.len();
        for p in r.players.keys() {
            assert!(players.insert(p.clone()), "player {p} twice");
        }
        if let Some(next) = records.get(i + 1) {
            assert_full(r, next, i);
        }
    }
    assert_eq!(cells.len(), cell_count, "each cell once");
    (cells, objects, players)
}

/// The cut is greedy: `record` (number `i`) was closed because the first item of `next`
/// (objects before cells) did not fit in it, measured as the view measures, with the chunk
/// indices at their placeholder. Players come first and always fit beside the status.
fn assert_full(record: &Record, next: &Record, i: usize) {
    let mut grown = Record { chunk: PLACEHOLDER, chunks: PLACEHOLDER, ..record.clone() };
    match (next.objects.first(), next.cells.first()) {
        (Some(o), _) => grown.objects.push(o.clone()),
        (None, Some(c)) => grown.cells.push(c.clone()),
        (None, None) => panic!("record {} carries nothing", i + 1),
    }
    let text = serde_json::to_string(&grown).unwrap();
    assert!(text.len() > RECORD_MAX_BYTES, "record {i} had room for the next one's first item: {text}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn keys_are_conserved_through_random_play(
        seed in any::<u64>(), w in 5u32..12, h in 5u32..12, artifacts in 0u32..9, loops in 0u32..10,
    ) {
        random_play(seed, 300, config(w, h, artifacts, loops, 40), |m| {
            let d = m.data();
            for owner in ["p0", "p1"] {
                let places = usize::from(d.ground_keys[owner].is_some())
                    + d.players.values().filter(|p| p.inventory.as_deref() == Some(owner)).count();
                assert_eq!(places, 1, "the key of {owner} is in {places} places");
            }
        });
    }

    #[test]
    fn a_player_sees_exactly_the_cells_within_its_radius_and_records_stay_bounded(
        seed in any::<u64>(), w in 5u32..32, h in 5u32..32, artifacts in 0u32..9,
    ) {
        random_play(seed, 120, config(w, h, artifacts, 3, 0), |m| {
            let d = m.data();
            let g = juegoland_laberinto::maze::Grid { width: w, height: h };
            for seat in ["p0", "p1"] {
                let records = m.view(Some(seat)).records;
                let (cells, _, players) = check_records(&records);
                let me = d.players[seat].cell;
                let r = radius(&d, seat);
                let expected: BTreeSet<u32> = (0..g.len()).filter(|c| g.chebyshev(me, *c) <= r).collect();
                assert_eq!(cells, expected, "{seat} sees exactly its Chebyshev square, clipped");
                let rival = &d.players[if seat == "p0" { "p1" } else { "p0" }];
                let rival_seen = rival.exited_ms.is_none() && g.chebyshev(me, rival.cell) <= r;
                assert_eq!(players.contains("opponent"), rival_seen, "the opponent only while visible");
                assert!(records.iter().flat_map(|r| &r.objects).all(|o| g.chebyshev(me, o.cell) <= r));
                assert!(matches!(records[0].status, Some(Status::Player(_))));
            }
            let records = m.view(None).records;
            let (cells, objects, players) = check_records(&records);
            assert_eq!(cells.len() as u32, g.len(), "an observer sees every cell");
            assert_eq!(players, BTreeSet::from(["p0".to_owned(), "p1".to_owned()]));
            let carried = d.players.values().filter(|p| p.inventory.is_some() && p.exited_ms.is_none()).count();
            let ground = d.ground_keys.values().flatten().count();
            assert_eq!(objects, ground + carried + 2 + d.artifacts.len() + 2, "every object once");
        });
    }
}
