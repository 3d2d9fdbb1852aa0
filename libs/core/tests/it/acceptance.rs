//! The acceptance rows of `spec/acceptance.md` that the core decides, named after the rows.

use juegoland_core::{LifecycleError, LifecycleRequest, MatchState};
use juegoland_protocol::{AckStatus, Precondition, RejectionCode, ServerMessage};
use juegoland_sdk::{MatchResult, Outcome, SplitMix64};
use serde_json::json;
use uuid::Uuid;

use crate::harness::{Answer, Harness};

fn outcome(h: &Harness, seat: &str) -> Outcome {
    match &h.state().position.result {
        Some(MatchResult::Completed { participants, .. }) => participants[seat].outcome,
        other => panic!("not completed: {other:?}"),
    }
}

#[test]
fn win_draw_individual_loss_and_cooperative_loss() {
    // Win / loss.
    let mut h = Harness::conecta4();
    for c in [0, 1, 0, 1, 0, 1, 0] {
        assert_eq!(h.drop_disc(c).ack().status, AckStatus::Applied);
    }
    assert_eq!(outcome(&h, "p0"), Outcome::Win);
    assert_eq!(outcome(&h, "p1"), Outcome::Loss);

    // Draw: random legal playouts on a 4×4 board until one fills it with no line.
    let mut drawn = false;
    for seed in 0..500u64 {
        let mut h = Harness::new(
            "conecta4",
            &[("p0", "alice"), ("p1", "bob")],
            json!({"rows":4,"columns":4,"connect":4}),
            seed,
        );
        let mut rng = SplitMix64(seed);
        while h.state().position.result.is_none() {
            // A full column is an ILLEGAL_ACTION receipt; the next pick tries another.
            let c = juegoland_sdk::random::below(&mut rng, 4) as u8;
            h.drop_disc(c);
        }
        if matches!(&h.state().position.result, Some(MatchResult::Completed { reason_code, .. }) if reason_code == "board-full")
        {
            assert_eq!(outcome(&h, "p0"), Outcome::Draw);
            assert_eq!(outcome(&h, "p1"), Outcome::Draw);
            h.replay().expect("a drawn game replays");
            drawn = true;
            break;
        }
    }
    assert!(drawn, "no draw found in 500 playouts");

    // Cooperative: everyone loses together, nobody is invented a winner.
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), 3);
    ready_both(&mut h);
    let give_up =
        h.envelope(Uuid::from_u128(99), Precondition::Match { revision: h.state().revision }, "giveUp", json!({}));
    assert_eq!(h.run("ann", &give_up).ack().status, AckStatus::Applied);
    assert_eq!(outcome(&h, "p0"), Outcome::Loss);
    assert_eq!(outcome(&h, "p1"), Outcome::Loss);
}

fn mark(h: &mut Harness, principal: &str, seat: &str, id: u128, value: u8) -> Answer {
    let pre =
        Precondition::Actor { phase_epoch: h.state().phase_epoch, actor_revision: h.state().actor_revisions[seat] };
    let env = h.envelope(Uuid::from_u128(id), pre, "mark", json!({ "value": value }));
    h.run(principal, &env)
}

fn ready(h: &mut Harness, principal: &str, seat: &str, id: u128) -> Answer {
    let pre =
        Precondition::Actor { phase_epoch: h.state().phase_epoch, actor_revision: h.state().actor_revisions[seat] };
    let env = h.envelope(Uuid::from_u128(id), pre, "ready", json!({}));
    h.run(principal, &env)
}

fn ready_both(h: &mut Harness) {
    mark(h, "ann", "p0", 1, 1);
    mark(h, "ben", "p1", 2, 2);
    ready(h, "ann", "p0", 3);
    ready(h, "ben", "p1", 4);
    assert_eq!(h.state().position.flow.phase, "play");
}

