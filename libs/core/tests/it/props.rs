//! Property tests through the whole pipeline with random legal and illegal commands.

use juegoland_core::{LifecycleRequest, LoggedOp};
use juegoland_protocol::{AckStatus, Precondition};
use proptest::prelude::*;
use serde_json::json;
use uuid::Uuid;

use crate::harness::{Answer, Harness};

#[derive(Clone, Debug)]
enum Op {
    /// A drop by a principal (0 alice, 1 bob, 2 a stranger) with a revision offset.
    Drop {
        who: u8,
        column: u8,
        offset: i8,
    },
    /// Re-send one of the earlier commands exactly.
    Retry {
        index: usize,
    },
    /// Re-use an earlier command id with another column.
    Reuse {
        index: usize,
        column: u8,
    },
    /// A malformed payload.
    BadPayload {
        who: u8,
    },
    Withdraw {
        seat: u8,
    },
    Cancel,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..3, 0u8..9, -1i8..=1).prop_map(|(who, column, offset)| Op::Drop { who, column, offset }),
        2 => any::<usize>().prop_map(|index| Op::Retry { index }),
        1 => (any::<usize>(), 0u8..7).prop_map(|(index, column)| Op::Reuse { index, column }),
        1 => (0u8..2).prop_map(|who| Op::BadPayload { who }),
        1 => (0u8..2).prop_map(|seat| Op::Withdraw { seat }),
        1 => Just(Op::Cancel),
    ]
}

const PRINCIPALS: [&str; 3] = ["alice", "bob", "mallory"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn counters_receipts_and_replay_hold_for_any_sequence(ops in proptest::collection::vec(op(), 1..60)) {
        let mut h = Harness::conecta4();
        let mut sent: Vec<(&str, juegoland_protocol::CommandEnvelope)> = Vec::new();
        for (n, op) in ops.into_iter().enumerate() {
            let before = h.state().clone();
            let id = Uuid::from_u128(10_000 + n as u128);
            let mut accepted_change = false;
            match op {
                Op::Drop { who, column, offset } => {
                    let revision = (before.revision as i64 + offset as i64).max(0) as u64;
                    let env = h.envelope(id, Precondition::Match { revision }, "drop", json!({ "column": column }));
                    let principal = PRINCIPALS[who as usize];
                    match h.run(principal, &env) {
                        Answer::Forbidden => prop_assert_eq!(who, 2),
                        Answer::Ack(_) => {
                            let ack = h.run(principal, &env);
                            prop_assert!(ack.ack().duplicate, "an exact retry is a duplicate");
                            let first = h.receipts.values().find(|r| r.key.command_id == id && r.key.principal == principal).unwrap().clone();
                            accepted_change = matches!(first.outcome, juegoland_core::ReceiptOutcome::Applied { .. });
                            if revision != before.revision { prop_assert!(!accepted_change, "a stale revision never applies"); }
                            sent.push((principal, env));
                        }
                        other => prop_assert!(false, "unexpected answer {other:?}"),
                    }
                }
                Op::Retry { index } if !sent.is_empty() => {
                    let (p, env) = sent[index % sent.len()].clone();
                    let a = h.run(p, &env);
                    prop_assert!(a.ack().duplicate);
                }
                Op::Reuse { index, column } if !sent.is_empty() => {
                    let (p, mut env) = sent[index % sent.len()].clone();
                    let receipts = h.receipts.clone();
                    let old = env.action.payload.clone();
                    env.action.payload = json!({ "column": column });
                    let a = h.run(p, &env);
                    if old == env.action.payload {
                        prop_assert!(a.ack().duplicate);
                    } else {
                        prop_assert_eq!(a, Answer::Reused);
                    }
                    prop_assert_eq!(&h.receipts, &receipts, "receipts untouched");
                }
                Op::BadPayload { who } => {
                    let env = h.envelope(id, Precondition::Match { revision: before.revision }, "drop", json!({ "col": 1 }));
                    let a = h.run(PRINCIPALS[who as usize], &env);
                    prop_assert_eq!(a.ack().status, AckStatus::Rejected);
                }
                Op::Withdraw { seat } => {
                    accepted_change = h.lifecycle(LifecycleRequest::Withdraw { seat: format!("p{seat}") }).is_ok();
                }
                Op::Cancel => {
                    accepted_change = h.lifecycle(LifecycleRequest::Cancel { reason_code: "test".into() }).is_ok();
                }
                Op::Retry { .. } | Op::Reuse { .. } => {}
            }
            let after = h.state();
            // Revision: +1 exactly per accepted change, never on a rejection.
            prop_assert_eq!(after.revision, before.revision + u64::from(accepted_change));
            if accepted_change {
                // Rule 2: a match action or lifecycle event bumps the epoch and every actor revision.
                prop_assert_eq!(after.phase_epoch, before.phase_epoch + 1);
                for (seat, r) in &after.actor_revisions {
                    prop_assert_eq!(*r, before.actor_revisions[seat] + 1);
                }
                prop_assert_eq!(h.log.last().unwrap().revision, after.revision);
                // Round and turn never decrease.
                prop_assert!(after.position.flow.turn >= before.position.flow.turn);
                prop_assert!(after.position.flow.round >= before.position.flow.round);
            } else {
                prop_assert_eq!(&before, after, "a rejection changes nothing");
            }
            // Position invariants: the stored state loads and validates.
            prop_assert!(h.engine.load(after.clone()).is_ok());
            // A finished match has no actors; an active one exactly one.
            let actors = after.position.flow.actors.len();
            prop_assert_eq!(actors, if after.is_finished() { 0 } else { 1 });
        }
        // The log has one entry per revision and replays to the stored state.
        prop_assert_eq!(h.log.len() as u64, h.state().revision + 1);
        let created = matches!(h.log[0].op, LoggedOp::Create { .. });
        prop_assert!(created, "the log starts with the creation");
        prop_assert!(h.replay().is_ok(), "{:?}", h.replay());
        // And from any committed state, the entries after it recover exactly the last one.
        for from in 0..h.states.len() {
            let recovered = h.recovered(from);
            prop_assert_eq!(recovered.as_ref(), Ok(h.state()), "recovered from revision {}", from);
        }
    }

    /// Confluence of the fixture's `actor` action: marks of different players applied in
    /// both orders give the same logical state.
    #[test]
    fn actor_marks_of_different_players_commute(a in 0u8..10, b in 0u8..10, seed in any::<u64>()) {
        let run = |first: bool| {
            let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), seed);
            let cmd = |h: &Harness, seat: &str, id: u128, value: u8| h.envelope(
                Uuid::from_u128(id),
                Precondition::Actor { phase_epoch: 0, actor_revision: h.state().actor_revisions[seat] },
                "mark",
                json!({ "value": value }),
            );
            let ca = cmd(&h, "p0", 1, a);
            let cb = cmd(&h, "p1", 2, b);
            let order = if first { [("ann", ca), ("ben", cb)] } else { [("ben", cb), ("ann", ca)] };
            for (p, c) in order {
                let ack = h.run(p, &c);
                assert_eq!(ack.ack().status, AckStatus::Applied);
            }
            h.state().clone()
        };
        let (x, y) = (run(true), run(false));
        prop_assert_eq!(&x.position, &y.position);
        prop_assert_eq!(&x.actor_revisions, &y.actor_revisions);
        prop_assert_eq!(x.phase_epoch, y.phase_epoch);
    }
}
