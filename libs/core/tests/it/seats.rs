//! Seat controllers in the engine: a change of hands (`LifecycleRequest::Control`) is a
//! revision of its own that moves no counter and changes no position, recovers and replays
//! like any; a replay match decides its source's decisions again with their recorded
//! randomness (`Engine::create_replay`, `Engine::replay_step`) to the same states.

use juegoland_core::{ControllerKind, LifecycleError, LifecycleRequest, LoggedOp, SeatHolder};
use juegoland_protocol::{Precondition, ServerMessage};
use serde_json::json;
use uuid::Uuid;

use crate::harness::Harness;

fn control(seat: &str, stand_in: Option<&str>) -> LifecycleRequest {
    LifecycleRequest::Control { seat: seat.into(), stand_in: stand_in.map(str::to_owned) }
}

#[test]
fn a_change_of_hands_is_a_quiet_revision_that_recovers_and_replays() {
    let mut h = Harness::conecta4();
    h.drop_disc(3);
    let before = h.state().clone();
    assert_eq!(h.lifecycle(control("p1", Some("default"))), Ok(2));
    let after = h.state().clone();
    assert_eq!(after.position, before.position, "no position changes");
    assert_eq!((after.phase_epoch, &after.actor_revisions), (before.phase_epoch, &before.actor_revisions));
    assert_eq!(after.controller("p1"), Some(ControllerKind::Handover));
    assert_eq!(after.seat_of("bot:p1"), Some("p1"), "the standing-in bot acts under bot:p1");
    assert_eq!(after.seat_of("bob"), Some("p1"), "the seat is still bob's");
    // Every recipient's snapshot says who plays each seat now.
    for p in h.publications.iter().filter(|p| p.revision == 2) {
        let ServerMessage::Snapshot(s) = juegoland_protocol::decode_server(p.encoded.as_bytes()).unwrap() else {
            panic!("a snapshot")
        };
        let kinds = s.controllers.expect("controllers when a seat is not its human's");
        assert_eq!(kinds.get("p1"), Some(&ControllerKind::Handover));
        assert!(s.events.is_empty());
    }
    // The bot plays p1's move through the same command path.
    let env = h.envelope(Uuid::from_u128(9), Precondition::Match { revision: 2 }, "drop", json!({"column": 4}));
    let ack = h.run("bot:p1", &env);
    assert_eq!((ack.ack().status, ack.ack().revision), (juegoland_protocol::AckStatus::Applied, Some(3)));
    // Refusals: the same hands again, an unknown bot, a bot's own seat.
    assert!(matches!(h.lifecycle(control("p1", Some("default"))), Err(LifecycleError::Illegal(_))));
    assert!(matches!(h.lifecycle(control("p0", Some("shark"))), Err(LifecycleError::Illegal(_))));
    assert_eq!(h.lifecycle(control("p9", None)), Err(LifecycleError::UnknownSeat));
    assert_eq!(h.lifecycle(control("p1", None)), Ok(4), "back to its human");
    assert_eq!(h.state().controller("p1"), Some(ControllerKind::Human));
    assert_eq!(h.state().seat_of("bot:p1"), None, "the bot no longer acts for p1");
    assert!(matches!(&h.log[2].op, LoggedOp::Control { seat, stand_in: Some(_) } if seat == "p1"));
    // Recovered from any stored state, and replayed from the log, to the same state.
    for from in 0..h.states.len() {
        assert_eq!(h.recovered(from).as_ref(), Ok(h.state()), "recovered from revision {from}");
    }
    h.replay().expect("the log replays");
}

#[test]
fn a_withdrawn_seat_has_nobody_standing_in() {
    let mut h = Harness::conecta4();
    h.lifecycle(control("p0", Some("default"))).unwrap();
    h.lifecycle(LifecycleRequest::Withdraw { seat: "p0".into() }).unwrap();
    assert!(h.state().stand_ins.is_empty(), "{:?}", h.state().stand_ins);
    assert_eq!(h.lifecycle(control("p1", Some("default"))), Err(LifecycleError::Finished));
}

