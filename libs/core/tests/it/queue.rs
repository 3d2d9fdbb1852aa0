//! The `queue` policy (engine spec § Real-time commands) through the pipeline, with the
//! `tap` fixture: sequences in receipts, final rejections that change no revision,
//! idempotency and fingerprints, the policy/precondition pairing, and recovery.

use juegoland_protocol::{AckStatus, Precondition, RejectionCode};
use serde_json::json;
use uuid::Uuid;

use crate::harness::{Answer, Harness};

fn tap_match() -> Harness {
    Harness::new("tap", &[("p0", "alice"), ("p1", "bob")], json!({}), 7)
}

fn tap(h: &mut Harness, principal: &str, id: u128) -> Answer {
    let env = h.envelope(Uuid::from_u128(id), Precondition::Queue, "tap", json!({}));
    h.run(principal, &env)
}

#[test]
fn queue_commands_take_increasing_sequences_applied_or_rejected() {
    let mut h = tap_match();
    // The harness advances the captured instant 10 ms per command: bob's tap right after
    // alice's is his first (accepted); alice's second is inside her 100 ms cooldown.
    let a = tap(&mut h, "alice", 1);
    let b = tap(&mut h, "bob", 2);
    let c = tap(&mut h, "alice", 3);
    assert_eq!((a.ack().status, a.ack().sequence, a.ack().revision), (AckStatus::Applied, Some(1), Some(1)));
    assert_eq!((b.ack().status, b.ack().sequence, b.ack().revision), (AckStatus::Applied, Some(2), Some(2)));
    assert_eq!(c.ack().status, AckStatus::Rejected);
    assert_eq!((c.ack().code, c.ack().sequence), (Some(RejectionCode::IllegalAction), Some(3)));
    h.now_ms += 200;
    let d = tap(&mut h, "alice", 4);
    assert_eq!((d.ack().sequence, d.ack().revision), (Some(4), Some(3)), "after a rejection the sequence still rises");
    assert_eq!(h.state().queue_sequence, 4);
}

#[test]
fn a_rejected_queue_command_changes_no_revision_and_no_state() {
    let mut h = tap_match();
    tap(&mut h, "alice", 1);
    let before = h.state().clone();
    let log_len = h.log.len();
    let rejected = tap(&mut h, "alice", 2);
    assert_eq!(rejected.ack().code, Some(RejectionCode::IllegalAction));
    assert_eq!(h.state(), &before, "a final rejection leaves the state, its revision and its counters alone");
    assert_eq!(h.log.len(), log_len, "and logs nothing");
    assert_eq!(h.live.last_sequence(), 2, "but the live match remembers the sequence it took");
}

#[test]
fn a_retried_queue_command_gets_its_receipt_again_and_a_reused_id_is_refused() {
    let mut h = tap_match();
    let first = tap(&mut h, "alice", 1);
    let again = tap(&mut h, "alice", 1);
    assert!(again.ack().duplicate);
    assert_eq!((again.ack().sequence, again.ack().revision), (first.ack().sequence, first.ack().revision));
    assert_eq!(h.state().revision, 1, "a duplicate applies nothing");
    let reused = h.envelope(Uuid::from_u128(1), Precondition::Queue, "poke", json!({}));
    assert_eq!(h.run("alice", &reused), Answer::Reused, "same id, another fingerprint");
    let as_match = h.envelope(Uuid::from_u128(1), Precondition::Match { revision: 1 }, "tap", json!({}));
    assert_eq!(h.run("alice", &as_match), Answer::Reused, "the precondition is part of the fingerprint");
    let next = tap(&mut h, "bob", 2);
    assert_eq!(next.ack().sequence, Some(2), "neither a duplicate nor a reused id takes a sequence");
}

#[test]
fn a_queue_action_refuses_match_and_actor_preconditions_and_vice_versa() {
    let mut h = tap_match();
    let cases = [
        ("tap", Precondition::Match { revision: 0 }),
        ("tap", Precondition::Actor { phase_epoch: 0, actor_revision: 0 }),
        ("poke", Precondition::Queue),
    ];
    for (i, (action, precondition)) in cases.into_iter().enumerate() {
        let env = h.envelope(Uuid::from_u128(100 + i as u128), precondition, action, json!({}));
        let answer = h.run("alice", &env);
        assert_eq!(answer.ack().code, Some(RejectionCode::PreconditionMismatch), "{action} with {precondition:?}");
        assert_eq!(answer.ack().sequence, (precondition == Precondition::Queue).then_some(1));
    }
    assert_eq!(h.state().revision, 0);
    let poke = h.envelope(Uuid::from_u128(200), Precondition::Match { revision: 0 }, "poke", json!({}));
    assert_eq!(h.run("alice", &poke).ack().status, AckStatus::Applied, "each with its own kind is accepted");
    assert_eq!(tap(&mut h, "alice", 201).ack().status, AckStatus::Applied);
}

#[test]
fn offers_of_a_queue_action_carry_the_queue_precondition() {
    let h = tap_match();
    assert_eq!(h.live.precondition("p0", "tap"), Precondition::Queue);
    assert_eq!(h.live.precondition("p0", "poke"), Precondition::Match { revision: 0 });
    let snapshot = h.live.snapshot(juegoland_sdk::Recipient::Seat("p0"), &h.engine).unwrap();
    let juegoland_protocol::ServerMessage::Snapshot(s) = snapshot else { panic!("a snapshot") };
    let kinds: Vec<_> = s.actions.iter().map(|o| (o.action_type().to_owned(), o.precondition().kind())).collect();
    assert_eq!(kinds, [("tap".to_owned(), "queue"), ("poke".to_owned(), "match")]);
}

#[test]
fn a_finished_match_rejects_queue_commands_with_a_sequence() {
    let mut h = tap_match();
    for i in 0..5 {
        h.now_ms += 200;
        assert_eq!(tap(&mut h, "alice", 10 + i).ack().status, AckStatus::Applied);
    }
    assert!(h.state().is_finished());
    let late = tap(&mut h, "bob", 99);
    assert_eq!((late.ack().code, late.ack().sequence), (Some(RejectionCode::MatchFinished), Some(6)));
}

#[test]
fn recovery_and_replay_reproduce_the_sequences() {
    let mut h = tap_match();
    for i in 0..8u128 {
        h.now_ms += 20;
        tap(&mut h, if i % 2 == 0 { "alice" } else { "bob" }, i + 1);
    }
    let applied = h.log.len() - 1;
    assert!(applied < 8, "some taps were inside a cooldown");
    assert_eq!(h.recovered(0).unwrap(), *h.state(), "each logged sequence is decided again");
    h.replay().unwrap();
    // A live match loaded from the stored state knows only the applied commands' sequence;
    // the actor raises it from the receipts (the rejected ones') before the next command.
    let mut loaded = h.engine.load(h.state().clone()).unwrap();
    assert_eq!(loaded.last_sequence(), h.state().queue_sequence);
    let highest = h.receipts.values().filter_map(|r| r.outcome.sequence()).max().unwrap();
    loaded.note_sequence(highest);
    assert_eq!(loaded.last_sequence(), 8);
}
