//! Scripted dice through the engine's replay mode: each roll is a log entry whose
//! randomness trace holds the chosen faces and whose events hold the expected path, decided
//! again by `Engine::recover` (which refuses any difference). One match per special square
//! (every goose, both bridges, the inn, both dice squares, the well, the maze, the prison,
//! death, 63 reached exactly and by counting back onto 59, and the two-dice openings); each
//! log then replays whole.

use std::collections::{BTreeMap, VecDeque};

use juegoland_core::{LogEntry, LoggedOp};
use juegoland_oca::{Event, GEESE, PathStep, Via, resolve};
use juegoland_protocol::Precondition;
use juegoland_sdk::TraceEntry;
use juegoland_sdk::random::{DrawRequest, DrawResult};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::engine::Match;

/// Feeds one roll of `dice` by `seat` through `Engine::recover`, expecting `path`.
pub fn roll(m: &mut Match, seat: &str, dice: &[u8], path: &[PathStep]) {
    let state = m.state().clone();
    let event = Event::PieceMoved { seat: seat.into(), roll: dice.to_vec(), path: path.to_vec() };
    let trace = dice
        .iter()
        .enumerate()
        .map(|(i, d)| TraceEntry {
            order: i as u32,
            label: format!("die{i}"),
            request: DrawRequest::Weighted { weights: vec![1; 6] },
            result: DrawResult::Value(i64::from(*d) - 1),
        })
        .collect();
    let entry = LogEntry {
        revision: state.revision + 1,
        instant_ms: m.now_ms + 10,
        op: LoggedOp::Command {
            principal: format!("user-{seat}"),
            seat: seat.into(),
            command_id: Uuid::from_u128(u128::from(state.revision) + 10_000),
            precondition: Precondition::Match { revision: state.revision },
            action_type: "roll".into(),
            payload: json!({}),
            sequence: None,
        },
        trace,
        events: vec![serde_json::to_value(&event).unwrap()],
    };
    m.now_ms += 10;
    let live = std::mem::replace(&mut m.live, m.engine.load(state).unwrap());
    m.live =
        m.engine.recover(live, &entry).unwrap_or_else(|f| panic!("{seat} rolls {dice:?}, expecting {path:?}: {f}"));
    m.log.push(entry);
}

fn data(m: &Match) -> Value {
    m.state().position.data.to_value()
}

fn position(m: &Match, seat: &str) -> u32 {
    data(m)["positions"][seat].as_u64().unwrap() as u32
}

/// How a one-die plan finds the roll that counts to the target.
#[derive(Clone, Copy)]
enum Goal {
    /// The roll counts forward to this square.
    Count(u32),
    /// The roll counts past 63 and back to this square.
    Back(u32),
}

/// The shortest one-die sequence from 0 to a roll meeting `goal`, over the rules' own
/// movement (scripting only: the final path is checked against the spec by the caller).
fn plan(goal: Goal) -> Vec<u8> {
    let hit = |path: &[PathStep]| match goal {
        Goal::Count(s) => path.first() == Some(&PathStep { square: s, via: Via::Step }),
        Goal::Back(s) => path.get(1) == Some(&PathStep { square: s, via: Via::Bounce }),
    };
    let mut seen: BTreeMap<u32, (u32, u8)> = BTreeMap::new();
    let mut queue = VecDeque::from([0u32]);
    while let Some(at) = queue.pop_front() {
        for die in 1..=6u8 {
            let m = resolve(at, &[die], false).unwrap();
            if hit(&m.path) {
                let mut dice = vec![die];
                let mut back = at;
                while back != 0 {
                    let (prev, d) = seen[&back];
                    dice.push(d);
                    back = prev;
                }
                dice.reverse();
                return dice;
            }
            if m.to != 63 && m.to != 0 && !seen.contains_key(&m.to) {
                seen.insert(m.to, (at, die));
                queue.push_back(m.to);
            }
        }
    }
    panic!("no plan")
}

/// A die for p1 that moves it to a plain square (no effect, not 63).
fn harmless(from: u32) -> u8 {
    (1..=6u8)
        .find(|d| {
            let m = resolve(from, &[*d], false).unwrap();
            m.path.len() == 1 && m.to < 60 && juegoland_oca::board::turns_lost_at(m.to) == 0 && m.to != 31
        })
        .expect("a harmless roll")
}

