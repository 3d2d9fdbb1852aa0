//! The border: every request and reply round-trips through the wire, bad fields are typed
//! errors naming the field, and every failure keeps its code across a `tonic::Status`.

use std::collections::BTreeMap;

use juegoland_api::{
    Controller, Created, MatchError, MatchReply, MatchRequest, MatchStatus, MatchSummary, Refusal, SeatSummary,
    SyncReply,
};
use juegoland_core::{CreateOptions, Expiry, GameChoice, GameKey, LifecycleRequest, PackagePin, SeatHolder};
use juegoland_protocol::{Action, CommandEnvelope, ErrorCode, ErrorMessage, Precondition, ServerMessage};
use juegoland_rpc::{from_status, pb, reply, reply_to_pb, request, request_to_pb, seats, seats_to_pb, to_status};
use juegoland_sdk::{Handover, MatchResult, Outcome, ParticipantStatus};
use serde_json::json;
use tonic::{Code, Status};
use uuid::Uuid;

fn every_error() -> Vec<MatchError> {
    let mut all = vec![
        MatchError::NotFound,
        MatchError::NotOwner("n1".into()),
        MatchError::Unavailable("moving".into()),
        MatchError::RateLimited("queue full".into()),
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
            game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }.into(),
            seats: BTreeMap::new(),
            config: json!({}),
            options: CreateOptions::default(),
        },
        MatchRequest::Create {
            match_id: m,
            game: GameChoice { id: "conecta4".into(), rules_version: None, package_version: Some("1.0.1".into()) },
            seats: BTreeMap::from([
                ("p0".to_string(), SeatHolder::Principal("alice".into())),
                ("p1".to_string(), SeatHolder::Bot("default".into())),
            ]),
            config: json!({ "clock": { "initialMs": 1000 } }),
            options: CreateOptions {
                handover: Some(Handover::Bot { after_ms: 30_000, profile: "default".into() }),
                expiry: Some(Expiry { unjoined_ms: 0, idle_ms: 3_600_000 }),
            },
        },
        MatchRequest::Replay { match_id: m, source: Uuid::from_u128(9), speed_percent: 250 },
        MatchRequest::Presence { match_id: m, principal: "alice".into(), subscription: "s-1".into(), present: true },
        MatchRequest::Command { principal: "alice".into(), envelope: envelope() },
        MatchRequest::Command {
            principal: "alice".into(),
            envelope: CommandEnvelope { precondition: Precondition::Queue, ..envelope() },
        },
        MatchRequest::CommandStatus { match_id: m, principal: "alice".into(), command_id: Uuid::from_u128(8) },
        MatchRequest::Sync { match_id: m, principal: "bob".into() },
        MatchRequest::Spectate { match_id: m },
        lifecycle(LifecycleRequest::Withdraw { seat: "p1".into() }),
        lifecycle(LifecycleRequest::FireDeadline { id: "clock".into(), generation: 4 }),
        lifecycle(LifecycleRequest::Cancel { reason_code: "platform.abandoned".into() }),
        lifecycle(LifecycleRequest::Control { seat: "p0".into(), stand_in: Some("default".into()) }),
        lifecycle(LifecycleRequest::Control { seat: "p0".into(), stand_in: None }),
        MatchRequest::Revision { match_id: m },
        MatchRequest::Describe { match_id: m },
    ];
    let mut ops: Vec<_> = requests.iter().map(MatchRequest::op).collect();
    ops.dedup();
    assert_eq!(ops, MatchRequest::OPS, "a request of every operation");
    for r in requests {
        assert_eq!(request(request_to_pb(&r)).expect("converts back"), r);
    }
    let error = ErrorMessage::new(ErrorCode::Forbidden).with_match_id(m);
    let replies = [
        MatchReply::Created(Created {
            match_id: m,
            game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
            rules_digest: "0".repeat(64),
            package: None,
            client_url: None,
        }),
        MatchReply::Created(Created {
            match_id: m,
            game: GameKey { id: "conecta4".into(), rules_version: "1.1.0".into() },
            rules_digest: "1".repeat(64),
            package: Some(PackagePin { id: "conecta4".into(), version: "1.0.0".into(), lock_digest: "2".repeat(64) }),
            client_url: Some("https://node-2.play.example.com".into()),
        }),
        MatchReply::Message(ServerMessage::Error(error.clone())),
        MatchReply::Message(ServerMessage::Ack(
            juegoland_protocol::Ack::applied(m, Uuid::from_u128(8), 4).with_sequence(Some(17)),
        )),
        MatchReply::Snapshot(Box::new(SyncReply {
            seat: None,
            revision: 2,
            game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
            view_schema_version: 1,
            event_schema_version: 1,
            snapshot: ServerMessage::Error(error.clone()),
        })),
        MatchReply::Snapshot(Box::new(SyncReply {
            seat: Some("p0".into()),
            revision: 2,
            game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
            view_schema_version: 1,
            event_schema_version: 1,
            snapshot: ServerMessage::Error(error),
        })),
        MatchReply::Revision(9),
        MatchReply::Summary(Box::new(summary(None))),
        MatchReply::Summary(Box::new(summary(Some(MatchResult::completed(
            "four-in-a-row",
            [("p0", Outcome::Win), ("p1", Outcome::Loss)],
        ))))),
        MatchReply::Summary(Box::new(summary(Some(MatchResult::Cancelled { reason_code: "platform.x".into() })))),
    ];
    for r in replies {
        assert_eq!(reply(reply_to_pb(&r)).expect("converts back"), r);
    }
}