#[test]
fn two_simultaneous_private_placements_and_a_late_one_after_the_barrier() {
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), 5);
    let epoch = h.state().phase_epoch;
    // Both build their commands from the same snapshot.
    let p0_cmd = h.envelope(
        Uuid::from_u128(10),
        Precondition::Actor { phase_epoch: epoch, actor_revision: 0 },
        "mark",
        json!({"value": 1}),
    );
    let p1_cmd = h.envelope(
        Uuid::from_u128(11),
        Precondition::Actor { phase_epoch: epoch, actor_revision: 0 },
        "mark",
        json!({"value": 2}),
    );
    let r0 = h.run("ann", &p0_cmd);
    assert_eq!(r0.ack().revision, Some(1));
    assert_eq!(h.state().actor_revisions["p0"], 1, "rule 1: the actor's revision");
    assert_eq!(h.state().actor_revisions["p1"], 0);
    assert_eq!(h.state().phase_epoch, epoch, "independent: no barrier");
    // p1's command was built on global revision 0 and still applies: no needless conflict.
    assert_eq!(h.run("ben", &p1_cmd).ack().status, AckStatus::Applied);
    assert_eq!(h.state().revision, 2);
    // A stale actor revision is rejected.
    let again = h.envelope(
        Uuid::from_u128(12),
        Precondition::Actor { phase_epoch: epoch, actor_revision: 0 },
        "mark",
        json!({"value": 3}),
    );
    assert_eq!(h.run("ann", &again).ack().code, Some(RejectionCode::StaleRevision));

    // Own stage change (ready → waiting) keeps independence (rule 3).
    ready(&mut h, "ann", "p0", 13);
    assert_eq!(h.state().phase_epoch, epoch);
    assert_eq!(h.state().position.flow.actors["p0"], "waiting");
    // A late mark by ben, prepared before the barrier…
    let late = h.envelope(
        Uuid::from_u128(14),
        Precondition::Actor { phase_epoch: epoch, actor_revision: h.state().actor_revisions["p1"] },
        "mark",
        json!({"value": 4}),
    );
    // …then ben's ready starts play: a barrier bumps the epoch and every actor revision.
    let revisions_before = h.state().actor_revisions.clone();
    ready(&mut h, "ben", "p1", 15);
    assert_eq!(h.state().position.flow.phase, "play");
    assert_eq!(h.state().phase_epoch, epoch + 1);
    for (seat, r) in &h.state().actor_revisions {
        assert!(*r > revisions_before[seat], "rule 2/4: {seat}'s actor revision bumped");
    }
    // The late placement is stale, whatever its private revision said.
    assert_eq!(h.run("ben", &late).ack().code, Some(RejectionCode::StaleEpoch));
}

#[test]
fn withdrawal_in_setup_in_a_turn_and_in_a_cooperative_phase() {
    // Setup: the fixture cancels with no winner.
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), 6);
    h.lifecycle(LifecycleRequest::Withdraw { seat: "p1".into() }).unwrap();
    assert_eq!(h.state().position.result, Some(MatchResult::cancelled("withdrawal-in-setup")));
    assert_eq!(h.state().position.participants["p1"].status, juegoland_sdk::ParticipantStatus::Withdrawn);

    // A turn: Conecta 4's policy — the leaver loses, the rival wins.
    let mut h = Harness::conecta4();
    h.drop_disc(3);
    let epoch = h.state().phase_epoch;
    h.lifecycle(LifecycleRequest::Withdraw { seat: "p0".into() }).unwrap();
    assert_eq!(outcome(&h, "p0"), Outcome::Loss);
    assert_eq!(outcome(&h, "p1"), Outcome::Win);
    assert_eq!(h.state().phase_epoch, epoch + 1, "a lifecycle event is a barrier");
    assert_eq!(h.lifecycle(LifecycleRequest::Withdraw { seat: "p1".into() }), Err(LifecycleError::Finished));
    h.replay().expect("withdrawal replays");

    // A cooperative phase: the team plays on; nobody wins for staying.
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), 7);
    ready_both(&mut h);
    h.lifecycle(LifecycleRequest::Withdraw { seat: "p0".into() }).unwrap();
    assert!(h.state().position.result.is_none());
    assert_eq!(h.state().position.flow.actors.keys().collect::<Vec<_>>(), ["p1"]);
    assert_eq!(h.lifecycle(LifecycleRequest::Withdraw { seat: "p0".into() }), Err(LifecycleError::AlreadyWithdrawn));
    h.lifecycle(LifecycleRequest::Withdraw { seat: "p1".into() }).unwrap();
    assert_eq!(outcome(&h, "p1"), Outcome::Loss);
    h.replay().expect("cooperative withdrawal replays");
}

