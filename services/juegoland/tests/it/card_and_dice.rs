//! Brisca, La Oca and Serpientes y escaleras through the real `juegoland` binary: bots seated
//! from the platform API fill every seat and play to the end (a four-bot Brisca, a four-bot
//! Oca, a six-bot Serpientes), every stored match replays, and a person plays Brisca against
//! three bots over the WebSocket protocol, seeing only what a seat may see.

use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_core::Engine;
use juegoland_store::{SqliteStore, Store};
use serde_json::{Value, json};

use crate::client::{Server, data_dir, uuid};

async fn create(server: &Server, game: &str, seats: Value, config: Value) -> String {
    let (status, body) =
        server.http("POST", "/v1/matches", Some(json!({ "game": game, "seats": seats, "config": config }))).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().expect("matchId").to_owned()
}

fn bots(n: usize) -> Value {
    (0..n).map(|i| (format!("p{i}"), json!({ "bot": "default" }))).collect::<serde_json::Map<_, _>>().into()
}

#[tokio::test]
async fn bots_seated_from_the_platform_api_fill_every_seat_and_play_to_the_end() {
    let dir = data_dir();
    let server = Server::start_in(&dir, &[]);
    let matches = [
        ("brisca", create(&server, "brisca", bots(4), json!({"players": 4, "trumpExchange": "seven"})).await),
        ("brisca", create(&server, "brisca", bots(2), json!({"mustFollow": true})).await),
        ("oca", create(&server, "oca", bots(4), json!({"dice": 2})).await),
        ("serpientes", create(&server, "serpientes", bots(6), json!({"finish": "bounce"})).await),
    ];
    let (status, body) =
        server.http("POST", "/v1/matches", Some(json!({"game": "brisca", "seats": bots(3), "config": {}}))).await;
    assert_eq!(status, 400, "a two-player Brisca has two seats: {body}");

    // Watch the store beside the server until every match has a result.
    let engine = Engine::new(Arc::new(juegoland_catalog::registry().unwrap()));
    let reader = SqliteStore::open_reader(&*dir).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut results = Vec::new();
    for (game, id) in &matches {
        loop {
            let stored = reader.load(id.parse().unwrap()).await.unwrap().expect("the match is stored");
            let live = engine.restore(stored).unwrap();
            if let Some(result) = &live.state().position.result {
                results.push((*game, serde_json::to_value(result).unwrap()));
                break;
            }
            assert!(Instant::now() < deadline, "{game} {id} did not finish");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for (game, result) in &results {
        assert_eq!(result["kind"], "completed", "{game}: {result}");
    }
    let brisca4 = &results[0].1["participants"];
    assert_eq!(brisca4["p0"]["outcome"], brisca4["p2"]["outcome"], "partners share the outcome");
    assert_eq!(brisca4["p1"]["team"], "team1");
    assert_eq!(results[2].1["reasonCode"], "finished");
    assert_eq!(results[3].1["participants"].as_object().unwrap().len(), 6);
    drop(reader);
    drop(server);

    // Every stored match replays from its log and randomness trace.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .args(["replay", "--data-dir"])
        .arg(&*dir)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test]
async fn a_person_plays_brisca_against_three_bots_and_sees_only_their_seat() {
    let server = Server::start(&[]);
    let mut seats = bots(4);
    seats["p0"] = json!("alice");
    let m = create(&server, "brisca", seats, json!({"players": 4})).await;
    let mut alice = server.connect("alice").await;
    alice
        .send(&json!({
            "protocolVersion": 1, "type": "game.sync", "requestId": "a", "matchId": m,
            "accept": [{"id": "brisca", "rulesVersion": "1.0.0", "viewSchemaVersion": 1, "eventSchemaVersion": 1}]
        }))
        .await;
    let snap = alice.recv().await;
    assert_eq!(snap["view"]["stock"], 27, "the stock after a four-player deal: {snap}");
    assert_eq!(snap["view"]["hand"].as_array().unwrap().len(), 3);
    assert_eq!(snap["view"]["hands"], json!({"p1": 3, "p2": 3, "p3": 3}));
    assert_eq!(snap["context"]["partner"], "p2");
    let (moves, snap) = play_first_offers_to_the_end(&mut alice, &m, snap, |v| {
        // A seat's own side only, while the hand is played.
        if v["result"].is_null() {
            let points: Vec<&String> = v["view"]["points"].as_object().unwrap().keys().collect();
            assert_eq!(points, ["team0"], "{}", v["view"]);
        }
        for e in v["events"].as_array().unwrap() {
            if e["type"] == "card.drawn" && e["data"]["seat"] != "p0" {
                assert!(e["data"].get("card").is_none(), "another seat's draw shows no face: {e}");
            }
        }
    })
    .await;
    assert_eq!(moves, 10, "ten tricks, one card each");
    let r = &snap["result"]["participants"];
    assert_eq!(r["p0"]["outcome"], r["p2"]["outcome"]);
    assert_eq!(snap["view"]["points"].as_object().unwrap().len(), 2, "every side's points at the end");
}

/// Plays `client`'s first offered `play` whenever it is its turn and no command of its is
/// pending (a second board command before the ack is `COMMAND_PENDING`, and a snapshot may
/// arrive before the ack of the command that made it), until the result; `check` sees every
/// snapshot. The moves made and the last snapshot.
async fn play_first_offers_to_the_end(
    client: &mut crate::client::Client,
    m: &str,
    mut snap: Value,
    check: impl Fn(&Value),
) -> (u32, Value) {
    let (mut moves, mut pending) = (0, false);
    loop {
        if !snap["result"].is_null() {
            return (moves, snap);
        }
        if snap["context"]["yourTurn"] == true && !pending {
            let offer = snap["actions"].as_array().unwrap().iter().find(|o| o["type"] == "play").unwrap().clone();
            client
                .send(&json!({
                    "protocolVersion": 1, "type": "game.command", "matchId": m, "commandId": uuid(),
                    "precondition": offer["precondition"], "action": {"type": "play", "payload": offer["payload"]}
                }))
                .await;
            (moves, pending) = (moves + 1, true);
        }
        let v = client.recv().await;
        match v["type"].as_str() {
            Some("game.snapshot") => {
                check(&v);
                snap = v;
            }
            Some("game.ack") => {
                assert_eq!(v["status"], "applied", "{v}");
                pending = false;
            }
            _ => panic!("{v}"),
        }
    }
}

/// Two-player Brisca, a person against the bot, to the end while a spectator watches: after
/// the stock runs out the last three tricks are played from the hands, and the bot answers
/// every one; the spectator sees the end.
#[tokio::test]
async fn a_person_plays_two_player_brisca_against_the_bot_to_the_end() {
    let server = Server::start(&[]);
    let m = create(&server, "brisca", json!({ "p0": "alice", "p1": { "bot": "default" } }), json!({})).await;
    let token = crate::spectators::grant(&server.addr.to_string(), &m).await;
    let mut spectator = crate::client::Client::connect_to(&server.addr.to_string(), &token).await;
    spectator.send(&crate::spectators::sync(&m, "watch", "brisca")).await;
    let watching = tokio::spawn(async move {
        let first = spectator.recv().await;
        assert_eq!(first["seat"], Value::Null, "{first}");
        crate::spectators::follow_to_the_end(&mut spectator).await
    });
    let mut alice = server.connect("alice").await;
    alice
        .send(&json!({
            "protocolVersion": 1, "type": "game.sync", "requestId": "a", "matchId": m,
            "accept": [{"id": "brisca", "rulesVersion": "1.0.0", "viewSchemaVersion": 1, "eventSchemaVersion": 1}]
        }))
        .await;
    let first = alice.recv().await;
    let (moves, snap) = play_first_offers_to_the_end(&mut alice, &m, first, |_| {}).await;
    assert_eq!(moves, 20, "twenty tricks, one card each");
    let seen = tokio::time::timeout(std::time::Duration::from_secs(10), watching)
        .await
        .expect("the spectator saw the end")
        .unwrap();
    assert_eq!(seen.last().unwrap()["result"], snap["result"]);
}