/// Plays a two-seat match in which p0 follows `plan(goal)` and p1 rolls harmlessly; the last
/// roll of p0 must have the path `expected`.
fn land(goal: Goal, expected: &[PathStep]) -> Match {
    let mut m = Match::new(2, json!({}), 1);
    let dice = plan(goal);
    for (i, die) in dice.iter().enumerate() {
        while m.actor().as_deref() == Some("p1") {
            let from = position(&m, "p1");
            let d = harmless(from);
            let path = resolve(from, &[d], false).unwrap().path;
            roll(&mut m, "p1", &[d], &path);
        }
        let movement = resolve(position(&m, "p0"), &[*die], false).unwrap();
        if i + 1 == dice.len() {
            assert_eq!(movement.path, expected, "the rules' own path");
        }
        roll(&mut m, "p0", &[*die], if i + 1 == dice.len() { expected } else { &movement.path });
    }
    m
}

fn p(square: u32, via: Via) -> PathStep {
    PathStep { square, via }
}

#[test]
fn every_goose_sends_to_the_next_and_rolls_again() {
    for w in GEESE.windows(2) {
        let m = land(Goal::Count(w[0]), &[p(w[0], Via::Step), p(w[1], Via::Goose)]);
        assert_eq!(position(&m, "p0"), w[1]);
        assert_eq!(m.actor().as_deref(), Some("p0"), "de oca a oca y tiro porque me toca");
        m.replay();
    }
    let m = land(Goal::Count(59), &[p(59, Via::Step), p(63, Via::Goose)]);
    assert_eq!(m.result()["participants"]["p0"]["outcome"], "win");
    m.replay();
}

#[test]
fn bridges_dice_maze_and_death() {
    for (from, to, via, again) in [
        (6, 12, Via::Bridge, true),
        (12, 6, Via::Bridge, true),
        (26, 53, Via::Dice, true),
        (53, 26, Via::Dice, true),
        (42, 30, Via::Maze, false),
        (58, 1, Via::Death, false),
    ] {
        let m = land(Goal::Count(from), &[p(from, Via::Step), p(to, via)]);
        assert_eq!(position(&m, "p0"), to);
        assert_eq!(m.actor().as_deref() == Some("p0"), again, "{from} → {to}");
        m.replay();
    }
}

#[test]
fn the_inn_and_the_prison_lose_turns() {
    for (square, lost) in [(19, 1), (52, 2)] {
        let m = land(Goal::Count(square), &[p(square, Via::Step)]);
        assert_eq!(data(&m)["turnsLost"]["p0"], lost);
        assert_eq!(m.actor().as_deref(), Some("p1"));
        m.replay();
    }
}

#[test]
fn the_well_holds_until_another_falls_in() {
    let mut m = land(Goal::Count(31), &[p(31, Via::Step), p(31, Via::Well)]);
    assert_eq!(data(&m)["well"], "p0");
    // p1 rolls twice in a row: p0's turn is skipped while it is held.
    for _ in 0..2 {
        assert_eq!(m.actor().as_deref(), Some("p1"));
        let from = position(&m, "p1");
        let d = harmless(from);
        let path = resolve(from, &[d], false).unwrap().path;
        roll(&mut m, "p1", &[d], &path);
    }
    m.replay();
}

#[test]
fn sixty_three_exactly_or_counting_back_onto_59() {
    let m = land(Goal::Count(63), &[p(63, Via::Step)]);
    assert_eq!(m.result()["participants"]["p0"]["outcome"], "win");
    m.replay();
    let m = land(Goal::Back(59), &[p(63, Via::Step), p(59, Via::Bounce), p(63, Via::Goose)]);
    assert_eq!(m.result()["participants"]["p0"]["outcome"], "win");
    assert_eq!(m.result()["participants"]["p1"]["outcome"], "loss");
    m.replay();
}

#[test]
fn the_two_dice_openings() {
    for (dice, to) in [([6u8, 3u8], 26u32), ([3, 6], 26), ([4, 5], 53), ([5, 4], 53)] {
        let mut m = Match::new(2, json!({"dice": 2}), 1);
        roll(&mut m, "p0", &dice, &[p(9, Via::Step), p(to, Via::Dice)]);
        assert_eq!(position(&m, "p0"), to);
        m.replay();
    }
    // Not on a later throw: 9 is then a goose.
    let mut m = Match::new(2, json!({"dice": 2}), 1);
    roll(&mut m, "p0", &[1, 1], &[p(2, Via::Step)]);
    roll(&mut m, "p1", &[1, 1], &[p(2, Via::Step)]);
    roll(&mut m, "p0", &[4, 3], &[p(9, Via::Step), p(14, Via::Goose)]);
    m.replay();
}