#[test]
fn command_repeated_before_and_after_the_end() {
    let mut h = Harness::conecta4();
    let mut cmds = Vec::new();
    for (i, c) in [0u8, 1, 0, 1, 0, 1, 0].iter().enumerate() {
        let seat = if i % 2 == 0 { "alice" } else { "bob" };
        let env = h.envelope(
            Uuid::from_u128(500 + i as u128),
            Precondition::Match { revision: i as u64 },
            "drop",
            json!({"column": c}),
        );
        let first = h.run(seat, &env);
        // Before the end: a retry gives the same receipt, duplicate, and no second change.
        let retry = h.run(seat, &env);
        assert!(retry.ack().duplicate);
        assert_eq!(retry.ack().revision, first.ack().revision);
        assert_eq!(h.state().revision, i as u64 + 1);
        cmds.push((seat, env, first));
    }
    assert!(h.state().is_finished());
    // After the end: every command retried gives its original receipt, even the last.
    for (seat, env, first) in &cmds {
        let again = h.run(seat, env);
        let (a, f) = (again.ack(), first.ack());
        assert!(a.duplicate);
        assert_eq!((a.status, a.revision, a.code), (f.status, f.revision, f.code));
    }
    assert_eq!(h.state().revision, 7);
    // A new command after the end is a final MATCH_FINISHED rejection.
    let late = h.envelope(Uuid::from_u128(900), Precondition::Match { revision: 7 }, "drop", json!({"column": 5}));
    assert_eq!(h.run("bob", &late).ack().code, Some(RejectionCode::MatchFinished));
}

#[test]
fn same_uuid_with_another_payload_or_precondition() {
    let mut h = Harness::conecta4();
    let id = Uuid::from_u128(42);
    let original = h.envelope(id, Precondition::Match { revision: 0 }, "drop", json!({"column": 3}));
    h.run("alice", &original);
    let key = h.receipts.keys().next().unwrap().clone();
    let stored = h.receipts[&key].clone();
    let other_payload = h.envelope(id, Precondition::Match { revision: 0 }, "drop", json!({"column": 4}));
    let other_pre = h.envelope(id, Precondition::Match { revision: 1 }, "drop", json!({"column": 3}));
    assert_eq!(h.run("alice", &other_payload), Answer::Reused);
    assert_eq!(h.run("alice", &other_pre), Answer::Reused);
    assert_eq!(h.receipts[&key], stored, "the original receipt is untouched");
    assert_eq!(h.state().revision, 1);
    // The same id from another principal is another key: judged on its own.
    let bobs = h.envelope(id, Precondition::Match { revision: 1 }, "drop", json!({"column": 4}));
    assert_eq!(h.run("bob", &bobs).ack().status, AckStatus::Applied);
}

#[test]
fn match_replay_from_the_pinned_module_and_trace() {
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben"), ("p2", "cid")], json!({"target": 20}), 8);
    for (i, (p, s)) in [("ann", "p0"), ("ben", "p1"), ("cid", "p2")].iter().enumerate() {
        mark(&mut h, p, s, 100 + i as u128, i as u8);
        ready(&mut h, p, s, 200 + i as u128);
    }
    let principals = [("p0", "ann"), ("p1", "ben"), ("p2", "cid")];
    let mut n = 0;
    while !h.state().is_finished() {
        let seat = h.state().position.flow.actors.keys().next().unwrap().clone();
        let principal = principals.iter().find(|(s, _)| *s == seat).unwrap().1;
        let env = h.envelope(
            Uuid::from_u128(300 + n),
            Precondition::Match { revision: h.state().revision },
            "roll",
            json!({}),
        );
        assert_eq!(h.run(principal, &env).ack().status, AckStatus::Applied);
        n += 1;
    }
    assert!(h.log.iter().any(|e| !e.trace.is_empty()), "rolls recorded a trace");
    h.replay().expect("the match replays to its stored state");

    // A tampered trace makes the replay diverge instead of silently re-rolling.
    let mut tampered = h.log.clone();
    let entry = tampered.iter_mut().find(|e| !e.trace.is_empty()).unwrap();
    entry.trace[0].label = "other".into();
    assert!(juegoland_core::replay(&h.engine.registry, h.state(), &tampered).is_err());
    // A tampered stored state is reported as a difference.
    let mut state = h.state().clone();
    let mut data = state.position.data.to_value();
    data["rolls"] = json!([]);
    state.position.data = (&data).into();
    assert!(juegoland_core::replay(&h.engine.registry, &state, &h.log).is_err());
}

