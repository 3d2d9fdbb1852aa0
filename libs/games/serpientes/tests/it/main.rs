//! Integration tests of Serpientes y escaleras through the real engine: every ladder and
//! snake and both finish rules from scripted dice in the engine's replay mode
//! ([`scripted`]), the Markov-chain oracle over seeded playouts ([`oracle`]), privacy
//! ([`privacy`]), replay of every match, bots filling every seat, and properties of random
//! play ([`props`]).

mod engine;
mod oracle;
mod privacy;
mod props;
mod scripted;

use juegoland_sdk::{Game, Pos, Position, SplitMix64};
use juegoland_serpientes::{BOT_DEFAULT, Serpientes};
use serde_json::{Value, json};

use crate::engine::{Match, applied};

/// The typed position of a match.
pub fn typed(m: &Match) -> Pos<Serpientes> {
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
    let action = Serpientes.bot_action(&typed(m), &seat, BOT_DEFAULT, &mut SplitMix64(0)).expect("the bot rolls");
    let value = serde_json::to_value(&action).unwrap();
    applied(&m.run(&seat, value["type"].as_str().unwrap(), value["payload"].clone()));
}

#[test]
fn match_replay_bots_fill_every_seat_and_every_match_replays_from_its_trace() {
    let mut finished = 0;
    for seats in 1..=6 {
        for (i, finish) in ["exact", "bounce"].into_iter().enumerate() {
            let mut m = Match::new(seats, json!({"finish": finish}), (seats * 10 + i) as u64);
            let mut moves = 0;
            while !m.finished() {
                // A withdrawal now and then: the race goes on without the leaver.
                if seats > 2 && moves == 30 {
                    let leaver = m.actor().unwrap();
                    m.withdraw(&leaver);
                    moves += 1;
                    continue;
                }
                bot_turn(&mut m);
                moves += 1;
                assert!(moves < 5_000, "the race does not end");
            }
            let result = m.result();
            assert_eq!(result["reasonCode"], "finished");
            let winners =
                result["participants"].as_object().unwrap().values().filter(|r| r["outcome"] == "win").count();
            assert_eq!(winners, 1);
            m.replay();
            finished += 1;
        }
    }
    assert_eq!(finished, 12);
}

#[test]
fn withdrawal_in_a_turn_through_the_engine() {
    let mut m = Match::new(2, json!({}), 5);
    bot_turn(&mut m);
    m.withdraw("p1");
    let result = m.result();
    assert_eq!(result["reasonCode"], "withdrawal");
    assert_eq!(result["participants"]["p0"]["outcome"], "win");
    assert_eq!(result["participants"]["p1"]["outcome"], "loss");
    m.replay();
}

/// The optional turn clock: when a seat's time runs out the server rolls for it (policy
/// `defaultMove`), a roll after the due instant is refused, and the match replays.
#[test]
fn a_turn_clock_rolls_for_a_seat_whose_time_runs_out() {
    let clock = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1000}, "policy": "defaultMove"}});
    let mut m = Match::new(2, clock.clone(), 3);
    m.fire_clock().unwrap();
    let data = m.state().position.data.to_value();
    assert_eq!(data["rolls"]["p0"], 1, "the server rolled for p0");
    assert_eq!(m.actor().as_deref(), Some("p1"));
    assert_eq!(data["clock"]["running"]["seat"], "p1", "and p1's turn is timed");
    let events: Vec<Value> = m.log.last().unwrap().events.clone();
    assert_eq!(events[0]["type"], "seatTimedOut");
    assert_eq!(events[1]["type"], "pieceMoved");
    // p1 answers too late: refused, and the deadline rolls for it instead.
    let due = m.state().deadlines[juegoland_sdk::CLOCK_DEADLINE].due_ms;
    m.now_ms = due;
    assert!(matches!(m.run("p1", "roll", json!({})), juegoland_core::ReceiptOutcome::Rejected { .. }));
    m.fire_clock().unwrap();
    assert_eq!(m.actor().as_deref(), Some("p0"));
    // In time, a roll stops p0's clock and starts p1's.
    applied(&m.run("p0", "roll", json!({})));
    m.replay();
    // Forfeit and skip are not this game's policies.
    let engine = juegoland_core::Engine::new(crate::engine::registry());
    let seats = [
        ("p0".to_owned(), juegoland_core::SeatHolder::Principal("a".into())),
        ("p1".to_owned(), juegoland_core::SeatHolder::Principal("b".into())),
    ]
    .into();
    let forfeit = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1000}, "policy": "forfeit"}});
    assert!(
        engine.create(uuid::Uuid::from_u128(1), crate::engine::key(), seats, &forfeit, 0, &mut SplitMix64(1)).is_err()
    );
}