#[test]
fn a_replay_match_decides_its_source_again_to_the_same_states() {
    // A dealt game: Brisca's deck is shuffled at setup with labelled randomness.
    let mut source = Harness::new("brisca", &[("p0", "ana"), ("p1", "bea")], json!({"players": 2}), 7);
    source.lifecycle(control("p0", Some("default"))).unwrap();
    while !source.state().is_finished() {
        let seat = source.state().position.flow.actors.keys().next().unwrap().clone();
        let (action, payload) = source
            .live
            .game()
            .game
            .bot_action(source.live.loaded(), &seat, "default", &mut source.entropy)
            .expect("a bot move");
        let principal = if source.state().stand_ins.contains_key(&seat) {
            format!("bot:{seat}")
        } else if seat == "p0" {
            "ana".into()
        } else {
            "bea".into()
        };
        let precondition = source.live.precondition(&seat, &action);
        let env = source.envelope(Uuid::from_u128(source.now_ms as u128), precondition, &action, payload);
        assert_eq!(source.run(&principal, &env).ack().status, juegoland_protocol::AckStatus::Applied);
    }
    let engine = &source.engine;
    let replay_id = Uuid::from_u128(99);
    let (pending, mut live) =
        engine.create_replay(replay_id, source.state(), &source.log[0], 400, 5_000_000).expect("a replay");
    live.advance(pending);
    assert!(live.state().seats.values().all(|h| *h == SeatHolder::Replay));
    assert_eq!(live.state().controllers().unwrap().get("p1"), Some(&ControllerKind::Replay));
    assert_eq!(live.state().position.data, source.states[0].position.data, "dealt the same");
    let decisions: Vec<_> = source.log.iter().filter(|e| e.op.is_decision()).collect();
    assert_eq!(decisions.len() + 2, source.log.len(), "the creation and the hand-over are not decisions");
    for entry in decisions {
        let instant = live.state().created_ms + (entry.instant_ms - source.log[0].instant_ms);
        let pending = engine.replay_step(&live, entry, instant).expect("the same decision");
        assert!(!pending.commit.publications.is_empty(), "a replay publishes like any match");
        live.advance(pending);
    }
    assert_eq!(live.state().position.result, source.state().position.result, "the same end");
    assert_eq!(live.state().position.data, source.state().position.data);
    // A speed out of range and a replay of a replay are refused.
    let refused = engine.create_replay(Uuid::from_u128(100), source.state(), &source.log[0], 5, 0).err();
    assert!(matches!(refused, Some(juegoland_core::CreateError::InvalidReplay(_))));
    let refused = engine.create_replay(Uuid::from_u128(101), live.state(), &source.log[0], 100, 0).err();
    assert!(matches!(refused, Some(juegoland_core::CreateError::InvalidReplay(_))));
    // A creation entry whose randomness does not fit the rules' draws (here none recorded
    // for Brisca's shuffle) does not set the match up: refused, never decided anew.
    let mut tampered = source.log[0].clone();
    tampered.trace.clear();
    let refused = engine.create_replay(Uuid::from_u128(102), source.state(), &tampered, 100, 0).err();
    assert!(matches!(refused, Some(juegoland_core::CreateError::InvalidReplay(_))), "{refused:?}");
}

#[test]
fn principals_may_not_take_the_engine_s_own_prefixes() {
    let h = Harness::conecta4();
    for reserved in ["bot:p0", "replay:p0"] {
        let seats = [
            ("p0".to_owned(), SeatHolder::Principal(reserved.into())),
            ("p1".to_owned(), SeatHolder::Principal("b".into())),
        ];
        let made = h.engine.create(
            Uuid::from_u128(5),
            &juegoland_core::GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
            seats.into_iter().collect(),
            &json!({}),
            0,
            &mut juegoland_sdk::SplitMix64(1),
        );
        assert!(matches!(made.err(), Some(juegoland_core::CreateError::InvalidSeats(_))), "{reserved}");
    }
}
