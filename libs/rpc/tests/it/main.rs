//! The border: every request and reply round-trips through the wire, bad fields are typed
//! errors naming the field, and every failure keeps its code across a `tonic::Status`.

use std::collections::BTreeMap;

use juegoland_api::{Created, MatchError, MatchReply, MatchRequest, Refusal, SyncReply};
use juegoland_core::{GameKey, LifecycleRequest, PackagePin, SeatHolder};
use juegoland_protocol::{Action, CommandEnvelope, ErrorCode, ErrorMessage, Precondition, ServerMessage};
use juegoland_rpc::{from_status, pb, reply, reply_to_pb, request, request_to_pb, seats, seats_to_pb, to_status};
use serde_json::json;
use tonic::{Code, Status};
use uuid::Uuid;

fn every_error() -> Vec<MatchError> {
    let mut all = vec![
        MatchError::NotFound,
        MatchError::NotOwner("n1".into()),
        MatchError::Unavailable("moving".into()),
        MatchError::Invalid("bad".into()),
        MatchError::Internal("boom".into()),
    ];
    all.extend(Refusal::ALL.map(|refusal| MatchError::Refused { refusal, message: "no".into() }));
    all
}

#[test]
fn every_error_keeps_its_code_through_a_status() {
    for e in every_error() {
        let status = to_status(&e);
        assert_eq!(status.code(), Code::from_i32(e.wire().grpc), "{e}");
        assert_eq!(from_status(&status), e);
    }
}

#[test]
fn transport_failures_are_retryable() {
    let e = from_status(&Status::new(Code::Unavailable, "connection refused"));
    assert!(e.is_retryable(), "{e:?}");
    assert!(!from_status(&Status::new(Code::PermissionDenied, "no")).is_retryable());
    assert!(!MatchError::NotFound.is_retryable());
}

fn envelope() -> CommandEnvelope {
    CommandEnvelope {
        match_id: Uuid::from_u128(7),
        command_id: Uuid::from_u128(8),
        precondition: Precondition::Match { revision: 3 },
        action: Action { r#type: "drop".into(), payload: json!({ "column": 2 }) },
    }
}

#[test]
fn every_request_and_reply_round_trips() {
    let m = Uuid::from_u128(7);
    let lifecycle = |request| MatchRequest::Lifecycle { match_id: m, request };
    let requests = [
        MatchRequest::Create {
            match_id: m,
            game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
            seats: BTreeMap::from([
                ("p0".to_string(), SeatHolder::Principal("alice".into())),
                ("p1".to_string(), SeatHolder::Bot("default".into())),
            ]),
            config: json!({ "clock": { "initialMs": 1000 } }),
        },
        MatchRequest::Command { principal: "alice".into(), envelope: envelope() },
        MatchRequest::CommandStatus { match_id: m, principal: "alice".into(), command_id: Uuid::from_u128(8) },
        MatchRequest::Sync { match_id: m, principal: "bob".into() },
        lifecycle(LifecycleRequest::Withdraw { seat: "p1".into() }),
        lifecycle(LifecycleRequest::FireDeadline { id: "clock".into(), generation: 4 }),
        lifecycle(LifecycleRequest::Cancel { reason_code: "platform.abandoned".into() }),
        MatchRequest::Revision { match_id: m },
    ];
    let ops: Vec<_> = requests.iter().map(MatchRequest::op).collect();
    assert_eq!(ops, MatchRequest::OPS, "one request of every operation");
    for r in requests {
        assert_eq!(request(request_to_pb(&r)).expect("converts back"), r);
    }
    let error = ErrorMessage::new(ErrorCode::Forbidden).with_match_id(m);
    let replies = [
        MatchReply::Created(Created { match_id: m, rules_digest: "0".repeat(64), package: None }),
        MatchReply::Created(Created {
            match_id: m,
            rules_digest: "1".repeat(64),
            package: Some(PackagePin { id: "conecta4".into(), version: "1.0.0".into(), lock_digest: "2".repeat(64) }),
        }),
        MatchReply::Message(ServerMessage::Error(error.clone())),
        MatchReply::Snapshot(Box::new(SyncReply {
            seat: "p0".into(),
            revision: 2,
            game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
            view_schema_version: 1,
            event_schema_version: 1,
            snapshot: ServerMessage::Error(error),
        })),
        MatchReply::Revision(9),
    ];
    for r in replies {
        assert_eq!(reply(reply_to_pb(&r)).expect("converts back"), r);
    }
}

#[test]
fn bad_fields_are_invalid_and_named() {
    let invalid = |wire: pb::match_request::Request| match request(pb::MatchRequest { request: Some(wire) }) {
        Err(MatchError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    };
    // Envelopes go through the protocol's strict decoder.
    let dup = r#"{"type":"game.command","type":"game.command"}"#;
    let command = |json: &str| pb::SubmitCommandRequest { principal: "a".into(), envelope_json: json.into() };
    assert!(invalid(pb::match_request::Request::Command(command(dup))).starts_with("envelope"));
    assert!(invalid(pb::match_request::Request::Command(command("{}"))).starts_with("envelope"));
    let revision = pb::RevisionRequest { match_id: "nope".into() };
    assert!(invalid(pb::match_request::Request::Revision(revision)).starts_with("match_id"));
    assert!(matches!(request(pb::MatchRequest { request: None }), Err(MatchError::Invalid(_))));
    // A creation without an id gets one.
    let create = pb::CreateMatchRequest {
        match_id: String::new(),
        game: Some(pb::GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }),
        seats: Default::default(),
        config_json: "{}".into(),
    };
    let created = request(pb::MatchRequest { request: Some(pb::match_request::Request::Create(create)) }).unwrap();
    assert!(!created.match_id().is_nil());
}

#[test]
fn seats_are_validated() {
    let s = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Bot("random".into())),
    ]);
    assert_eq!(seats(seats_to_pb(&s)).expect("valid"), s);
    let empty = [("p0".to_string(), pb::SeatHolder { holder: None })].into_iter().collect();
    assert!(matches!(seats(empty), Err(MatchError::Invalid(m)) if m.contains("p0")));
}
