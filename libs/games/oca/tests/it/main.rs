//! Integration tests of La Oca through the real engine: every special square from scripted
//! dice in the engine's replay mode ([`scripted`]), privacy ([`privacy`]), replay of every
//! match, bots filling every seat, withdrawal, and properties of random play ([`props`]).

mod engine;
mod privacy;
mod props;
mod scripted;

use juegoland_oca::{BOT_DEFAULT, Oca};
use juegoland_sdk::{Game, Pos, Position, SplitMix64};
use serde_json::json;

use crate::engine::{Match, applied};

/// The typed position of a match.
pub fn typed(m: &Match) -> Pos<Oca> {
    let p = &m.state().position;
    Position {
        config: p.config.decode().unwrap(),
        participants: p.participants.clone(),
        data: p.data.decode().unwrap(),
        flow: p.flow.clone(),
        result: p.result.clone(),
    }
}

/// Plays the actor's bot move through the engine.
pub fn bot_turn(m: &mut Match) {
    let seat = m.actor().expect("an actor");
    let action = Oca.bot_action(&typed(m), &seat, BOT_DEFAULT, &mut SplitMix64(0)).expect("the bot rolls");
    let value = serde_json::to_value(&action).unwrap();
    applied(&m.run(&seat, value["type"].as_str().unwrap(), value["payload"].clone()));
}

#[test]
fn match_replay_bots_fill_every_seat_and_every_match_replays_from_its_trace() {
    let mut finished = 0;
    for seats in 2..=4 {
        for dice in [1u8, 2] {
            for seed in 0..4u64 {
                let mut m = Match::new(seats, json!({"dice": dice}), seed * 31 + seats as u64 * 7 + u64::from(dice));
                let mut moves = 0;
                while !m.finished() {
                    bot_turn(&mut m);
                    moves += 1;
                    assert!(moves < 5_000, "the game does not end");
                }
                let result = m.result();
                assert_eq!(result["reasonCode"], "finished");
                let winner = result["participants"].as_object().unwrap().iter().find(|(_, r)| r["outcome"] == "win");
                let (winner, _) = winner.expect("one winner");
                assert_eq!(m.state().position.data.to_value()["positions"][winner], 63);
                m.replay();
                finished += 1;
            }
        }
    }
    assert_eq!(finished, 24);
}

#[test]
fn withdrawal_in_a_turn_the_leaver_loses_and_the_last_one_wins() {
    let mut m = Match::new(3, json!({}), 5);
    bot_turn(&mut m);
    let leaver = m.actor().unwrap();
    m.withdraw(&leaver);
    assert!(m.result().is_null(), "two seats race on");
    assert_ne!(m.actor(), Some(leaver.clone()), "the turn passed on");
    bot_turn(&mut m);
    let other = m.actor().unwrap();
    m.withdraw(&other);
    let result = m.result();
    assert_eq!(result["reasonCode"], "withdrawal");
    let winners: Vec<&String> = result["participants"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["outcome"] == "win")
        .map(|(s, _)| s)
        .collect();
    assert_eq!(winners.len(), 1);
    assert_eq!(result["participants"][&leaver]["outcome"], "loss");
    assert_eq!(result["participants"][&other]["outcome"], "loss");
    m.replay();
}

/// The optional turn clock: when a seat's time runs out the server rolls for it (policy
/// `defaultMove`), a roll after the due instant is refused, and the match replays.
#[test]
fn a_turn_clock_rolls_for_a_seat_whose_time_runs_out() {
    let clock =
        json!({"clock": {"mode": {"kind": "perPlayer", "budgetMs": 5000, "incrementMs": 0}, "policy": "defaultMove"}});
    let mut m = Match::new(2, clock, 3);
    let actor = m.actor().unwrap();
    m.fire_clock().unwrap();
    let data = m.state().position.data.to_value();
    assert_eq!(data["rolls"][&actor], 1, "the server rolled for {actor}");
    assert_eq!(data["clock"]["remainingMs"][&actor], 0, "its budget is spent");
    assert_eq!(m.log.last().unwrap().events[0]["type"], "seatTimedOut");
    let next = m.actor().unwrap();
    let due = m.state().deadlines[juegoland_sdk::CLOCK_DEADLINE].due_ms;
    m.now_ms = due;
    assert!(matches!(m.run(&next, "roll", json!({})), juegoland_core::ReceiptOutcome::Rejected { .. }));
    m.fire_clock().unwrap();
    m.replay();
    let engine = juegoland_core::Engine::new(crate::engine::registry());
    let seats = [
        ("p0".to_owned(), juegoland_core::SeatHolder::Principal("a".into())),
        ("p1".to_owned(), juegoland_core::SeatHolder::Principal("b".into())),
    ]
    .into();
    let skip = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1000}, "policy": "skip"}});
    assert!(
        engine.create(uuid::Uuid::from_u128(1), crate::engine::key(), seats, &skip, 0, &mut SplitMix64(1)).is_err()
    );
}