#[test]
fn hidden_values_stay_with_their_author_in_publications() {
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), 9);
    mark(&mut h, "ann", "p0", 1, 7);
    let last: Vec<_> = h.publications.iter().filter(|p| p.revision == 1).collect();
    assert_eq!(last.len(), 2, "one publication per seat");
    for p in last {
        let ServerMessage::Snapshot(s) = p.snapshot().unwrap() else { panic!("a snapshot") };
        assert_eq!(s.from_revision, Some(0));
        let ev = &s.events[0];
        if p.recipient.as_deref() == Some("p0") {
            assert_eq!(ev.data.to_value()["value"], 7);
            assert_eq!(s.view.to_value()["ownMarks"], json!([7]));
        } else {
            assert!(ev.data.to_value()["value"].is_null(), "ben must not see ann's mark");
            assert_eq!(s.view.to_value()["ownMarks"], json!([]));
        }
    }
    // Offers carry engine-computed preconditions; parametrized ones name the schema.
    let p1 = h.publications.iter().find(|p| p.revision == 1 && p.recipient.as_deref() == Some("p1")).unwrap();
    let ServerMessage::Snapshot(s) = p1.snapshot().unwrap() else { panic!() };
    let offers = serde_json::to_value(&s.actions).unwrap();
    assert_eq!(offers[0]["schema"], "urn:juegoland:game:prep:action:mark:1");
    assert_eq!(offers[0]["precondition"], json!({"kind":"actor","phaseEpoch":0,"actorRevision":0}));
}

#[test]
fn deadlines_fire_once_per_current_generation() {
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({"target": 1000}), 10);
    ready_both(&mut h);
    let g1 = h.state().deadlines["turn"].generation;
    assert_eq!(h.state().deadlines["turn"].due_ms, h.now_ms + crate::fixture::TURN_MS);
    // A roll passes the turn and replaces the clock: a new generation.
    let roll = h.envelope(Uuid::from_u128(77), Precondition::Match { revision: h.state().revision }, "roll", json!({}));
    h.run("ann", &roll);
    let g2 = h.state().deadlines["turn"].generation;
    assert!(g2 > g1);
    // The replaced generation no longer fires, and changes nothing.
    let before = h.state().clone();
    assert_eq!(
        h.lifecycle(LifecycleRequest::FireDeadline { id: "turn".into(), generation: g1 }),
        Err(LifecycleError::StaleDeadline)
    );
    assert_eq!(h.state(), &before);
    // The current one does not fire before it is due (whoever asks), and that changes nothing…
    assert_eq!(h.state().position.flow.actors.keys().collect::<Vec<_>>(), ["p1"]);
    let due_ms = h.state().deadlines["turn"].due_ms;
    assert_eq!(
        h.lifecycle(LifecycleRequest::FireDeadline { id: "turn".into(), generation: g2 }),
        Err(LifecycleError::NotDue { due_ms, now_ms: h.now_ms })
    );
    assert_eq!(h.state(), &before);
    // …then fires once due: consumed and the transition committed together.
    h.now_ms = due_ms;
    h.lifecycle(LifecycleRequest::FireDeadline { id: "turn".into(), generation: g2 }).unwrap();
    assert_eq!(h.state().revision, before.revision + 1);
    assert_eq!(h.state().position.flow.actors.keys().collect::<Vec<_>>(), ["p0"], "ben's turn was skipped");
    let g3 = h.state().deadlines["turn"].generation;
    assert!(g3 > g2, "the skip scheduled a fresh clock");
    // Firing the consumed generation again is stale: exactly one firing.
    assert_eq!(
        h.lifecycle(LifecycleRequest::FireDeadline { id: "turn".into(), generation: g2 }),
        Err(LifecycleError::StaleDeadline)
    );
    assert!(matches!(
        h.log.last().unwrap().op,
        juegoland_core::LoggedOp::Lifecycle { generation: Some(g), .. } if g == g2
    ));
    // Giving up cancels the clock; the whole match replays, deadline firing included.
    let give_up =
        h.envelope(Uuid::from_u128(78), Precondition::Match { revision: h.state().revision }, "giveUp", json!({}));
    h.run("ann", &give_up);
    assert!(h.state().deadlines.is_empty());
    h.replay().expect("replays with the deadline firing");
}

#[test]
fn several_versions_of_one_game_live_side_by_side() {
    use juegoland_core::{Engine, GameKey, Registry, RegistryError};
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    r.register(juegoland_sdk::erase(crate::fixture::Versioned(juegoland_conecta4::Conecta4, "1.1.0"))).unwrap();
    assert!(matches!(
        r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)),
        Err(RegistryError::Duplicate { .. })
    ));
    assert_eq!(r.latest("conecta4").unwrap().key().rules_version, "1.1.0", "new matches pin the newest");
    let engine = Engine::new(std::sync::Arc::new(r));
    let old = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let seats = [("p0", "alice"), ("p1", "bob")]
        .iter()
        .map(|(s, p)| (s.to_string(), juegoland_core::SeatHolder::Principal(p.to_string())))
        .collect();
    let (_, live) = engine.create(Uuid::from_u128(3), &old, seats, &json!({}), 0, &mut SplitMix64(1)).unwrap();
    // A match pinned to 1.0.0 keeps loading with 1.0.0.
    let state = live.state().clone();
    assert_eq!(engine.load(state.clone()).unwrap().game().key(), old);
    // A match pinned to a module this process does not have fails to load, explicitly.
    let mut unknown = state;
    unknown.game.rules_version = "0.1.0".into();
    let err = engine.load(unknown).err().expect("an unknown pinned module");
    assert!(err.0.contains("not loaded"), "{err}");
}

