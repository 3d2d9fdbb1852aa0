//! Integration tests of Brisca through the real engine: bots filling every seat with two and
//! four players (team outcomes), replay of every match, withdrawal, privacy for every
//! recipient with the checks shown to fail on leaky variants ([`privacy`]), two copies of a
//! deck ([`decks`]) and properties of random play ([`props`]).

mod decks;
mod engine;
mod privacy;
mod props;

use juegoland_brisca::{BOT_DEFAULT, Brisca};
use juegoland_sdk::{Game, Pos, Position, SplitMix64};
use serde_json::{Value, json};

use crate::engine::{Match, applied};

/// The typed position of a match.
pub fn typed(m: &Match) -> Pos<Brisca> {
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
    let action = Brisca.bot_action(&typed(m), &seat, BOT_DEFAULT, &mut SplitMix64(0)).expect("the bot plays");
    let value = serde_json::to_value(&action).unwrap();
    applied(&m.run(&seat, value["type"].as_str().unwrap(), value["payload"].clone()));
}

fn play_out(players: u8, config: Value, seed: u64) -> Match {
    let mut m = Match::new(usize::from(players), config, seed);
    let mut moves = 0;
    while !m.finished() {
        bot_turn(&mut m);
        moves += 1;
        assert!(moves < 200, "the hand does not end");
    }
    m
}

#[test]
fn win_draw_loss_a_four_bot_brisca_plays_to_the_end_with_team_outcomes_and_replays() {
    let configs = [
        json!({"players": 4}),
        json!({"players": 4, "trumpExchange": "seven", "twoTakesLow": true}),
        json!({"players": 4, "mustFollow": true}),
    ];
    let mut outcomes = std::collections::BTreeSet::new();
    for (i, config) in configs.iter().enumerate() {
        for seed in 0..8u64 {
            let m = play_out(4, config.clone(), seed * 7 + i as u64);
            let r = m.result();
            assert_eq!(r["reasonCode"], "points");
            let p = &r["participants"];
            for (a, b) in [("p0", "p2"), ("p1", "p3")] {
                assert_eq!(p[a]["outcome"], p[b]["outcome"], "partners share the outcome");
                assert_eq!(p[a]["team"], p[b]["team"]);
                assert_eq!(p[a]["score"], p[b]["score"]);
            }
            assert_eq!(p["p0"]["team"], "team0");
            assert_eq!(p["p1"]["team"], "team1");
            assert_eq!(p["p0"]["score"].as_i64().unwrap() + p["p1"]["score"].as_i64().unwrap(), 120);
            let o = (p["p0"]["outcome"].as_str().unwrap().to_owned(), p["p1"]["outcome"].as_str().unwrap().to_owned());
            match o.0.as_str() {
                "win" => assert_eq!(o.1, "loss"),
                "loss" => assert_eq!(o.1, "win"),
                _ => assert_eq!(o, ("draw".into(), "draw".into())),
            }
            outcomes.insert(o.0);
            assert_eq!(m.state().position.flow.round, 10, "ten tricks");
            m.replay();
        }
    }
    assert!(outcomes.contains("win") && outcomes.contains("loss"), "{outcomes:?}");
}

#[test]
fn match_replay_two_bots_play_every_variant_to_the_end_and_each_match_replays() {
    for (i, config) in [
        json!({}),
        json!({"trumpExchange": "seven"}),
        json!({"trumpExchange": "seven", "twoTakesLow": true, "mustFollow": true}),
    ]
    .iter()
    .enumerate()
    {
        for seed in 0..8u64 {
            let m = play_out(2, config.clone(), seed * 13 + i as u64);
            let r = m.result();
            let (a, b) = (
                r["participants"]["p0"]["score"].as_i64().unwrap(),
                r["participants"]["p1"]["score"].as_i64().unwrap(),
            );
            assert_eq!(a + b, 120);
            let expected = if a > 60 {
                ("win", "loss")
            } else if a < 60 {
                ("loss", "win")
            } else {
                ("draw", "draw")
            };
            assert_eq!(
                (r["participants"]["p0"]["outcome"].as_str(), r["participants"]["p1"]["outcome"].as_str()),
                (Some(expected.0), Some(expected.1))
            );
            assert!(r["participants"]["p0"].get("team").is_none());
            assert_eq!(m.state().position.flow.round, 20, "twenty tricks");
            m.replay();
        }
    }
}

#[test]
fn withdrawal_in_a_turn_the_leavers_team_loses() {
    let mut m = Match::new(4, json!({"players": 4}), 3);
    for _ in 0..6 {
        bot_turn(&mut m);
    }
    m.withdraw("p3");
    let r = m.result();
    assert_eq!(r["reasonCode"], "withdrawal");
    for (seat, outcome) in [("p0", "win"), ("p2", "win"), ("p1", "loss"), ("p3", "loss")] {
        assert_eq!(r["participants"][seat]["outcome"], outcome, "{seat}");
    }
    m.replay();
    let mut m = Match::new(2, json!({}), 3);
    bot_turn(&mut m);
    m.withdraw("p0");
    assert_eq!(m.result()["participants"]["p1"]["outcome"], "win");
    m.replay();
}

#[test]
fn the_bot_beats_a_random_player_over_many_hands() {
    use juegoland_sdk::EntropySource;
    let mut bot_points = 0i64;
    let hands = 40;
    for seed in 0..hands {
        let mut m = Match::new(2, json!({}), 1_000 + seed);
        let mut e = SplitMix64(seed);
        while !m.finished() {
            let seat = m.actor().unwrap();
            if seat == "p0" {
                bot_turn(&mut m);
            } else {
                let offers =
                    juegoland_brisca::Brisca.available_actions(&typed(&m), juegoland_sdk::Recipient::Seat(&seat));
                let juegoland_sdk::Offer::Concrete(a) = &offers[(e.next_u64() % offers.len() as u64) as usize] else {
                    panic!("concrete offers")
                };
                let v = serde_json::to_value(a).unwrap();
                applied(&m.run(&seat, v["type"].as_str().unwrap(), v["payload"].clone()));
            }
        }
        bot_points += m.result()["participants"]["p0"]["score"].as_i64().unwrap();
    }
    let average = bot_points as f64 / hands as f64;
    assert!(average > 66.0, "the bot averages {average:.1} points of 120 against random play");
}
