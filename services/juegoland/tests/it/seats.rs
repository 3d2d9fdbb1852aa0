//! Who answers "your move?" (engine spec § Seats) through the real `juegoland` binary over
//! real sockets: a bot takes an away human's seat after the match's grace and hands it back
//! when the human syncs again (same seat, no new invitation, every recipient told who plays
//! it), and a replay match plays a stored Hundido or Brisca match's decisions back, with
//! its randomness, to the same result.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Client, Server, uuid};

/// Alice's next snapshot that offers her a move, and whatever arrived before it.
async fn alice_s_turn(alice: &mut Client) -> (Value, Vec<Value>) {
    let mut passed = Vec::new();
    loop {
        let (snap, _) = alice.recv_type("game.snapshot").await;
        if !snap["actions"].as_array().expect("actions").is_empty() || !snap["result"].is_null() {
            return (snap, passed);
        }
        passed.push(snap);
    }
}

#[tokio::test]
async fn a_bot_plays_an_away_human_s_seat_after_the_grace_and_hands_it_back_when_the_human_returns() {
    let server = Server::start(&[]);
    let handover = json!({"kind": "bot", "afterMs": 1000, "profile": "default"});
    let (status, body) = server
        .http(
            "POST",
            "/v1/matches",
            Some(json!({"game": "conecta4", "seats": {"p0": "alice", "p1": "bob"}, "handover": handover})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let m = body["matchId"].as_str().unwrap().to_owned();
    let (_, summary) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
    assert_eq!(summary["handover"], handover, "{summary}");

    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let first = alice.sync(&m, "a-1").await;
    assert!(first.get("controllers").is_none(), "humans play every seat: {first}");
    bob.sync(&m, "b-1").await;
    alice.drop_disc(&m, &uuid(), 0, 0).await;
    alice.recv_type("game.ack").await;
    bob.recv_revision(1).await;

    // Bob goes away on his turn. The disconnect alone withdraws nobody; after the grace a
    // revision of its own tells everyone a bot plays p1, and the bot moves.
    drop(bob);
    let left = Instant::now();
    let handed = alice.recv_revision(2).await;
    assert!(left.elapsed() >= Duration::from_millis(900), "not before the grace: {:?}", left.elapsed());
    assert_eq!(handed["controllers"], json!({"p0": "human", "p1": "handover"}), "{handed}");
    assert_eq!(handed["events"], json!([]), "a change of hands is no move: {handed}");
    let (mine, passed) = alice_s_turn(&mut alice).await;
    let bot_move = passed.last().unwrap_or(&mine);
    assert_eq!(bot_move["revision"], 3, "the bot played p1's move: {bot_move}");
    assert_eq!(bot_move["events"][0]["type"], "disc.dropped", "{bot_move}");
    assert_eq!(mine["controllers"], json!({"p0": "human", "p1": "handover"}));
    let (_, summary) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
    assert_eq!(
        summary["seats"][1],
        json!({"seat": "p1", "controller": {"kind": "handover", "principal": "bob", "profile": "default"},
               "status": "active", "moves": {"own": 0, "standIn": 1}}),
        "{summary}"
    );

    // Bob comes back while it is alice's turn: his sync hands the seat back, and every
    // recipient sees humans again (no `controllers`).
    let mut bob = server.connect("bob").await;
    let back = bob.sync(&m, "b-2").await;
    assert_eq!(back["seat"], "p1", "the same seat, no new invitation: {back}");
    let returned = alice.recv_revision(4).await;
    assert!(returned.get("controllers").is_none(), "humans again: {returned}");
    bob.recv_revision(4).await;
    let (_, summary) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
    assert_eq!(summary["seats"][1]["controller"], json!({"kind": "human", "principal": "bob"}), "{summary}");
    // The platform's feed tells both changes of hands.
    let (_, feed) = server.http("GET", "/v1/feed?limit=100", None).await;
    let changes: Vec<&Value> = feed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["match"]["matchId"] == m.as_str() && e["kind"] == "seatChanged")
        .collect();
    assert_eq!(changes.len(), 2, "{feed}");
    assert_eq!(changes[0]["match"]["seats"][1]["controller"]["kind"], "handover");
    assert_eq!(changes[1]["match"]["seats"][1]["controller"]["kind"], "human");

    // Alice moves, and bob plays the next move himself.
    alice.drop_disc(&m, &uuid(), 4, 6).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!(ack["revision"], 5, "{ack}");
    let his_turn = bob.recv_revision(5).await;
    assert!(!his_turn["actions"].as_array().unwrap().is_empty(), "bob's turn, not the bot's: {his_turn}");
    let column = his_turn["actions"][0]["payload"]["column"].as_u64().unwrap();
    bob.drop_disc(&m, &uuid(), 5, column).await;
    let (ack, _) = bob.recv_type("game.ack").await;
    assert_eq!((ack["status"].as_str(), ack["revision"].as_u64()), (Some("applied"), Some(6)), "{ack}");
    let metrics = crate::client::http_raw(&server.addr.to_string(), "GET", "/metrics", b"").await.2;
    assert!(metrics.contains(r#"juegoland_actor_events_total{event="handover_taken"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"juegoland_actor_events_total{event="handover_returned"} 1"#));
    assert!(metrics.contains(r#"juegoland_seats{controller="human"} 2"#), "the seats gauge by controller kind");
}

#[tokio::test]
async fn a_hand_over_policy_the_game_cannot_follow_is_refused_naming_the_field() {
    let server = Server::start(&[]);
    for (handover, field_text) in [
        (json!({"kind": "bot", "afterMs": 1000, "profile": "shark"}), "handover.profile"),
        (json!({"kind": "bot", "afterMs": 10, "profile": "default"}), "handover.afterMs"),
    ] {
        let body = json!({"game": "conecta4", "seats": {"p0": "alice", "p1": "bob"}, "handover": handover});
        let (status, answer) = server.http("POST", "/v1/matches", Some(body)).await;
        assert_eq!((status, answer["code"].as_str()), (400, Some("INVALID_HANDOVER")), "{answer}");
        assert_eq!(answer["field"], field_text, "the field itself is named: {answer}");
        assert!(answer["message"].as_str().unwrap().contains(field_text), "{answer}");
    }
    let (_, games) = server.http("GET", "/v1/games", None).await;
    let conecta4 = games.as_array().unwrap().iter().find(|g| g["id"] == "conecta4").unwrap().clone();
    assert_eq!(conecta4["handover"], json!({"kind": "bot", "afterMs": 30000, "profile": "default"}), "{conecta4}");
}

/// Creates a match of bots only and waits for its end; answers its id and final summary.
pub(crate) async fn played_by_bots(server: &Server, game: &str, seats: usize, config: Value) -> (String, Value) {
    let bots: serde_json::Map<String, Value> =
        (0..seats).map(|i| (format!("p{i}"), json!({"bot": "default"}))).collect();
    let (status, body) =
        server.http("POST", "/v1/matches", Some(json!({"game": game, "seats": bots, "config": config}))).await;
    assert_eq!(status, 201, "{body}");
    let m = body["matchId"].as_str().unwrap().to_owned();
    (m.clone(), finished(server, &m).await)
}

/// The summary of `m` once it is over.
pub(crate) async fn finished(server: &Server, m: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, summary) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
        assert_eq!(status, 200, "{summary}");
        if summary["status"] != "active" {
            return summary;
        }
        assert!(Instant::now() < deadline, "{m} still active: {summary}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Replays `source` at `speed_percent` and checks the replay ends as it did, revision for
/// revision, played by the replay script; answers the replay's id.
async fn replayed_to_the_same_end(server: &Server, source: &str, original: &Value, speed_percent: u32) -> String {
    let (status, created) = server
        .http("POST", &format!("/v1/matches/{source}/replays"), Some(json!({"speedPercent": speed_percent})))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["replayOf"], json!({"source": source, "speedPercent": speed_percent}));
    assert_eq!(created["game"], original["game"], "the same rules");
    let replay = created["matchId"].as_str().unwrap().to_owned();
    assert_ne!(replay, source, "a NEW match");
    let summary = finished(server, &replay).await;
    assert_eq!(summary["status"], original["status"], "{summary}");
    assert_eq!(summary["result"], original["result"], "the same result");
    assert_eq!(summary["revision"], original["revision"], "the same decisions, one revision each");
    assert_eq!(summary["replayOf"], json!({"source": source, "speedPercent": speed_percent}));
    for seat in summary["seats"].as_array().unwrap() {
        assert_eq!(seat["controller"], json!({"kind": "replay"}), "{summary}");
    }
    replay
}

#[tokio::test]
async fn a_replay_plays_a_stored_hundido_match_into_a_new_match_to_the_same_result() {
    let server = Server::start(&[]);
    let (source, original) = played_by_bots(&server, "hundido", 2, json!({})).await;
    assert_eq!(original["status"], "finished", "{original}");

    // A spectator watches the replay from its first revision to its end.
    let (status, created) =
        server.http("POST", &format!("/v1/matches/{source}/replays"), Some(json!({"speedPercent": 5000}))).await;
    assert_eq!(status, 201, "{created}");
    let watched = created["matchId"].as_str().unwrap().to_owned();
    let token = crate::spectators::grant(&server.addr.to_string(), &watched).await;
    let mut spectator = Client::connect_to(&server.addr.to_string(), &token).await;
    spectator.send(&crate::spectators::sync(&watched, "watch", "hundido")).await;
    let (first, _) = spectator.recv_type("game.snapshot").await;
    assert_eq!(first["controllers"], json!({"p0": "replay", "p1": "replay"}), "{first}");
    if first["result"].is_null() {
        let seen = crate::spectators::follow_to_the_end(&mut spectator).await;
        assert_eq!(seen.last().unwrap()["revision"], original["revision"]);
    }
    let summary = finished(&server, &watched).await;
    assert_eq!(summary["result"], original["result"], "{summary}");

    let replay = replayed_to_the_same_end(&server, &source, &original, 10_000).await;
    // A replay is not replayed again, and a speed out of range is refused naming the field.
    let (status, refused) = server.http("POST", &format!("/v1/matches/{replay}/replays"), None).await;
    assert_eq!((status, refused["code"].as_str()), (400, Some("INVALID_REPLAY")), "{refused}");
    let (status, refused) =
        server.http("POST", &format!("/v1/matches/{source}/replays"), Some(json!({"speedPercent": 5}))).await;
    assert_eq!(
        (status, refused["code"].as_str(), refused["field"].as_str()),
        (400, Some("INVALID_REPLAY"), Some("replay"))
    );
    let (status, refused) =
        server.http("POST", &format!("/v1/matches/{}/replays", uuid()), Some(json!({"speedPercent": 100}))).await;
    assert_eq!(status, 404, "{refused}");
}

#[tokio::test]
async fn a_replay_deals_a_brisca_match_again_with_its_recorded_randomness() {
    let server = Server::start(&[]);
    let (source, original) = played_by_bots(&server, "brisca", 2, json!({"players": 2})).await;
    assert_eq!(original["status"], "finished", "{original}");
    replayed_to_the_same_end(&server, &source, &original, 10_000).await;
}