/// Found by the `game_commands` fuzz target: a platform cancellation under a reason code Hundido
/// gives its own cancellations (`abandoned`: both seats ran out of time; `withdrawal-in-placement`)
/// made a position Hundido's invariants call corrupt, and the cancellation faulted (INTERNAL).
/// Such a code is now refused as an invalid reason, changing nothing; a platform code cancels.
#[test]
fn a_cancellation_under_a_reason_code_the_game_keeps_for_itself_is_refused() {
    let mut r = juegoland_core::Registry::new();
    r.register(juegoland_sdk::erase(juegoland_hundido::Hundido)).unwrap();
    let engine = juegoland_core::Engine::new(std::sync::Arc::new(r));
    let seats = [("p0", "alice"), ("p1", "bob")]
        .iter()
        .map(|(s, p)| (s.to_string(), juegoland_core::SeatHolder::Principal(p.to_string())))
        .collect();
    let key = juegoland_core::GameKey { id: "hundido".into(), rules_version: "1.0.0".into() };
    let (_, mut live) = engine.create(Uuid::from_u128(9), key, seats, &json!({}), 0, &mut SplitMix64(1)).unwrap();
    let cancel = |code: &str| LifecycleRequest::Cancel { reason_code: code.to_owned() };
    for reserved in [juegoland_hundido::REASON_ABANDONED, juegoland_hundido::REASON_WITHDRAWAL_IN_PLACEMENT] {
        match engine.lifecycle(&live, &cancel(reserved), 10, &mut SplitMix64(2)) {
            Err(LifecycleError::InvalidReason(message)) => {
                assert!(message.contains("hundido gives its own results") && message.contains("platform."), "{message}")
            }
            Err(e) => panic!("{reserved}: {e}"),
            Ok(_) => panic!("{reserved} cancelled the match"),
        }
    }
    let pending = engine.lifecycle(&live, &cancel("platform.abandoned"), 10, &mut SplitMix64(2)).unwrap();
    live.advance(pending);
    assert_eq!(live.state().position.result, Some(MatchResult::cancelled("platform.abandoned")));
}

#[test]
fn cancellation_invents_no_winner_and_stops_offers_and_deadlines() {
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({"target": 1000}), 11);
    ready_both(&mut h);
    assert!(h.state().deadlines.contains_key("turn"), "the turn clock is pending");
    let before = h.state().clone();
    // A reason code is a short machine key.
    for bad in ["", "Spaces here", "UPPER", &"x".repeat(65)] {
        assert!(matches!(
            h.lifecycle(LifecycleRequest::Cancel { reason_code: bad.to_owned() }),
            Err(LifecycleError::InvalidReason(_))
        ));
    }
    assert_eq!(h.state(), &before, "refusals change nothing");

    h.lifecycle(LifecycleRequest::Cancel { reason_code: "platform.abandoned".into() }).unwrap();
    let s = h.state();
    assert_eq!(s.revision, before.revision + 1, "one revision");
    assert_eq!(s.position.result, Some(MatchResult::cancelled("platform.abandoned")));
    assert!(s.position.flow.actors.is_empty(), "no actors: no offers");
    assert!(s.deadlines.is_empty(), "pending deadlines are cancelled");
    assert_eq!(s.position.data, before.position.data, "the rules' data is untouched");
    assert!(
        matches!(&h.log.last().unwrap().op, juegoland_core::LoggedOp::Cancel { reason_code } if reason_code == "platform.abandoned")
    );
    // Every recipient's publication of that revision offers nothing and shows the result.
    let last: Vec<_> = h.publications.iter().filter(|p| p.revision == s.revision).collect();
    assert!(!last.is_empty());
    for p in last {
        let ServerMessage::Snapshot(snap) = p.snapshot().unwrap() else { panic!("a snapshot") };
        assert!(snap.actions.is_empty(), "{:?} is offered actions after the cancellation", p.recipient);
    }
    // The old clock can no longer fire; nothing else can happen to the match.
    let g = before.deadlines["turn"].generation;
    assert_eq!(
        h.lifecycle(LifecycleRequest::FireDeadline { id: "turn".into(), generation: g }),
        Err(LifecycleError::Finished)
    );
    assert_eq!(h.lifecycle(LifecycleRequest::Cancel { reason_code: "again".into() }), Err(LifecycleError::Finished));
    let roll = h.envelope(Uuid::from_u128(79), Precondition::Match { revision: h.state().revision }, "roll", json!({}));
    assert_eq!(h.run("ann", &roll).ack().status, AckStatus::Rejected);
    h.replay().expect("a cancelled match replays");
}

