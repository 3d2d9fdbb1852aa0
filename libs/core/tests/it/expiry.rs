//! Who made a seat's moves, and matches that end by themselves when nobody plays them: a
//! seat's applied commands are counted by whoever made them (its holder, or a bot standing in
//! for its away human), and the engine's own expiry deadline cancels a match nobody joined
//! or everybody left, arms itself again from the last move when the match was played in the
//! meantime, and recovers and replays like any revision.

use juegoland_core::{
    CreateOptions, EXPIRED_ABANDONED, EXPIRED_UNJOINED, EXPIRY_DEADLINE, Engine, Expiry, GameKey, LifecycleError,
    LifecycleRequest, LoggedOp, SeatHolder, SeatMoves,
};
use juegoland_protocol::Precondition;
use juegoland_sdk::{MatchResult, SplitMix64};
use serde_json::json;
use uuid::Uuid;

use crate::harness::{Harness, registry};

/// Conecta 4 between alice and bob that expires as platform matches do by default.
fn expiring() -> Harness {
    let seats = [("p0", "alice"), ("p1", "bob")]
        .into_iter()
        .map(|(s, p)| (s.to_owned(), SeatHolder::Principal(p.into())))
        .collect();
    let options = CreateOptions { handover: None, expiry: Some(Expiry::default()) };
    Harness::with_options("conecta4", seats, json!({}), 1, &options)
}

fn fire(h: &Harness) -> LifecycleRequest {
    let d = &h.state().deadlines[EXPIRY_DEADLINE];
    LifecycleRequest::FireDeadline { id: EXPIRY_DEADLINE.into(), generation: d.generation }
}

/// Fires the expiry at its due instant (the harness adds 10 ms to its clock first).
fn fire_when_due(h: &mut Harness) -> Result<u64, LifecycleError> {
    let due = h.state().deadlines[EXPIRY_DEADLINE].due_ms;
    h.now_ms = due - 10;
    h.lifecycle(fire(h))
}

fn cancelled_with(h: &Harness) -> Option<String> {
    match &h.state().position.result {
        Some(MatchResult::Cancelled { reason_code }) => Some(reason_code.clone()),
        _ => None,
    }
}

#[test]
fn a_seat_s_moves_are_counted_by_who_made_them() {
    let mut h = Harness::conecta4();
    h.drop_disc(3);
    h.drop_disc(4);
    h.lifecycle(LifecycleRequest::Control { seat: "p1".into(), stand_in: Some("default".into()) }).unwrap();
    h.drop_disc(3);
    for column in [5, 6] {
        let revision = h.state().revision;
        let env = h.envelope(
            Uuid::from_u128(revision.into()),
            Precondition::Match { revision },
            "drop",
            json!({"column": column}),
        );
        h.run("bot:p1", &env).ack();
        h.drop_disc(column);
    }
    let moves = &h.state().moves;
    assert_eq!(moves["p0"], SeatMoves { own: 4, stand_in: 0 });
    assert_eq!(moves["p1"], SeatMoves { own: 1, stand_in: 2 }, "bob's own move and two of the bot standing in");
    // A bot's own seat: its moves are its own.
    let mut b = Harness::conecta4_with(SeatHolder::Bot("default".into()));
    b.drop_disc(3);
    let env = b.envelope(Uuid::from_u128(7), Precondition::Match { revision: 1 }, "drop", json!({"column": 4}));
    b.run("bot:p1", &env).ack();
    assert_eq!(b.state().moves["p1"], SeatMoves { own: 1, stand_in: 0 });
    for from in 0..h.states.len() {
        assert_eq!(h.recovered(from).as_ref(), Ok(h.state()), "recovered from revision {from}");
    }
}

#[test]
fn a_match_nobody_joins_is_cancelled_when_its_first_window_ends() {
    let mut h = expiring();
    let created = h.state().created_ms;
    let d = h.state().deadlines[EXPIRY_DEADLINE].clone();
    assert_eq!(d.due_ms, created + i64::try_from(Expiry::default().unjoined_ms).unwrap());
    // Not before it is due.
    h.now_ms = d.due_ms - 20;
    assert!(matches!(h.lifecycle(fire(&h)), Err(LifecycleError::NotDue { due_ms, .. }) if due_ms == d.due_ms));
    assert_eq!(fire_when_due(&mut h), Ok(1));
    assert_eq!(cancelled_with(&h).as_deref(), Some(EXPIRED_UNJOINED));
    assert!(h.state().deadlines.is_empty());
    assert!(matches!(&h.log[1].op, LoggedOp::Cancel { reason_code } if reason_code == EXPIRED_UNJOINED));
    assert_eq!(h.recovered(0).as_ref(), Ok(h.state()));
    h.replay().expect("the log replays");
}

