//! Conecta 4 end to end: sync, commands, acks, live snapshots, retries, errors, a full game
//! and a reconnect, all over a real WebSocket against the running binary.

use serde_json::{Value, json};

use crate::client::{Server, command, uuid};

/// p0 wins with four in column 0 while p1 plays column 1.
const WINNING: [u64; 7] = [0, 1, 0, 1, 0, 1, 0];

#[tokio::test]
async fn sync_commands_acks_and_live_snapshots() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;

    // Sync: the answer to the request, revision 0, no events, offers with preconditions.
    let snap = alice.sync(&m, "r-1").await;
    assert_eq!(snap["type"], "game.snapshot", "{snap}");
    assert_eq!(snap["requestId"], "r-1");
    assert_eq!(snap["revision"], 0);
    assert_eq!(snap["seat"], "p0");
    assert_eq!(snap["events"], json!([]));
    assert!(snap.get("fromRevision").is_none());
    assert_eq!(snap["result"], Value::Null);
    let actions = snap["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 7);
    assert_eq!(actions[3], json!({"type":"drop","payload":{"column":3},"precondition":{"kind":"match","revision":0}}));
    let sub = snap["subscriptionId"].as_str().unwrap().to_owned();
    let bob_snap = bob.sync(&m, "r-b").await;
    assert_eq!(bob_snap["seat"], "p1");
    assert_eq!(bob_snap["actions"], json!([]), "not bob's turn");

    // Command → ack (applied, revision 1) and a live snapshot with fromRevision 0.
    let c1 = uuid();
    let cmd = alice.drop_disc(&m, &c1, 0, 3).await;
    let mut got_ack = None;
    let mut got_live = None;
    while got_ack.is_none() || got_live.is_none() {
        let v = alice.recv().await;
        match v["type"].as_str().unwrap() {
            "game.ack" => got_ack = Some(v),
            "game.snapshot" => got_live = Some(v),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    let ack = got_ack.unwrap();
    assert_eq!(
        ack,
        json!({"protocolVersion":1,"type":"game.ack","matchId":m,"commandId":c1,"status":"applied","revision":1,"duplicate":false})
    );
    let live = got_live.unwrap();
    assert_eq!(live["fromRevision"], 0);
    assert_eq!(live["revision"], 1);
    assert_eq!(live["subscriptionId"], sub.as_str());
    assert!(live.get("requestId").is_none());
    let events = live["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "disc.dropped");
    assert_eq!(events[0]["data"]["column"], 3);
    assert_eq!(events[0]["data"]["seat"], "p0");
    // Bob sees the same revision with the same public event and now has the offers.
    let (bob_live, _) = bob.recv_type("game.snapshot").await;
    assert_eq!(bob_live["revision"], 1);
    assert_eq!(bob_live["events"][0]["type"], "disc.dropped");
    assert_eq!(bob_live["actions"].as_array().unwrap().len(), 7);

    // An exact retry: the same receipt, duplicate: true, and no new revision.
    alice.send(&cmd).await;
    let dup = alice.recv().await;
    assert_eq!(dup["type"], "game.ack");
    assert_eq!(dup["duplicate"], true);
    assert_eq!(dup["revision"], 1);
    // The same id with another payload: COMMAND_ID_REUSED, original receipt untouched.
    alice.send(&command(&m, &c1, 0, 4)).await;
    let reused = alice.recv().await;
    assert_eq!(reused["type"], "game.error");
    assert_eq!(reused["code"], "COMMAND_ID_REUSED");
    assert_eq!(reused["recovery"], "none");
    assert_eq!(reused["commandId"], c1.as_str());
    alice.send(&cmd).await;
    assert_eq!(alice.recv().await["duplicate"], true);

    // A stale revision: a final rejection receipt.
    let c2 = uuid();
    bob.drop_disc(&m, &c2, 0, 2).await;
    let (stale, _) = bob.recv_type("game.ack").await;
    assert_eq!(stale["status"], "rejected");
    assert_eq!(stale["code"], "STALE_REVISION");
    // Not your turn: ACTOR_NOT_ENABLED.
    alice.drop_disc(&m, &uuid(), 1, 2).await;
    let (not_enabled, _) = alice.recv_type("game.ack").await;
    assert_eq!(not_enabled["code"], "ACTOR_NOT_ENABLED");
    alice.expect_silence(200).await;
}

#[tokio::test]
async fn malformed_input_gets_typed_errors_and_the_connection_keeps_working() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let snap = alice.sync(&m, "r-1").await;
    assert_eq!(snap["revision"], 0);

    let cases: Vec<(String, &str)> = vec![
        ("{not json".into(), "MALFORMED_MESSAGE"),
        (r#"{"protocolVersion":1,"protocolVersion":1,"type":"game.sync"}"#.into(), "MALFORMED_MESSAGE"),
        (
            format!(
                r#"{{"protocolVersion":1,"type":"game.command","matchId":"{m}","commandId":"{}","precondition":{{"kind":"match","revision":0}},"action":{{"type":"drop","payload":{{"column":1,"column":2}}}}}}"#,
                uuid()
            ),
            "MALFORMED_MESSAGE",
        ),
        (
            format!(
                r#"{{"protocolVersion":1,"type":"game.sync","requestId":"x","matchId":"{m}","accept":[],"extra":1}}"#
            ),
            "MALFORMED_MESSAGE",
        ),
        (format!("{}{}", "[".repeat(40), "]".repeat(40)), "MALFORMED_MESSAGE"),
        (r#"{"protocolVersion":2,"type":"game.sync"}"#.into(), "UNSUPPORTED_PROTOCOL"),
        (format!(r#"{{"pad":"{}"}}"#, "x".repeat(70_000)), "MESSAGE_TOO_LARGE"),
    ];
    for (text, code) in cases {
        alice.send_text(&text).await;
        let e = alice.recv().await;
        assert_eq!(e["type"], "game.error", "{text:.80}");
        assert_eq!(e["code"], code, "{text:.80} → {e}");
        assert!(e["messageKey"].as_str().unwrap().starts_with("error."));
    }
    // Invalid UTF-8 cannot be a text frame; a binary frame is malformed too.
    alice.send_binary(vec![0xff, 0xfe, b'{']).await;
    assert_eq!(alice.recv().await["code"], "MALFORMED_MESSAGE");
    // A lone surrogate escape.
    alice.send_text(r#"{"protocolVersion":1,"type":"game.sync","requestId":"\ud800","matchId":"x","accept":[]}"#).await;
    assert_eq!(alice.recv().await["code"], "MALFORMED_MESSAGE");

    // An invalid payload for a real action is a rejection receipt, not a protocol error.
    let c = uuid();
    alice
        .send(&json!({"protocolVersion":1,"type":"game.command","matchId":m,"commandId":c,
        "precondition":{"kind":"match","revision":0},"action":{"type":"drop","payload":{"column":99}}}))
        .await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!(ack["code"], "INVALID_PAYLOAD");
    alice
        .send(&json!({"protocolVersion":1,"type":"game.command","matchId":m,"commandId":uuid(),
        "precondition":{"kind":"match","revision":0},"action":{"type":"fly","payload":{}}}))
        .await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!(ack["code"], "UNKNOWN_ACTION");

    // The connection and the match still work.
    alice.drop_disc(&m, &uuid(), 0, 3).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!(ack["status"], "applied");
    assert_eq!(ack["revision"], 1);
}

#[tokio::test]
async fn incompatible_client_forbidden_seat_and_unknown_match() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    alice
        .send(&json!({"protocolVersion":1,"type":"game.sync","requestId":"r-old","matchId":m,
            "accept":[{"id":"conecta4","rulesVersion":"0.9.0","viewSchemaVersion":1,"eventSchemaVersion":1}]}))
        .await;
    let e = alice.recv().await;
    assert_eq!(e["code"], "INCOMPATIBLE_CLIENT");
    assert_eq!(e["requestId"], "r-old");
    assert_eq!(e["recovery"], "reload-client");

    // A principal that holds no seat learns nothing: FORBIDDEN, no view.
    let mut mallory = server.connect("mallory").await;
    let e = mallory.sync(&m, "r-m").await;
    assert_eq!(e["type"], "game.error");
    assert_eq!(e["code"], "FORBIDDEN");
    assert!(e.get("view").is_none());
    mallory.drop_disc(&m, &uuid(), 0, 3).await;
    let e = mallory.recv().await;
    assert_eq!(e["code"], "FORBIDDEN");
    // Unsubscribing someone else's subscription: not found on this connection.
    let snap = alice.sync(&m, "r-2").await;
    let sub = snap["subscriptionId"].as_str().unwrap();
    mallory.send(&json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":m,"subscriptionId":sub})).await;
    assert_eq!(mallory.recv().await["code"], "SUBSCRIPTION_NOT_FOUND");

    let unknown = uuid();
    let e = alice.sync(&unknown, "r-u").await;
    assert_eq!(e["code"], "MATCH_NOT_FOUND");

    // No token, or a forged one: the upgrade is refused with 401 UNAUTHENTICATED.
    for url in [format!("ws://{}/v1/ws", server.addr), format!("ws://{}/v1/ws?access_token=forged", server.addr)] {
        match tokio_tungstenite::connect_async(url).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                assert_eq!(resp.status(), 401);
                let body: Value = serde_json::from_slice(resp.body().as_deref().unwrap_or_default()).unwrap();
                assert_eq!(body["code"], "UNAUTHENTICATED");
            }
            other => panic!("expected a refused upgrade, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_full_game_to_a_result_then_reconnect_shows_the_final_state_without_events() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    alice.sync(&m, "a").await;
    bob.sync(&m, "b").await;

    let mut last_cmd = None;
    for (i, column) in WINNING.iter().enumerate() {
        let (player, other) = if i % 2 == 0 { (&mut alice, &mut bob) } else { (&mut bob, &mut alice) };
        let cmd = player.drop_disc(&m, &uuid(), i as u64, *column).await;
        let (ack, _) = player.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied", "{ack}");
        assert_eq!(ack["revision"], i as u64 + 1);
        other.recv_revision(i as u64 + 1).await;
        last_cmd = Some(cmd);
    }
    let final_snap = alice.recv_revision(7).await;
    assert_eq!(final_snap["revision"], 7);
    assert_eq!(final_snap["result"]["kind"], "completed");
    assert_eq!(final_snap["result"]["participants"]["p0"]["outcome"], "win");
    assert_eq!(final_snap["result"]["participants"]["p1"]["outcome"], "loss");
    assert_eq!(final_snap["actions"], json!([]));
    assert_eq!(final_snap["events"][0]["data"]["line"].as_array().unwrap().len(), 4);

    // After the end: the winning command retried → the same receipt; a new one → MATCH_FINISHED.
    alice.send(last_cmd.as_ref().unwrap()).await;
    let (dup, _) = alice.recv_type("game.ack").await;
    assert_eq!(dup["duplicate"], true);
    assert_eq!(dup["revision"], 7);
    bob.drop_disc(&m, &uuid(), 7, 5).await;
    let (fin, _) = bob.recv_type("game.ack").await;
    assert_eq!(fin["code"], "MATCH_FINISHED");

    // Reconnect: the final state, no history replayed.
    drop(alice);
    let mut again = server.connect("alice").await;
    let snap = again.sync(&m, "again").await;
    assert_eq!(snap["revision"], 7);
    assert_eq!(snap["events"], json!([]));
    assert_eq!(snap["result"]["participants"]["p0"]["outcome"], "win");
    assert_eq!(snap["view"]["moveCount"], 7);
    again.expect_silence(300).await;
}

#[tokio::test]
async fn a_bot_seat_answers_every_move() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": { "bot": "default" } })).await;
    let mut alice = server.connect("alice").await;
    let mut snap = alice.sync(&m, "a").await;
    let mut revision = 0;
    while snap["result"].is_null() {
        let offer = snap["actions"][0].clone();
        assert_eq!(offer["precondition"]["revision"], revision);
        let mut cmd = command(&m, &uuid(), revision, 0);
        cmd["action"]["payload"] = offer["payload"].clone();
        alice.send(&cmd).await;
        // Our move, then the bot's (unless ours ended the game).
        loop {
            let v = alice.recv().await;
            if v["type"] == "game.snapshot" {
                revision = v["revision"].as_u64().unwrap();
                snap = v;
                if !snap["result"].is_null() || snap["context"]["yourTurn"] == true {
                    break;
                }
            }
        }
    }
    assert_eq!(snap["result"]["kind"], "completed");
}

#[tokio::test]
async fn platform_withdrawal_ends_the_match_for_the_leaver() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut bob = server.connect("bob").await;
    bob.sync(&m, "b").await;
    let (status, body) = server.http("POST", &format!("/v1/matches/{m}/withdrawals"), Some(json!({"seat":"p0"}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["revision"], 1);
    let (snap, _) = bob.recv_type("game.snapshot").await;
    assert_eq!(snap["result"]["reasonCode"], "withdrawal");
    assert_eq!(snap["result"]["participants"]["p0"]["outcome"], "loss");
    assert_eq!(snap["result"]["participants"]["p1"]["outcome"], "win");
    let (status, body) = server.http("POST", &format!("/v1/matches/{m}/withdrawals"), Some(json!({"seat":"p1"}))).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "MATCH_FINISHED");
}

/// `GET /v1/matches/{id}`: the platform reads a match without holding a seat — its status,
/// seats with who plays them, revision, result and pins — and nothing of its position.
#[tokio::test]
async fn the_platform_reads_a_match_without_a_seat() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": { "bot": "default" } })).await;
    let read = || async { server.http("GET", &format!("/v1/matches/{m}"), None).await };
    let (status, body) = read().await;
    assert_eq!(status, 200, "{body}");
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    let expected = [
        "createdMs",
        "game",
        "gameVersion",
        "handover",
        "matchId",
        "package",
        "result",
        "revision",
        "rulesDigest",
        "seats",
        "status",
    ];
    assert_eq!(keys, expected, "the summary holds no position, view or data: {body}");
    assert_eq!((body["matchId"].as_str(), body["status"].as_str()), (Some(m.as_str()), Some("active")), "{body}");
    assert_eq!(body["game"], json!({ "id": "conecta4", "rulesVersion": "1.0.0" }));
    assert_eq!(body["result"], Value::Null);
    assert_eq!(
        body["seats"],
        json!([
            { "seat": "p0", "controller": { "kind": "human", "principal": "alice" }, "status": "active",
              "moves": { "own": 0, "standIn": 0 } },
            { "seat": "p1", "controller": { "kind": "bot", "profile": "default" }, "status": "active",
              "moves": { "own": 0, "standIn": 0 } },
        ])
    );
    let (status, body) = server.http("POST", &format!("/v1/matches/{m}/withdrawals"), Some(json!({"seat":"p0"}))).await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = read().await;
    assert_eq!((body["status"].as_str(), body["revision"].as_u64()), (Some("finished"), Some(1)), "{body}");
    assert_eq!(body["seats"][0]["status"], "withdrawn", "{body}");
    assert_eq!(body["result"]["reasonCode"], "withdrawal", "{body}");
    assert_eq!(body["result"]["participants"]["p1"]["outcome"], "win", "{body}");
    for path in [format!("/v1/matches/{}", uuid()), "/v1/matches/nope".to_owned()] {
        let (status, body) = server.http("GET", &path, None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("MATCH_NOT_FOUND")), "{path}: {body}");
    }
}

/// `GET /v1/matches`: the platform lists matches by principal, game and status, newest first,
/// a page at a time (`next` is the following page's `after`); bad parameters name the field.
#[tokio::test]
async fn the_platform_lists_matches_a_page_at_a_time() {
    let server = Server::start(&[]);
    let mut created = Vec::new();
    for seats in [json!({ "p0": "dora", "p1": "eve" }), json!({ "p0": "dora", "p1": { "bot": "default" } })] {
        created.push(server.create(seats.clone()).await);
        created.push(server.create(seats).await);
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let (status, body) =
        server.http("POST", &format!("/v1/matches/{}/withdrawals", created[0]), Some(json!({"seat":"p1"}))).await;
    assert_eq!(status, 200, "{body}");
    let ids = |page: &Value| -> Vec<String> {
        page["matches"].as_array().unwrap().iter().map(|m| m["matchId"].as_str().unwrap().to_owned()).collect()
    };
    let (status, all) = server.http("GET", "/v1/matches?principal=dora&limit=100", None).await;
    assert_eq!(status, 200, "{all}");
    let mut newest_first = ids(&all);
    assert_eq!(newest_first.len(), 4, "{all}");
    assert_eq!(all["next"], Value::Null);
    let mut expected = created.clone();
    expected.sort();
    newest_first.sort();
    assert_eq!(newest_first, expected);
    let (_, eve) = server.http("GET", "/v1/matches?principal=eve&status=finished", None).await;
    assert_eq!(ids(&eve), [created[0].clone()], "{eve}");
    assert_eq!(eve["matches"][0]["seats"][1]["status"], "withdrawn", "{eve}");
    let (_, active) = server.http("GET", "/v1/matches?principal=eve&status=active&game=conecta4", None).await;
    assert_eq!(ids(&active), [created[1].clone()], "{active}");

    // Pages of three, then one: every match once.
    let (_, first) = server.http("GET", "/v1/matches?principal=dora&limit=3", None).await;
    let next = first["next"].as_str().expect("a full page has a next one").to_owned();
    let (_, second) = server.http("GET", &format!("/v1/matches?principal=dora&limit=3&after={next}"), None).await;
    let mut paged: Vec<String> = ids(&first).into_iter().chain(ids(&second)).collect();
    assert_eq!((ids(&first).len(), ids(&second).len(), &second["next"]), (3, 1, &Value::Null), "{second}");
    assert_eq!(paged, ids(&all).into_iter().collect::<Vec<_>>(), "the pages are the whole list, in order");
    paged.sort();
    assert_eq!(paged, expected);

    for (query, field) in
        [("status=over", "status"), ("limit=0", "limit"), ("limit=101", "limit"), ("after=nonsense", "after")]
    {
        let (status, body) = server.http("GET", &format!("/v1/matches?{query}"), None).await;
        assert_eq!(
            (status, body["code"].as_str(), body["field"].as_str()),
            (400, Some("INVALID_REQUEST"), Some(field)),
            "{query}: {body}"
        );
    }
    let (status, body) = server.http("GET", "/v1/matches?owner=x", None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_REQUEST")), "an unknown parameter: {body}");
}

#[tokio::test]
async fn platform_cancellation_ends_the_match_with_no_winner() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut bob = server.connect("bob").await;
    bob.sync(&m, "b").await;
    let cancel = format!("/v1/matches/{m}/cancellation");
    for (body, status, code) in
        [(json!({"reasonCode": "Not A Code"}), 400, "INVALID_REASON"), (json!({"reason": "x"}), 400, "INVALID_REQUEST")]
    {
        let (s, resp) = server.http("POST", &cancel, Some(body)).await;
        assert_eq!((s, resp["code"].as_str()), (status, Some(code)), "{resp}");
    }
    let (status, _) =
        server.http("POST", &format!("/v1/matches/{}/cancellation", uuid()), Some(json!({"reasonCode": "x"}))).await;
    assert_eq!(status, 404);
    let (status, body) = server.http("POST", &cancel, Some(json!({"reasonCode": "platform.abandoned"}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["revision"], 1);
    let (snap, _) = bob.recv_type("game.snapshot").await;
    assert_eq!(snap["result"], json!({"kind": "cancelled", "reasonCode": "platform.abandoned"}));
    assert_eq!(snap["actions"], json!([]));
    let (status, body) = server.http("POST", &cancel, Some(json!({"reasonCode": "again"}))).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("MATCH_FINISHED")), "{body}");
}

#[tokio::test]
async fn a_turn_clock_expires_in_a_live_match_and_both_players_see_it() {
    let server = Server::start(&[]);
    let clock = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1000}, "policy": "defaultMove"}});
    let body = json!({ "game": "conecta4", "seats": { "p0": "alice", "p1": "bob" }, "config": clock });
    let (status, created) = server.http("POST", "/v1/matches", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let m = created["matchId"].as_str().unwrap().to_owned();
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let a = alice.sync(&m, "a").await;
    bob.sync(&m, "b").await;
    // The view shows the running clock.
    assert_eq!(a["view"]["clock"]["running"]["seat"], "p0", "{a}");
    // Alice moves in time; bob lets his turn run out: the rules drop his disc for him.
    alice.drop_disc(&m, &uuid(), 0, 0).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!(ack["status"], "applied", "{ack}");
    for who in [&mut alice, &mut bob] {
        let first = who.recv_revision(1).await;
        assert_eq!(first["revision"], 1, "{first}");
        let expired = who.recv_revision(2).await;
        assert_eq!(expired["revision"], 2, "{expired}");
        let events = &expired["events"];
        assert_eq!((events[0]["type"].as_str(), &events[0]["data"]["seat"]), (Some("clock.expired"), &json!("p1")));
        assert_eq!((events[1]["type"].as_str(), &events[1]["data"]["seat"]), (Some("disc.dropped"), &json!("p1")));
        let alices_turn = expired["seat"] == "p0";
        assert_eq!(expired["context"]["yourTurn"], alices_turn, "alice's turn again: {expired}");
        assert_eq!(expired["view"]["clock"]["running"]["seat"], "p0", "her clock runs: {expired}");
    }
}

#[tokio::test]
async fn catalog_and_create_validation() {
    let server = Server::start(&[]);
    let (status, games) = server.http("GET", "/v1/games", None).await;
    assert_eq!(status, 200);
    let c4 = games.as_array().unwrap().iter().find(|g| g["id"] == "conecta4").expect("conecta4 in the catalog");
    assert_eq!(c4["rulesVersion"], "1.0.0");
    assert_eq!(c4["minSeats"], 2);
    for (body, code) in [
        (json!({"game":"conecta4","seats":{"p0":"alice"}}), "INVALID_SEATS"),
        (json!({"game":"conecta4","seats":{"p0":"alice","p1":"alice"}}), "INVALID_SEATS"),
        (json!({"game":"conecta4","seats":{"p0":"a","p2":"b"}}), "INVALID_SEATS"),
        (json!({"game":"conecta4","seats":{"p0":"a","p1":{"bot":"genius"}}}), "INVALID_SEATS"),
        (json!({"game":"conecta4","seats":{"p0":"a","p1":"b"},"config":{"rows":"six"}}), "INVALID_CONFIG"),
        (json!({"game":"nope","seats":{"p0":"a","p1":"b"}}), "UNKNOWN_GAME"),
        (json!({"game":"conecta4","seats":{"p0":"a","p1":"b"},"bogus":1}), "INVALID_REQUEST"),
    ] {
        let (status, resp) = server.http("POST", "/v1/matches", Some(body.clone())).await;
        assert!(status == 400 || status == 404, "{body} → {status}");
        assert_eq!(resp["code"], code, "{body} → {resp}");
    }
    let (status, metrics) = server.http("GET", "/metrics", None).await;
    assert_eq!(status, 200);
    assert!(metrics.as_str().unwrap().contains("juegoland_gateway_connections"));
    assert_eq!(server.http("GET", "/healthz", None).await.0, 200);
}

/// Acceptance row "change during sync": whatever the interleaving of syncs and commits, each
/// subscription shows the state it read, then every later revision exactly once, in order —
/// no lost window between the read and the subscription.
#[tokio::test]
async fn change_during_sync_loses_no_revision() {
    let server = Server::start(&[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let mut watcher = server.connect("alice").await;
    let mut requests = Vec::new();
    for (i, column) in WINNING.iter().enumerate() {
        let player = if i % 2 == 0 { &mut alice } else { &mut bob };
        player.drop_disc(&m, &uuid(), i as u64, *column).await;
        // A new sync races with the command just sent.
        let request_id = format!("w-{i}");
        watcher
            .send(&json!({"protocolVersion":1,"type":"game.sync","requestId":request_id,"matchId":m,
                "accept":serde_json::from_str::<Value>(crate::client::ACCEPT).unwrap()}))
            .await;
        requests.push(request_id);
        let (ack, _) = player.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied");
    }
    // Every subscription must reach the final revision 7 with no gap.
    let mut last: std::collections::BTreeMap<String, u64> = Default::default();
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < requests.len() || last.values().any(|r| *r < 7) {
        let v = watcher.recv().await;
        assert_eq!(v["type"], "game.snapshot", "{v}");
        let sub = v["subscriptionId"].as_str().unwrap().to_owned();
        let revision = v["revision"].as_u64().unwrap();
        match v.get("requestId").and_then(Value::as_str) {
            Some(request) => {
                assert!(answered.insert(request.to_owned()), "one answer per request");
                assert!(last.insert(sub, revision).is_none(), "the sync answer opens the subscription");
                assert_eq!(v["events"], json!([]));
            }
            None => {
                let previous = last.get_mut(&sub).expect("live snapshots follow their sync answer");
                assert_eq!(v["fromRevision"].as_u64(), Some(*previous), "contiguous: {v}");
                assert_eq!(revision, *previous + 1);
                *previous = revision;
            }
        }
    }
    assert_eq!(last.len(), requests.len());
    watcher.expect_silence(200).await;
}

#[tokio::test]
async fn cursors_report_the_committed_revision_per_subscription() {
    let server = Server::start(&["--cursor-interval", "1"]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let snap = alice.sync(&m, "a").await;
    let sub = snap["subscriptionId"].as_str().unwrap().to_owned();
    alice.drop_disc(&m, &uuid(), 0, 3).await;
    alice.recv_revision(1).await;
    let (cursor, _) = alice.recv_type("game.cursor").await;
    assert_eq!(cursor, json!({"protocolVersion":1,"type":"game.cursor","matchId":m,"subscriptionId":sub,"revision":1}));
    // Unsubscribing stops the cursors of that subscription.
    alice.send(&json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":m,"subscriptionId":sub})).await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    while let Some(v) = alice.try_recv(1500).await {
        assert_ne!(v["type"], "game.cursor", "no cursor after unsubscribe: {v}");
    }
}

#[tokio::test]
async fn a_flooding_connection_is_rate_limited_and_keeps_working() {
    let server = Server::start(&["--rate-limit", "5", "--rate-burst", "5"]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    for _ in 0..20 {
        alice.send(&json!({"protocolVersion":1,"type":"game.command-status","matchId":m,"commandId":uuid()})).await;
    }
    let mut limited = 0;
    for _ in 0..20 {
        let v = alice.recv().await;
        if v["code"] == "RATE_LIMITED" {
            assert_eq!(v["recovery"], "retry-same-command");
            limited += 1;
        }
    }
    assert!(limited >= 10, "{limited} of 20 limited");
    // After a pause the connection works again.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let snap = alice.sync(&m, "after").await;
    assert_eq!(snap["type"], "game.snapshot");
}