#[test]
fn a_match_pins_its_rules_digest_and_refuses_another_contract() {
    let mut h = Harness::conecta4();
    let loaded = h.engine.registry.get(&h.state().game).unwrap().clone();
    assert_eq!(h.state().rules_digest, loaded.digest, "creation pins the module's digest");
    assert_eq!(loaded.digest.len(), 64);
    assert!(loaded.digest.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    // Another version of the same game is another contract.
    let newer = crate::fixture::Versioned(juegoland_conecta4::Conecta4, "1.1.0");
    let newer = juegoland_sdk::erase(newer);
    let newer = juegoland_core::rules_digest(newer.descriptor(), newer.schemas());
    assert_ne!(newer, loaded.digest);

    // The digest survives every later revision, and a pinned match replays.
    let env = h.envelope(Uuid::from_u128(1), Precondition::Match { revision: 0 }, "drop", json!({"column": 3}));
    assert_eq!(h.run("alice", &env).ack().status, AckStatus::Applied);
    assert_eq!(h.state().rules_digest, loaded.digest);
    h.replay().expect("a pinned match replays");

    // The module registered under this version now declares another contract: the match
    // neither loads nor replays, and both say why.
    let mut other = h.state().clone();
    other.rules_digest = "0".repeat(64);
    let err = h.engine.load(other.clone()).err().expect("a changed contract refuses to load");
    assert!(err.0.contains("pinned to 0000"), "{err}");
    let err = juegoland_core::replay(&h.engine.registry, &other, &h.log).expect_err("and to replay");
    assert!(matches!(err, juegoland_core::ReplayError::Pinned(_)), "{err}");

    // A match stored before digests were pinned has none, and loads as before.
    let mut legacy = serde_json::to_value(h.state()).unwrap();
    legacy.as_object_mut().unwrap().remove("rulesDigest");
    let legacy: MatchState = serde_json::from_value(legacy).expect("an envelope without a digest decodes");
    assert!(legacy.rules_digest.is_empty());
    h.engine.load(legacy).expect("and loads");
}

/// A package registry that answers one publication, or fails to read.
struct OnePublication {
    id: &'static str,
    version: &'static str,
    answer: Result<String, String>,
}

impl juegoland_core::PublishedPackages for OnePublication {
    fn lock_digest(&self, id: &str, version: &str) -> Result<Option<String>, String> {
        match &self.answer {
            Err(e) => Err(e.clone()),
            Ok(digest) => Ok((id == self.id && version == self.version).then(|| digest.clone())),
        }
    }

    /// Its one publication, for the rules of its own version.
    fn game_versions(&self, id: &str) -> Result<Vec<juegoland_core::PublishedGame>, String> {
        let digest = self.lock_digest(id, self.version)?;
        Ok(digest
            .map(|lock_digest| juegoland_core::PublishedGame {
                version: self.version.to_owned(),
                rules_version: self.version.to_owned(),
                lock_digest,
            })
            .into_iter()
            .collect())
    }
}

#[test]
fn a_match_pins_its_published_package_and_loads_only_with_that_publication() {
    use juegoland_core::{PackagePin, PinError};
    let h = Harness::conecta4();
    let with = |answer: Result<&str, &str>| {
        let answer = answer.map(str::to_owned).map_err(str::to_owned);
        h.engine.clone().with_packages(std::sync::Arc::new(OnePublication { id: "conecta4", version: "1.0.0", answer }))
    };
    let lock = "c".repeat(64);
    let mut entropy = SplitMix64(3);
    let seats = h.state().seats.clone();
    let create = |engine: &juegoland_core::Engine, entropy: &mut SplitMix64| {
        let (pending, _) =
            engine.create(Uuid::from_u128(77), &h.state().game, seats.clone(), &json!({}), 5, entropy).unwrap();
        pending.commit.state.expect("a state").package.clone()
    };
    let pin = PackagePin { id: "conecta4".into(), version: "1.0.0".into(), lock_digest: lock.clone() };
    assert_eq!(create(&with(Ok(&lock)), &mut entropy), Some(pin.clone()), "a published game is pinned");
    assert_eq!(create(&h.engine, &mut entropy), None, "no registry, no pin");
    let other_game = h.engine.clone().with_packages(std::sync::Arc::new(OnePublication {
        id: "hundido",
        version: "1.0.0",
        answer: Ok(lock.clone()),
    }));
    assert_eq!(create(&other_game, &mut entropy), None, "an unpublished game is not pinned");
    assert!(
        h.engine
            .clone()
            .with_packages(std::sync::Arc::new(OnePublication {
                id: "conecta4",
                version: "1.0.0",
                answer: Err("disk on fire".into())
            }))
            .create(Uuid::from_u128(78), &h.state().game, seats.clone(), &json!({}), 5, &mut entropy)
            .is_err(),
        "an unreadable registry creates nothing"
    );

    let mut pinned = h.state().clone();
    pinned.package = Some(pin.clone());
    let id = pinned.match_id;
    with(Ok(&lock)).load(pinned.clone()).expect("the pinned publication is there");
    let (c4, v1) = ("conecta4".to_owned(), "1.0.0".to_owned());
    assert_eq!(
        h.engine.check_pin(&pinned),
        Err(PinError::NoRegistry { match_id: id, id: c4.clone(), version: v1.clone() })
    );
    let refusals = [
        (
            with(Ok(&"d".repeat(64))),
            PinError::Changed {
                match_id: id,
                id: c4.clone(),
                version: v1.clone(),
                pinned: lock.clone(),
                published: "d".repeat(64),
            },
        ),
        (
            with(Err("disk on fire")),
            PinError::Unreadable { match_id: id, id: c4.clone(), version: v1.clone(), message: "disk on fire".into() },
        ),
    ];
    for (engine, expected) in refusals {
        assert_eq!(engine.check_pin(&pinned), Err(expected.clone()));
        let fault = engine.load(pinned.clone()).err().expect("refused");
        assert_eq!(fault.0, expected.to_string());
    }
    let mut elsewhere = pinned.clone();
    elsewhere.package = Some(PackagePin { version: "1.1.0".into(), ..pin.clone() });
    assert!(matches!(with(Ok(&lock)).check_pin(&elsewhere), Err(PinError::Mismatched { .. })));
    let missing = h.engine.clone().with_packages(std::sync::Arc::new(OnePublication {
        id: "conecta4",
        version: "2.0.0",
        answer: Ok(lock.clone()),
    }));
    assert_eq!(missing.check_pin(&pinned), Err(PinError::Missing { match_id: id, id: c4, version: v1 }));
    // An unpinned match loads with any registry, and its envelope has no `package` field.
    with(Err("disk on fire")).load(h.state().clone()).expect("an unpinned match loads");
    assert!(serde_json::to_value(h.state()).unwrap().get("package").is_none());
}

#[test]
fn a_match_migrates_to_another_rules_version_replays_and_restores() {
    use juegoland_core::{Engine, GameKey, MigrationError, MigrationMark, Registry};
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4V11)).unwrap();
    registry.register(juegoland_sdk::erase(crate::fixture::Prep)).unwrap();
    let mut h = Harness::conecta4();
    h.engine = Engine::new(std::sync::Arc::new(registry));
    // The centre opening: legal under 1.0.0, refused under 1.1.0.
    assert_eq!(h.drop_disc(3).ack().status, AckStatus::Applied);
    let source = h.state().clone();
    let v11 = GameKey { id: "conecta4".into(), rules_version: "1.1.0".into() };

    let m = h.engine.migrate(&source, &v11).expect("1.0.0 → 1.1.0 carries the state over");
    assert_eq!(m.source, source);
    let t = &m.target;
    assert_eq!((&t.game, t.game_version.as_str(), t.revision), (&v11, "1.1.0", source.revision));
    assert_eq!(t.rules_digest, h.engine.registry.get(&v11).unwrap().digest);
    assert_eq!(t.position, source.position);
    let mark = MigrationMark { revision: 1, from: source.game.clone(), from_rules_digest: source.rules_digest.clone() };
    assert_eq!(t.migrations, vec![mark]);
    // Replay decides revision 1 with 1.0.0's rules; reading it with 1.1.0's (an alias, no
    // mark) diverges at that very revision.
    juegoland_core::replay(&h.engine.registry, t, &h.log).expect("a migrated match replays");
    let mut alias = t.clone();
    alias.migrations.clear();
    let diverged = juegoland_core::replay(&h.engine.registry, &alias, &h.log).expect_err("an alias diverges");
    assert!(diverged.to_string().contains("centre-opening"), "{diverged}");
    h.engine.load(t.clone()).expect("the migrated match loads under 1.1.0");

    // Restore: the source, while the match is exactly as migrated.
    assert_eq!(h.engine.restore_migration(t, &m), Ok(source.clone()));
    let mut advanced = t.clone();
    advanced.revision += 1;
    assert!(matches!(h.engine.restore_migration(&advanced, &m), Err(MigrationError::Changed { revision: 2, .. })));

    // Refusals, each typed.
    let key = |id: &str, v: &str| GameKey { id: id.into(), rules_version: v.into() };
    assert!(matches!(h.engine.migrate(&source, &source.game), Err(MigrationError::SameVersion { .. })));
    assert_eq!(
        h.engine.migrate(&source, &key("conecta4", "9.9.9")),
        Err(MigrationError::UnknownTarget(key("conecta4", "9.9.9")))
    );
    assert!(matches!(h.engine.migrate(&source, &key("prep", "1.0.0")), Err(MigrationError::OtherGame { .. })));
    let publishing_old = h.engine.clone().with_packages(std::sync::Arc::new(OnePublication {
        id: "conecta4",
        version: "1.0.0",
        answer: Ok("e".repeat(64)),
    }));
    let mut pinned = source.clone();
    pinned.package = Some(juegoland_core::PackagePin {
        id: "conecta4".into(),
        version: "1.0.0".into(),
        lock_digest: "e".repeat(64),
    });
    let unpinned = publishing_old.migrate(&source, &v11).expect("an unpinned match may stay unpinned");
    assert_eq!(unpinned.target.package, None);
    let unpublished = publishing_old.migrate(&pinned, &v11).expect_err("1.1.0 is not published");
    assert!(matches!(unpublished, MigrationError::TargetUnpublished { .. }), "{unpublished}");
    assert!(unpublished.to_string().contains("no package of conecta4 is published for rules 1.1.0"), "{unpublished}");
}

