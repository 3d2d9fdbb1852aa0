//! Scripted dice through the engine's replay mode: each roll is a log entry whose
//! randomness trace holds the chosen face and whose events hold the expected path, decided
//! again by `Engine::recover` (which refuses any difference). Every ladder and every snake
//! is landed on, and both finish rules are exercised; the logs then replay whole.

use std::collections::{BTreeMap, VecDeque};

use juegoland_core::{LogEntry, LoggedOp};
use juegoland_protocol::Precondition;
use juegoland_sdk::TraceEntry;
use juegoland_sdk::random::{DrawRequest, DrawResult};
use juegoland_serpientes::{Event, Finish, LADDERS, PathStep, SNAKES, Via, resolve};
use serde_json::json;
use uuid::Uuid;

use crate::engine::Match;

/// Feeds one roll of `die` by `seat` through `Engine::recover`, expecting `path`.
pub fn roll(m: &mut Match, seat: &str, die: u8, path: &[PathStep]) {
    let state = m.state().clone();
    let event = Event::PieceMoved { seat: seat.into(), roll: vec![die], path: path.to_vec() };
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
        trace: vec![TraceEntry {
            order: 0,
            label: juegoland_serpientes::ROLL_LABEL.into(),
            request: DrawRequest::Weighted { weights: vec![1; 6] },
            result: DrawResult::Value(i64::from(die) - 1),
        }],
        events: vec![serde_json::to_value(&event).unwrap()],
    };
    m.now_ms += 10;
    let live = std::mem::replace(&mut m.live, m.engine.load(state).unwrap());
    m.live = m.engine.recover(live, &entry).unwrap_or_else(|f| panic!("{seat} rolls {die}, expecting {path:?}: {f}"));
    m.log.push(entry);
}

fn position(m: &Match, seat: &str) -> u32 {
    m.state().position.data.to_value()["positions"][seat].as_u64().unwrap() as u32
}

/// The shortest dice sequence from `from` whose last roll COUNTS to `target`, over the
/// rules' own movement (for scripting only: the final landing is checked against the spec).
fn dice_to(from: u32, target: u32, finish: Finish) -> Vec<u8> {
    let mut seen: BTreeMap<u32, (u32, u8)> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        for die in 1..=6u8 {
            let (path, to) = resolve(at, u32::from(die), finish).unwrap();
            if path.first().map(|s| s.square) == Some(target) {
                let mut dice = vec![die];
                let mut back = at;
                while back != from {
                    let (prev, d) = seen[&back];
                    dice.push(d);
                    back = prev;
                }
                dice.reverse();
                return dice;
            }
            if to != 100 && to != from && !seen.contains_key(&to) {
                seen.insert(to, (at, die));
                queue.push_back(to);
            }
        }
    }
    panic!("no dice reach {target} from {from}")
}

/// Scripts a solo match from 0 to landing on `start`, and checks the jump to `end`.
fn land_on(start: u32, end: u32, via: Via, finish: &str) -> Match {
    let finish_rule = if finish == "exact" { Finish::Exact } else { Finish::Bounce };
    let mut m = Match::new(1, json!({"finish": finish}), 1);
    let dice = dice_to(0, start, finish_rule);
    let (last, before) = dice.split_last().unwrap();
    for die in before {
        let (path, _) = resolve(position(&m, "p0"), u32::from(*die), finish_rule).unwrap();
        roll(&mut m, "p0", *die, &path);
    }
    let expected = [PathStep { square: start, via: Via::Step }, PathStep { square: end, via }];
    roll(&mut m, "p0", *last, &expected);
    assert_eq!(position(&m, "p0"), end);
    m
}

#[test]
fn every_ladder_and_every_snake_through_the_engine_replay_mode() {
    for (foot, top) in LADDERS {
        let m = land_on(foot, top, Via::Ladder, "exact");
        if top == 100 {
            assert_eq!(m.result()["participants"]["p0"]["outcome"], "win");
        }
        m.replay();
    }
    for (head, tail) in SNAKES {
        land_on(head, tail, Via::Snake, "bounce").replay();
    }
}

#[test]
fn both_finish_rules_through_the_engine_replay_mode() {
    // Exact: from 97 a 5 does not move (an empty path); a 3 wins.
    let mut m = land_on(71, 91, Via::Ladder, "exact");
    roll(&mut m, "p0", 6, &[PathStep { square: 97, via: Via::Step }]);
    roll(&mut m, "p0", 5, &[]);
    assert_eq!(position(&m, "p0"), 97);
    assert!(m.result().is_null());
    roll(&mut m, "p0", 3, &[PathStep { square: 100, via: Via::Step }]);
    assert_eq!(m.result()["participants"]["p0"]["outcome"], "win");
    m.replay();

    // Bounce: from 97 a 5 counts to 100 and back to 98, the snake to 78.
    let mut m = land_on(71, 91, Via::Ladder, "bounce");
    roll(&mut m, "p0", 6, &[PathStep { square: 97, via: Via::Step }]);
    roll(
        &mut m,
        "p0",
        5,
        &[
            PathStep { square: 100, via: Via::Step },
            PathStep { square: 98, via: Via::Bounce },
            PathStep { square: 78, via: Via::Snake },
        ],
    );
    assert_eq!(position(&m, "p0"), 78);
    m.replay();
}

#[test]
fn a_script_that_disagrees_with_the_rules_is_refused() {
    let mut m = Match::new(1, json!({}), 1);
    let state = m.state().clone();
    let wrong =
        Event::PieceMoved { seat: "p0".into(), roll: vec![1], path: vec![PathStep { square: 1, via: Via::Step }] };
    let entry = LogEntry {
        revision: 1,
        instant_ms: 2_000,
        op: LoggedOp::Command {
            principal: "user-p0".into(),
            seat: "p0".into(),
            command_id: Uuid::from_u128(5),
            precondition: Precondition::Match { revision: 0 },
            action_type: "roll".into(),
            payload: json!({}),
            sequence: None,
        },
        trace: vec![TraceEntry {
            order: 0,
            label: "die".into(),
            request: DrawRequest::Weighted { weights: vec![1; 6] },
            result: DrawResult::Value(0),
        }],
        // Square 1 is a ladder foot: the rules go on to 38, so this script must fail.
        events: vec![serde_json::to_value(&wrong).unwrap()],
    };
    let live = std::mem::replace(&mut m.live, m.engine.load(state).unwrap());
    assert!(m.engine.recover(live, &entry).is_err());
}