#[test]
fn a_played_match_arms_its_expiry_again_and_ends_once_left_idle() {
    let mut h = expiring();
    h.drop_disc(3);
    let moved = h.now_ms;
    let before = h.state().clone();
    // Due after half an hour; played since: armed again a day after the last move, in a
    // revision that changes no position and no counter, and is no decision to replay.
    assert_eq!(fire_when_due(&mut h), Ok(2));
    let after = h.state();
    assert_eq!(
        (&after.position, after.phase_epoch, &after.actor_revisions),
        (&before.position, before.phase_epoch, &before.actor_revisions)
    );
    let again = &after.deadlines[EXPIRY_DEADLINE];
    assert_eq!(again.due_ms, moved + i64::try_from(Expiry::default().idle_ms).unwrap());
    assert_eq!(again.generation, before.deadlines[EXPIRY_DEADLINE].generation + 1);
    assert!(!h.log[2].op.is_decision());
    assert!(cancelled_with(&h).is_none());
    // A day without a move: abandoned.
    assert_eq!(fire_when_due(&mut h), Ok(3));
    assert_eq!(cancelled_with(&h).as_deref(), Some(EXPIRED_ABANDONED));
    for from in 0..h.states.len() {
        assert_eq!(h.recovered(from).as_ref(), Ok(h.state()), "recovered from revision {from}");
    }
    h.replay().expect("the log replays");
}

#[test]
fn an_expiry_is_chosen_at_creation_and_checked() {
    let engine = Engine::new(registry());
    let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let seats = || {
        [("p0", "alice"), ("p1", "bob")]
            .into_iter()
            .map(|(s, p)| (s.to_owned(), SeatHolder::Principal(p.into())))
            .collect()
    };
    let create = |expiry: Expiry| {
        let options = CreateOptions { handover: None, expiry: Some(expiry) };
        engine.create_with(Uuid::from_u128(5), &key, seats(), &json!({}), &options, 1_000, &mut SplitMix64(1))
    };
    // Idle only: the first window is the idle time from creation.
    let (_, live) = create(Expiry { unjoined_ms: 0, idle_ms: 3_600_000 }).unwrap();
    assert_eq!(live.state().deadlines[EXPIRY_DEADLINE].due_ms, 1_000 + 3_600_000);
    // Both off: no expiry deadline.
    let (_, live) = create(Expiry { unjoined_ms: 0, idle_ms: 0 }).unwrap();
    assert!(!live.state().deadlines.contains_key(EXPIRY_DEADLINE));
    for refused in [Expiry { unjoined_ms: 999, idle_ms: 0 }, Expiry { unjoined_ms: 0, idle_ms: 2_592_000_001 }] {
        let e = create(refused).err().expect("refused");
        assert!(e.to_string().contains("expiry."), "{e}");
    }
    // A match with no human or agent seat counts as joined: only its idle time applies.
    let bots = [("p0", "default"), ("p1", "default")]
        .into_iter()
        .map(|(s, b)| (s.to_owned(), SeatHolder::Bot(b.into())))
        .collect();
    let expiring = CreateOptions { handover: None, expiry: Some(Expiry::default()) };
    let (_, live) =
        engine.create_with(Uuid::from_u128(6), &key, bots, &json!({}), &expiring, 1_000, &mut SplitMix64(1)).unwrap();
    assert_eq!(
        live.state().deadlines[EXPIRY_DEADLINE].due_ms,
        1_000 + i64::try_from(Expiry::default().idle_ms).unwrap()
    );
    // Without one (what the engine does unless asked; the match API asks for every
    // platform creation), the match never expires.
    let (_, live) = engine
        .create_with(
            Uuid::from_u128(7),
            &key,
            seats(),
            &json!({}),
            &CreateOptions::default(),
            1_000,
            &mut SplitMix64(1),
        )
        .unwrap();
    assert!(live.state().expiry.is_none() && live.state().deadlines.is_empty());
}