/// A migration validates: rules whose invariants refuse the match's state, another state
/// schema version (no game registers a state transformation), and a source state that does
/// not load under its own rules are each refused with their typed error.
#[test]
fn a_migration_to_rules_that_refuse_the_state_or_another_state_schema_is_refused() {
    use juegoland_core::{Engine, GameKey, MigrationError, Registry};
    use juegoland_sdk::Pos;

    use crate::fixture::Stricter;
    fn centre_taken(p: &Pos<juegoland_conecta4::Conecta4>) -> Option<&'static str> {
        p.data.grid.iter().any(|row| row[3].is_some()).then_some("a disc in the centre column")
    }
    let conecta4 = juegoland_conecta4::Conecta4;
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(conecta4)).unwrap();
    let strict = Stricter { game: conecta4, rules_version: "1.2.0", state_schema_version: 1, refuses: centre_taken };
    registry.register(juegoland_sdk::erase(strict)).unwrap();
    let reshaped = Stricter { game: conecta4, rules_version: "2.0.0", state_schema_version: 2, refuses: |_| None };
    registry.register(juegoland_sdk::erase(reshaped)).unwrap();
    let mut h = Harness::conecta4();
    h.engine = Engine::new(std::sync::Arc::new(registry));
    assert_eq!(h.drop_disc(3).ack().status, AckStatus::Applied);
    let source = h.state().clone();
    let key = |v: &str| GameKey { id: "conecta4".into(), rules_version: v.into() };

    let refused = h.engine.migrate(&source, &key("1.2.0")).expect_err("1.2.0 refuses a centre disc");
    assert!(matches!(refused, MigrationError::Invalid { which: "migrated", .. }), "{refused}");
    assert!(refused.to_string().contains("a disc in the centre column"), "{refused}");
    // Before the centre is taken, the same rules take the match.
    let mut early = Harness::conecta4();
    early.engine = h.engine.clone();
    assert_eq!(early.drop_disc(2).ack().status, AckStatus::Applied);
    early.engine.migrate(early.state(), &key("1.2.0")).expect("no centre disc yet");

    assert_eq!(
        h.engine.migrate(&source, &key("2.0.0")),
        Err(MigrationError::NoTransform {
            match_id: source.match_id,
            from: "1.0.0".into(),
            to: "2.0.0".into(),
            from_schema: 1,
            to_schema: 2,
        })
    );

    // A source its own rules call corrupt is refused before the target is considered.
    let mut corrupt = source.clone();
    let mut data = corrupt.position.data.to_value();
    data["moveCount"] = json!(5);
    corrupt.position.data = (&data).into();
    let refused = h.engine.migrate(&corrupt, &key("2.0.0")).expect_err("the source does not load");
    assert!(matches!(refused, MigrationError::Invalid { which: "source", .. }), "{refused}");
}
