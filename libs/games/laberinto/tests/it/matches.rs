//! Whole matches through the engine: bot against bot to the end, with the countdown and
//! the finish window's deadline, then replayed from the log.

use juegoland_sdk::Game;
use serde_json::{Value, json};

use crate::engine::Match;

/// Plays `seats` with the bot (the others stand still), each at its cooldown, firing due
/// deadlines, until the end.
fn bot_match(config: Value, seed: u64, seats: &[&str]) -> Match {
    let mut m = Match::new(config, seed);
    let cooldown = m.typed().config.cooldown_ms;
    let mut now = m.now_ms;
    for _ in 0..20_000 {
        if m.finished() {
            return m;
        }
        now += cooldown.max(1) / 2 + 1;
        let due: Vec<(String, i64)> =
            m.state().deadlines.iter().filter(|(_, d)| d.due_ms <= now).map(|(id, d)| (id.clone(), d.due_ms)).collect();
        for (id, due) in due {
            m.fire_at(&id, due.max(m.now_ms)).unwrap();
        }
        if m.finished() {
            return m;
        }
        for seat in seats {
            let typed = m.typed();
            let Some(action) =
                juegoland_laberinto::Laberinto.bot_action(&typed, seat, "default", &mut m.entropy.clone())
            else {
                continue;
            };
            let v = serde_json::to_value(action).unwrap();
            m.send_at(seat, now, v["type"].as_str().unwrap(), v["payload"].clone());
            if m.finished() {
                return m;
            }
        }
    }
    panic!("the bots did not finish");
}

#[test]
fn two_bots_play_to_the_end_and_the_match_replays() {
    for seed in 0..6 {
        let config = json!({"width": 9 + seed as u32, "height": 7 + seed as u32, "loops": seed, "artifacts": 2});
        let m = bot_match(config, seed, &["p0", "p1"]);
        let r = m.result();
        assert_eq!(r["kind"], "completed", "{r}");
        let outcomes = (r["participants"]["p0"]["outcome"].clone(), r["participants"]["p1"]["outcome"].clone());
        assert!(
            [(json!("win"), json!("loss")), (json!("loss"), json!("win")), (json!("draw"), json!("draw"))]
                .contains(&outcomes),
            "{r}"
        );
        m.replay();
        // Every position on the way kept the invariants (the engine checks each revision);
        // the log has the countdown's end and, unless both went out together, the window.
        assert!(m.log.iter().any(|e| e.events.iter().any(|ev| ev["kind"] == "raceStarted")));
        assert!(m.log.iter().any(|e| e.events.iter().any(|ev| ev["kind"] == "exited")));
    }
}

/// The bot explores through the fog (`knowledge.rs` proves it uses nothing else), yet each
/// seat's bot finds its key and its exit in every seeded maze, within twice the maze's cells
/// in moves (the all-seeing walk it replaced is the lower bound; docs/decisions.md has both
/// averages), and goes out to win.
#[test]
fn each_seats_bot_alone_explores_to_its_exit_and_wins() {
    for seed in 0..8u64 {
        let side = 9 + 2 * (seed % 4) as u32;
        let config = json!({"width": side, "height": side, "loops": seed % 3, "countdownMs": 0});
        for seat in ["p0", "p1"] {
            let m = bot_match(config.clone(), seed, &[seat]);
            assert_eq!(m.result()["participants"][seat]["outcome"], "win", "seed {seed}, {seat}");
            let moves =
                m.log.iter().flat_map(|e| &e.events).filter(|e| e["kind"] == "moved" && e["seat"] == seat).count();
            assert!(moves <= 2 * (side * side) as usize, "seed {seed}, {seat}: {moves} moves in a {side}×{side} maze");
            m.replay();
        }
    }
}

#[test]
fn the_default_maze_is_perfect_and_every_cell_reachable() {
    for seed in 0..20 {
        let m = Match::new(json!({}), seed);
        let d = m.data();
        let g = juegoland_laberinto::maze::Grid { width: 15, height: 15 };
        assert_eq!(juegoland_laberinto::maze::reachable(&d.cells, g), 225);
        let passages: u32 = d.cells.iter().map(|c| c.count_ones()).sum::<u32>() / 2;
        assert_eq!(passages, 224, "a perfect maze is a spanning tree: cells - 1 passages");
        let looped = Match::new(json!({"loops": 7}), seed).data();
        assert_eq!(looped.cells.iter().map(|c| c.count_ones()).sum::<u32>() / 2, 231);
    }
}

#[test]
fn the_maze_is_generated_from_labelled_randomness_and_replays() {
    let a = Match::new(json!({}), 42);
    let b = Match::new(json!({}), 42);
    assert_eq!(a.data(), b.data(), "the same draws give the same maze");
    let trace = &a.log[0].trace;
    let labels: Vec<&str> = trace.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["maze.walls", "exit.p0", "exit.p1", "objects"]);
    assert_ne!(a.data().cells, Match::new(json!({}), 43).data().cells);
    a.replay();
}