/// A summary with every kind of seat, finished with `result` when there is one.
fn summary(result: Option<MatchResult>) -> MatchSummary {
    let result_is_none = result.is_none();
    let status = match &result {
        None => MatchStatus::Active,
        Some(MatchResult::Completed { .. }) => MatchStatus::Finished,
        Some(MatchResult::Cancelled { .. }) => MatchStatus::Cancelled,
    };
    MatchSummary {
        match_id: Uuid::from_u128(5),
        game: GameKey { id: "brisca".into(), rules_version: "1.0.0".into() },
        game_version: "1.0.2".into(),
        rules_digest: "3".repeat(64),
        package: result.is_some().then(|| PackagePin {
            id: "brisca".into(),
            version: "1.0.2".into(),
            lock_digest: "4".repeat(64),
        }),
        status,
        revision: 40,
        seats: vec![
            SeatSummary {
                seat: "p0".into(),
                controller: Controller::Human { principal: "alice".into() },
                status: ParticipantStatus::Active,
                team: Some("a".into()),
                moves: Default::default(),
            },
            SeatSummary {
                seat: "p1".into(),
                controller: Controller::Bot { profile: "default".into() },
                status: ParticipantStatus::Withdrawn,
                team: None,
                moves: Default::default(),
            },
            SeatSummary {
                seat: "p2".into(),
                controller: Controller::Handover { principal: "carol".into(), profile: "default".into() },
                status: ParticipantStatus::Active,
                team: Some("a".into()),
                moves: juegoland_core::SeatMoves { own: 7, stand_in: 33 },
            },
            SeatSummary {
                seat: "p3".into(),
                controller: Controller::Replay,
                status: ParticipantStatus::Active,
                team: None,
                moves: Default::default(),
            },
            SeatSummary {
                seat: "p4".into(),
                controller: Controller::Agent { profile: "default".into() },
                status: ParticipantStatus::Active,
                team: Some("a".into()),
                moves: Default::default(),
            },
        ],
        result,
        created_ms: 1_765_000_000_000,
        handover: Some(Handover::Bot { after_ms: 5_000, profile: "default".into() }),
        replay_of: Some(juegoland_core::ReplayOf { source: Uuid::from_u128(6), speed_percent: 200 }),
        client_url: result_is_none.then(|| "http://10.0.0.7:8090".into()),
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
    // A principal follows the one rule of its shape here too.
    let m = uuid::Uuid::from_u128(1).to_string();
    for bad in [String::new(), "bob\u{0}".to_owned(), "b".repeat(129)] {
        let sync = pb::SyncRequest { match_id: m.clone(), principal: bad.clone() };
        assert!(invalid(pb::match_request::Request::Sync(sync)).starts_with("principal"), "{bad:?}");
        let command = pb::SubmitCommandRequest { principal: bad.clone(), ..command("{}") };
        assert!(invalid(pb::match_request::Request::Command(command)).starts_with("principal"), "{bad:?}");
    }
    assert!(matches!(request(pb::MatchRequest { request: None }), Err(MatchError::Invalid(_))));
    // A creation without an id gets one.
    let create = pb::CreateMatchRequest {
        handover_json: String::new(),
        expiry_json: String::new(),
        match_id: String::new(),
        game: Some(pb::GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }),
        seats: Default::default(),
        config_json: "{}".into(),
        package_version: String::new(),
    };
    let create_request =
        |c: pb::CreateMatchRequest| pb::MatchRequest { request: Some(pb::match_request::Request::Create(c)) };
    let created = request(create_request(create.clone())).unwrap();
    assert!(!created.match_id().is_nil());
    // Empty versions are left to the engine; an empty game id is refused.
    let open = pb::CreateMatchRequest {
        game: Some(pb::GameKey { id: "conecta4".into(), rules_version: String::new() }),
        ..create.clone()
    };
    let MatchRequest::Create { game, .. } = request(create_request(open)).unwrap() else { panic!("a creation") };
    assert_eq!(game, GameChoice { id: "conecta4".into(), rules_version: None, package_version: None });
    let nameless = pb::CreateMatchRequest { game: Some(pb::GameKey::default()), ..create };
    assert!(matches!(request(create_request(nameless)), Err(MatchError::Invalid(m)) if m.starts_with("game")));
}

