//! Matches their humans left or never joined, through the binary: a result says who made
//! each seat's moves (a human, or a bot standing in), a platform may choose that an away
//! human forfeits its seat or cancels the match instead of a bot playing on, and a match
//! nobody joins, or everybody left, ends by itself (cancelled, told by the feed).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Client, Server, uuid};
use crate::seats::finished;

async fn create(server: &Server, body: Value) -> String {
    let (status, created) = server.http("POST", "/v1/matches", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    created["matchId"].as_str().unwrap().to_owned()
}

/// alice and bob each make two moves of Conecta 4 (columns 0 and 1), then both go away.
async fn two_moves_each_then_both_leave(server: &Server, m: &str) {
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    alice.sync(m, "a").await;
    bob.sync(m, "b").await;
    for revision in 0..4u64 {
        let mover: &mut Client = if revision % 2 == 0 { &mut alice } else { &mut bob };
        mover.drop_disc(m, &uuid(), revision, revision % 2).await;
        let (ack, _) = mover.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied", "{ack}");
    }
}

/// The feed's events of `m` of `kind`.
async fn feed_events(server: &Server, m: &str, kind: &str) -> Vec<Value> {
    let (_, feed) = server.http("GET", "/v1/feed?limit=100", None).await;
    feed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["match"]["matchId"] == m && e["kind"] == kind)
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_result_played_out_by_bots_says_so_seat_by_seat() {
    let server = Server::start(&[]);
    let handover = json!({"kind": "bot", "afterMs": 1000, "profile": "default"});
    let m =
        create(&server, json!({"game": "conecta4", "seats": {"p0": "alice", "p1": "bob"}, "handover": handover})).await;
    two_moves_each_then_both_leave(&server, &m).await;
    let summary = finished(&server, &m).await;
    assert_eq!(summary["status"], "finished", "{summary}");
    for seat in summary["seats"].as_array().unwrap() {
        let moves = &seat["moves"];
        assert_eq!(moves["own"], 2, "{summary}");
        assert!(moves["standIn"].as_u64().unwrap() >= 2, "bots finished the match: {summary}");
    }
    // The feed's `finished` event (what webhooks deliver) carries the same.
    let done = feed_events(&server, &m, "finished").await;
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["match"]["seats"], summary["seats"], "{done:?}");
}

#[tokio::test]
async fn under_the_forfeit_policy_an_away_human_loses_its_seat_and_no_bot_plays() {
    let server = Server::start(&[]);
    let handover = json!({"kind": "forfeit", "afterMs": 1000});
    let body = json!({"game": "conecta4", "seats": {"p0": "alice", "p1": "bob"}, "handover": handover});
    let m = create(&server, body).await;
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    alice.sync(&m, "a").await;
    bob.sync(&m, "b").await;
    alice.drop_disc(&m, &uuid(), 0, 3).await;
    alice.recv_type("game.ack").await;
    drop(bob);
    let left = Instant::now();
    let summary = finished(&server, &m).await;
    assert!(left.elapsed() >= Duration::from_millis(900), "not before the grace");
    assert_eq!(summary["seats"][1]["status"], "withdrawn", "{summary}");
    assert_eq!(summary["seats"][1]["moves"], json!({"own": 0, "standIn": 0}), "no bot played: {summary}");
    let outcomes = &summary["result"]["participants"];
    assert_eq!(
        (outcomes["p0"]["outcome"].as_str(), outcomes["p1"]["outcome"].as_str()),
        (Some("win"), Some("loss")),
        "{summary}"
    );
    // An unknown policy field is named.
    let bad =
        json!({"game": "conecta4", "seats": {"p0": "a", "p1": "b"}, "handover": {"kind": "forfeit", "afterMs": 5}});
    let (status, refused) = server.http("POST", "/v1/matches", Some(bad)).await;
    assert_eq!(
        (status, refused["code"].as_str(), refused["field"].as_str()),
        (400, Some("INVALID_HANDOVER"), Some("handover.afterMs")),
        "{refused}"
    );
}

#[tokio::test]
async fn under_the_cancel_policy_an_away_human_cancels_the_match() {
    let server = Server::start(&[]);
    let handover = json!({"kind": "cancel", "afterMs": 1000});
    let m =
        create(&server, json!({"game": "conecta4", "seats": {"p0": "alice", "p1": "bob"}, "handover": handover})).await;
    two_moves_each_then_both_leave(&server, &m).await;
    let summary = finished(&server, &m).await;
    assert_eq!(summary["status"], "cancelled", "{summary}");
    assert_eq!(summary["result"], json!({"kind": "cancelled", "reasonCode": "match.expired.abandoned"}), "{summary}");
    assert_eq!(feed_events(&server, &m, "cancelled").await.len(), 1);
}

#[tokio::test]
async fn a_match_nobody_joins_or_everybody_left_ends_by_itself() {
    let server = Server::start(&[]);
    let expiry = json!({"unjoinedMs": 1000, "idleMs": 2000});
    let seats = json!({"p0": "alice", "p1": "bob"});
    let unjoined = create(&server, json!({"game": "conecta4", "seats": seats, "expiry": expiry})).await;
    let left = create(&server, json!({"game": "conecta4", "seats": seats, "expiry": expiry})).await;
    let mut alice = server.connect("alice").await;
    alice.sync(&left, "a").await;
    // The move's instant is after this: its idle time ends at least 2 s from here.
    let moved = Instant::now();
    alice.drop_disc(&left, &uuid(), 0, 3).await;
    alice.recv_type("game.ack").await;
    drop(alice);

    let summary = finished(&server, &unjoined).await;
    assert_eq!(summary["result"], json!({"kind": "cancelled", "reasonCode": "match.expired.unjoined"}), "{summary}");
    let summary = finished(&server, &left).await;
    assert!(moved.elapsed() >= Duration::from_millis(1900), "idle for its idle time first: {:?}", moved.elapsed());
    assert_eq!(summary["result"], json!({"kind": "cancelled", "reasonCode": "match.expired.abandoned"}), "{summary}");
    for m in [&unjoined, &left] {
        assert_eq!(feed_events(&server, m, "cancelled").await.len(), 1, "the feed (and webhooks) tell it");
    }
    // Out of range, and the field named.
    let bad = json!({"game": "conecta4", "seats": seats, "expiry": {"unjoinedMs": 10}});
    let (status, refused) = server.http("POST", "/v1/matches", Some(bad)).await;
    assert_eq!(
        (status, refused["code"].as_str(), refused["field"].as_str()),
        (400, Some("INVALID_EXPIRY"), Some("expiry.unjoinedMs")),
        "{refused}"
    );
    assert!(refused["message"].as_str().unwrap().contains("expiry.unjoinedMs"), "{refused}");
}
