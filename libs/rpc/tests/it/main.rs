//! The border: conversions round-trip, bad fields are typed errors, and failures keep their
//! names across a `tonic::Status`.

use std::collections::BTreeMap;

use juegoland_core::SeatHolder;
use juegoland_protocol::{Action, CommandEnvelope, Precondition};
use juegoland_rpc::{RpcError, envelope, envelope_to_json, pb, seats, seats_to_pb, uuid_field};
use serde_json::json;
use tonic::{Code, Status};
use uuid::Uuid;

#[test]
fn every_error_keeps_its_name_through_a_status() {
    for e in [
        RpcError::NotOwner("n1".into()),
        RpcError::Unavailable("moving".into()),
        RpcError::MatchNotFound,
        RpcError::Invalid("bad".into()),
        RpcError::Refused { code: "MATCH_FINISHED".into(), message: "the match is finished".into() },
        RpcError::Internal("boom".into()),
    ] {
        let status: Status = e.clone().into();
        assert_eq!(RpcError::from(status), e);
    }
}

#[test]
fn transport_failures_are_retryable() {
    let e = RpcError::from(Status::new(Code::Unavailable, "connection refused"));
    assert!(e.is_retryable(), "{e:?}");
    assert!(!RpcError::from(Status::new(Code::PermissionDenied, "no")).is_retryable());
    assert!(!RpcError::MatchNotFound.is_retryable());
}

#[test]
fn envelopes_round_trip_through_the_strict_decoder() {
    let env = CommandEnvelope {
        match_id: Uuid::from_u128(7),
        command_id: Uuid::from_u128(8),
        precondition: Precondition::Match { revision: 3 },
        action: Action { r#type: "drop".into(), payload: json!({ "column": 2 }) },
    };
    assert_eq!(envelope(&envelope_to_json(&env)).expect("decodes"), env);
    let dup = r#"{"type":"game.command","type":"game.command"}"#;
    assert!(matches!(envelope(dup), Err(RpcError::Invalid(_))));
    assert!(matches!(envelope("{}"), Err(RpcError::Invalid(_))));
}

#[test]
fn seats_and_ids_are_validated() {
    let s = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Bot("random".into())),
    ]);
    assert_eq!(seats(seats_to_pb(&s)).expect("valid"), s);
    let empty = [("p0".to_string(), pb::SeatHolder { holder: None })].into_iter().collect();
    assert!(matches!(seats(empty), Err(RpcError::Invalid(m)) if m.contains("p0")));
    assert!(matches!(uuid_field("match_id", "nope"), Err(RpcError::Invalid(m)) if m.starts_with("match_id")));
}