#[test]
fn seats_are_validated() {
    let s = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Bot("random".into())),
        ("p2".to_string(), SeatHolder::Agent("default".into())),
    ]);
    assert_eq!(seats(seats_to_pb(&s)).expect("valid"), s);
    let empty = [("p0".to_string(), pb::SeatHolder { holder: None })].into_iter().collect();
    assert!(matches!(seats(empty), Err(MatchError::Invalid(m)) if m.contains("p0")));
    let nameless = pb::SeatHolder { holder: Some(pb::seat_holder::Holder::Agent(String::new())) };
    let nameless = [("p1".to_string(), nameless)].into_iter().collect();
    assert!(matches!(seats(nameless), Err(MatchError::Invalid(m)) if m.contains("p1")));
}

#[test]
fn listings_feed_pages_and_their_queries_round_trip() {
    use juegoland_api::{
        FeedCursor, FeedEvent, FeedPage, ListedSeat, ListedStatus, MatchListing, MatchPage, MatchQuery,
    };
    use juegoland_rpc::{
        feed_page, feed_page_to_pb, feed_query, match_page, match_page_to_pb, match_query, match_query_to_pb,
    };
    let page = MatchPage {
        matches: vec![MatchListing {
            match_id: Uuid::from_u128(3),
            game: GameKey { id: "brisca".into(), rules_version: "1.0.0".into() },
            game_version: "1.0.2".into(),
            status: ListedStatus::Cancelled,
            // The store's text is the cursor's business: it does not travel.
            created_at: String::new(),
            created_ms: 1_796_551_200_123,
            seats: vec![
                ListedSeat {
                    seat: "p0".into(),
                    controller: Controller::Human { principal: "ana".into() },
                    status: ParticipantStatus::Active,
                },
                ListedSeat { seat: "p1".into(), controller: Controller::Replay, status: ParticipantStatus::Active },
                ListedSeat {
                    seat: "p2".into(),
                    controller: Controller::Agent { profile: "default".into() },
                    status: ParticipantStatus::Withdrawn,
                },
            ],
        }],
        next: Some(format!("{}~2026-12-06T10:00:00.123456Z", Uuid::from_u128(3))),
    };
    assert_eq!(match_page(match_page_to_pb(&page)).expect("converts back"), page);
    let last = MatchPage { matches: Vec::new(), next: None };
    assert_eq!(match_page(match_page_to_pb(&last)).expect("converts back"), last);
    let feed = FeedPage {
        events: vec![FeedEvent {
            id: format!("{}/40", Uuid::from_u128(5)),
            kind: "finished".into(),
            at_ms: 1_796_551_260_000,
            cursor: "812-3".into(),
            summary: summary(Some(MatchResult::Cancelled { reason_code: "platform.x".into() })),
        }],
        next: "812-3".into(),
    };
    assert_eq!(feed_page(feed_page_to_pb(&feed)).expect("converts back"), feed);

    let query = MatchQuery::parse(Some("ana".into()), Some("brisca".into()), Some("active"), None, Some(7)).unwrap();
    assert_eq!(match_query(match_query_to_pb(&query)).expect("converts back"), query);
    let any = pb::ListMatchesRequest::default();
    assert_eq!(match_query(any).unwrap(), MatchQuery { limit: 20, ..MatchQuery::default() }, "empty is any");
    let bad = |r: pb::ListMatchesRequest| match match_query(r) {
        Err(MatchError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert!(bad(pb::ListMatchesRequest { status: "won".into(), ..Default::default() }).starts_with("status"));
    assert!(bad(pb::ListMatchesRequest { after: "nope".into(), ..Default::default() }).starts_with("after"));
    assert!(bad(pb::ListMatchesRequest { limit: 101, ..Default::default() }).starts_with("limit"));
    let from_start = feed_query(&pb::ReadFeedRequest::default()).unwrap();
    assert_eq!(from_start, (FeedCursor::default(), 100));
    assert_eq!(
        feed_query(&pb::ReadFeedRequest { after: "812-3".into(), limit: 5 }).unwrap(),
        (FeedCursor { txid: 812, seq: 3 }, 5)
    );
    assert!(
        matches!(feed_query(&pb::ReadFeedRequest { after: "x".into(), limit: 5 }), Err(MatchError::Invalid(m)) if m.starts_with("after"))
    );
}
