//! Spectators through the real `juegoland` binary over real sockets: the platform grants a
//! spectator one match (`POST /v1/matches/{id}/spectators`), and the spectator follows it
//! over WebSocket with `seat: null` — every revision in order, never a hand (Brisca), never
//! an unsunk ship (Hundido), never an offer — while a command or a sync of another match is
//! refused with FORBIDDEN.

use serde_json::{Value, json};

use crate::client::{Client, Server, uuid};

async fn create(server: &Server, game: &str, seats: Value, config: Value) -> String {
    let (status, body) =
        server.http("POST", "/v1/matches", Some(json!({ "game": game, "seats": seats, "config": config }))).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().expect("matchId").to_owned()
}

/// The platform's grant: a token scoped to spectating `match_id`.
pub(crate) async fn grant(addr: &str, match_id: &str) -> String {
    let (status, body) = crate::client::http(addr, "POST", &format!("/v1/matches/{match_id}/spectators"), None).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["matchId"], match_id);
    assert_eq!(body["seat"], Value::Null);
    body["token"].as_str().expect("a token").to_owned()
}

pub(crate) fn sync(match_id: &str, request_id: &str, game: &str) -> Value {
    json!({
        "protocolVersion": 1, "type": "game.sync", "requestId": request_id, "matchId": match_id,
        "accept": [{"id": game, "rulesVersion": "1.0.0", "viewSchemaVersion": 1, "eventSchemaVersion": 1}]
    })
}

/// Every snapshot the spectator receives until the match's result, checked to be contiguous
/// and seat-less with no offers.
pub(crate) async fn follow_to_the_end(spectator: &mut Client) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    loop {
        let (snap, _) = spectator.recv_type("game.snapshot").await;
        assert_eq!(snap["seat"], Value::Null, "{snap}");
        assert_eq!(snap["actions"], json!([]), "a spectator is offered nothing: {snap}");
        if let Some(last) = seen.last() {
            assert_eq!(snap["fromRevision"], last["revision"], "contiguous revisions");
        }
        let done = !snap["result"].is_null();
        seen.push(snap);
        if done {
            return seen;
        }
    }
}

#[tokio::test]
async fn a_spectator_follows_a_brisca_match_to_its_end_and_never_receives_a_hand() {
    let server = Server::start(&[]);
    let bots: Value =
        (0..4).map(|i| (format!("p{i}"), json!({"bot": "default"}))).collect::<serde_json::Map<_, _>>().into();
    let m = create(&server, "brisca", bots, json!({"players": 4})).await;
    let token = grant(&server.addr.to_string(), &m).await;
    let mut spectator = Client::connect_to(&server.addr.to_string(), &token).await;
    spectator.send(&sync(&m, "watch", "brisca")).await;
    let first = spectator.recv().await;
    assert_eq!(
        (first["type"].as_str(), first["requestId"].as_str()),
        (Some("game.snapshot"), Some("watch")),
        "{first}"
    );
    assert_eq!(first["seat"], Value::Null);
    assert_eq!(first["view"]["hand"], json!([]), "{first}");
    assert_eq!(first["view"]["hands"].as_object().unwrap().len(), 4, "every hand's size, no hand: {first}");
    let seen = if first["result"].is_null() { follow_to_the_end(&mut spectator).await } else { vec![first.clone()] };
    let last = seen.last().unwrap().clone();
    let mut seen = seen;
    seen.insert(0, first.clone());
    if seen.len() > 1 {
        assert_eq!(seen[1]["fromRevision"], first["revision"], "the first live snapshot follows the sync");
    }
    assert_eq!(last["result"]["kind"], "completed", "the spectator saw the end: {last}");
    assert_eq!(last["view"]["points"].as_object().unwrap().len(), 2, "both sides' points at the end");
    for v in &seen {
        assert_eq!(v["view"]["hand"], json!([]), "a spectator never receives a hand: {v}");
        for e in v["events"].as_array().unwrap() {
            if e["type"] == "card.drawn" {
                assert!(e["data"].get("card").is_none(), "nobody's draw shows its face to spectators: {e}");
            }
            if e["type"] == "trump.exchanged" {
                assert!(e["data"].get("took").is_none(), "{e}");
            }
        }
        if v["result"].is_null() {
            assert_eq!(v["view"]["points"], json!({}), "points only once the match is over: {}", v["view"]);
            assert_eq!(v["view"]["hands"].as_object().unwrap().len(), 4, "{}", v["view"]);
        }
    }
    let (status, _, metrics) = crate::client::http_raw(&server.addr.to_string(), "GET", "/metrics", b"").await;
    assert_eq!(status, 200);
    assert!(
        metrics.lines().any(|l| l.starts_with("juegoland_gateway_subscriptions{controller=\"\",kind=\"spectator\"} 1")),
        "one spectator subscription: {}",
        metrics.lines().filter(|l| l.contains("subscriptions")).collect::<Vec<_>>().join("\n")
    );
}

#[tokio::test]
async fn a_spectator_on_hundido_never_sees_an_unsunk_ship() {
    let server = Server::start(&[]);
    let config = json!({
        "rows": 6, "columns": 6,
        "fleet": [{"ship": "long", "size": 3}, {"ship": "mid", "size": 2}, {"ship": "dot", "size": 1}],
    });
    let m = create(&server, "hundido", json!({"p0": {"bot": "default"}, "p1": {"bot": "default"}}), config).await;
    let token = grant(&server.addr.to_string(), &m).await;
    let mut spectator = Client::connect_to(&server.addr.to_string(), &token).await;
    spectator.send(&sync(&m, "watch", "hundido")).await;
    let first = spectator.recv().await;
    assert_eq!(first["requestId"], "watch", "{first}");
    let mut seen = vec![first.clone()];
    if first["result"].is_null() {
        seen.extend(follow_to_the_end(&mut spectator).await);
    }
    let mut sunk_total = 0;
    for v in &seen {
        assert_eq!(v["seat"], Value::Null);
        assert_eq!(v["view"]["own"], Value::Null, "a spectator has no board of its own: {v}");
        for seat in v["view"]["seats"].as_array().unwrap() {
            let mut public = seat.clone();
            let sunk = public.as_object_mut().unwrap().remove("sunk").unwrap();
            assert!(!public.to_string().contains("orientation"), "a ship placement outside `sunk`: {seat}");
            sunk_total = sunk_total.max(sunk.as_array().unwrap().len());
        }
        for e in v["events"].as_array().unwrap() {
            if e.to_string().contains("orientation") {
                assert!(e["type"].as_str().unwrap().contains("sunk"), "a placement in a public event: {e}");
            }
        }
    }
    let last = seen.last().unwrap();
    assert!(!last["result"].is_null(), "the bots play to the end");
    assert_eq!(sunk_total, 3, "the winner sank the whole fleet, which the spectator then sees");
}

#[tokio::test]
async fn a_spectator_s_command_and_a_sync_of_another_match_are_refused() {
    let server = Server::start(&[]);
    let m = server.create(json!({"p0": "alice", "p1": "bob"})).await;
    let other = server.create(json!({"p0": "alice", "p1": "bob"})).await;
    let token = grant(&server.addr.to_string(), &m).await;
    let mut spectator = Client::connect_to(&server.addr.to_string(), &token).await;
    let snap = spectator.sync(&m, "watch").await;
    assert_eq!((snap["type"].as_str(), snap["seat"].clone()), (Some("game.snapshot"), Value::Null), "{snap}");

    let command_id = uuid();
    spectator.drop_disc(&m, &command_id, 0, 3).await;
    let (e, _) = spectator.recv_type("game.error").await;
    assert_eq!(e["code"], "FORBIDDEN", "{e}");
    assert_eq!(e["messageKey"], "error.forbidden.spectator_only");
    assert_eq!(e["recovery"], "none");
    assert_eq!((e["matchId"].as_str(), e["commandId"].as_str()), (Some(m.as_str()), Some(command_id.as_str())));
    spectator
        .send(&json!({"protocolVersion": 1, "type": "game.command-status", "matchId": m, "commandId": command_id}))
        .await;
    let (e, _) = spectator.recv_type("game.error").await;
    assert_eq!(e["code"], "FORBIDDEN", "{e}");

    let e = spectator.sync(&other, "elsewhere").await;
    assert_eq!((e["type"].as_str(), e["code"].as_str()), (Some("game.error"), Some("FORBIDDEN")), "{e}");
    assert_eq!(e["requestId"], "elsewhere");

    // Nothing happened to the match: the players still play from revision 0, and the
    // spectator sees their move.
    let mut alice = server.connect("alice").await;
    let a = alice.sync(&m, "a").await;
    assert_eq!(a["revision"], 0, "the spectator's command changed nothing");
    alice.drop_disc(&m, &uuid(), 0, 3).await;
    let live = spectator.recv_revision(1).await;
    assert_eq!((live["seat"].clone(), live["fromRevision"].as_u64()), (Value::Null, Some(0)));
    assert_eq!(live["events"][0]["type"], "disc.dropped", "{live}");

    // The grant's errors: no such match, a malformed id, a body with unknown fields.
    let missing = uuid();
    let (status, body) = server.http("POST", &format!("/v1/matches/{missing}/spectators"), None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("MATCH_NOT_FOUND")), "{body}");
    let (status, body) = server.http("POST", &format!("/v1/matches/{m}/spectators"), Some(json!({"seat": "p0"}))).await;
    assert_eq!(status, 400, "{body}");
    // A seat's token is no spectator's: alice's own sync of the other match works as before.
    let a = alice.sync_answer(&other, "o").await;
    assert_eq!(a["seat"], "p0");
}

/// The next `game.snapshot` a raw Socket.IO client receives (`42["game.snapshot",{…}]`),
/// passing over cursors.
async fn next_sio_snapshot(ws: &mut crate::socketio::RawSocket) -> Value {
    loop {
        let packet = crate::socketio::next_packet(ws).await.expect("the Socket.IO session is open");
        let Some(event) = packet.strip_prefix("42") else { continue };
        let event: Value = serde_json::from_str(event).expect("an event is JSON");
        match event[0].as_str() {
            Some("game.snapshot") => return event[1].clone(),
            Some("game.cursor") => continue,
            other => panic!("unexpected event {other:?}: {packet}"),
        }
    }
}

/// Through the cluster: the platform mints the spectator's grant (routers mint no tokens, and
/// say so), and two spectators — one over WebSocket, one over Socket.IO — follow the match
/// gateway → Redis stream → their subscriptions, every revision in order, `seat: null`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spectators_follow_a_match_through_a_gateway_over_websocket_and_socket_io() {
    use crate::harness::{Cluster, create, metric_sum};
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let secret = "spectators-test-secret-0123456789abcdef0123456789";
    let (cluster, gateway) = Cluster::start_with_gateway("spectators", 2, secret, &Cluster::shared_redis()).await;
    let tokens = juegoland_edge::Tokens::new(secret.as_bytes(), 600).unwrap();
    let match_id = create(&mut cluster.client(0).await).await;
    let m = match_id.to_string();
    let router = cluster.routers[0].http.trim_start_matches("http://").to_owned();
    let (status, body) = crate::client::http(&router, "POST", &format!("/v1/matches/{m}/spectators"), None).await;
    assert_eq!((status, body["code"].as_str()), (501, Some("TOKENS_NOT_MINTED_HERE")), "{body}");
    let grant = tokens.issue_spectator(match_id).unwrap();

    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut ws = Client::connect_to(&addr, &grant).await;
    let first = ws.sync(&m, "w").await;
    assert_eq!((first["type"].as_str(), first["seat"].clone()), (Some("game.snapshot"), Value::Null), "{first}");
    let mut sio = crate::socketio::raw_socket_io(&addr, &grant, false).await;
    let sync = json!(["game.sync", crate::spectators::sync(&m, "s", "conecta4")]);
    sio.send(Message::Text(format!("42{sync}").into())).await.unwrap();
    let first = next_sio_snapshot(&mut sio).await;
    assert_eq!((first["requestId"].as_str(), first["seat"].clone()), (Some("s"), Value::Null), "{first}");

    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
    let mut bob = Client::connect_to(&addr, &tokens.issue("bob").unwrap()).await;
    alice.sync(&m, "a").await;
    bob.sync(&m, "b").await;
    // The spectator's command is refused on the gateway; the match does not move.
    ws.drop_disc(&m, &uuid(), 0, 3).await;
    let (e, _) = ws.recv_type("game.error").await;
    assert_eq!(
        (e["code"].as_str(), e["messageKey"].as_str()),
        (Some("FORBIDDEN"), Some("error.forbidden.spectator_only"))
    );
    for (i, column) in [0u64, 1, 0, 1, 0, 1, 0].into_iter().enumerate() {
        let revision = i as u64;
        let mover = if i % 2 == 0 { &mut alice } else { &mut bob };
        mover.drop_disc(&m, &uuid(), revision, column).await;
        let (ack, _) = mover.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied", "{ack}");
        let live = ws.recv_revision(revision + 1).await;
        let over_sio = next_sio_snapshot(&mut sio).await;
        for snap in [&live, &over_sio] {
            assert_eq!(
                (snap["revision"].as_u64(), snap["fromRevision"].as_u64()),
                (Some(revision + 1), Some(revision))
            );
            assert_eq!((snap["seat"].clone(), snap["actions"].clone()), (Value::Null, json!([])), "{snap}");
            assert_eq!(snap["events"][0]["type"], "disc.dropped", "{snap}");
        }
    }
    let metrics = gateway.get("/metrics").await;
    let spectators: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("juegoland_gateway_subscriptions{controller=\"\",kind=\"spectator\"}"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(spectators, 2.0, "two spectator subscriptions");
    assert!(metric_sum(&metrics, "juegoland_gateway_subscriptions") >= 4.0);
    drop(gateway);
    cluster.stop().await;
}

/// One move by `player` at `revision`, its command re-sent under the same id until the
/// cluster answers it (while a killed owner's matches move to another node, a call may fail:
/// the retry is the same command, applied once).
async fn move_through_failover(player: &mut Client, m: &str, revision: u64, column: u64) {
    let command_id = uuid();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    'send: loop {
        assert!(tokio::time::Instant::now() < deadline, "move {revision} was not applied within 20 s");
        player.drop_disc(m, &command_id, revision, column).await;
        loop {
            let v = player.recv().await;
            if v["commandId"] != command_id.as_str() {
                continue;
            }
            match v["type"].as_str() {
                Some("game.ack") => {
                    assert_eq!((v["status"].as_str(), v["revision"].as_u64()), (Some("applied"), Some(revision + 1)));
                    return;
                }
                Some("game.error") => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue 'send;
                }
                _ => {}
            }
        }
    }
}

/// A spectator on a gateway follows a match through its owner's SIGKILL: the node that takes
/// the match over assumes spectators follow it (they synced with the dead owner), so every
/// revision after the failover reaches the spectator live (`fromRevision` = the previous
/// revision), not through a resync a cursor would start seconds later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_follows_a_match_through_its_owner_s_failover() {
    use crate::harness::{Cluster, create, owned_by};
    let secret = "spectator-failover-secret-0123456789abcdef0123456789";
    let (mut cluster, gateway) =
        Cluster::start_with_gateway("spectator_failover", 2, secret, &Cluster::shared_redis()).await;
    let tokens = juegoland_edge::Tokens::new(secret.as_bytes(), 600).unwrap();
    let match_id = create(&mut cluster.client(0).await).await;
    let m = match_id.to_string();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut spectator = Client::connect_to(&addr, &tokens.issue_spectator(match_id).unwrap()).await;
    spectator.sync(&m, "w").await;
    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
    let mut bob = Client::connect_to(&addr, &tokens.issue("bob").unwrap()).await;
    alice.sync(&m, "a").await;
    bob.sync(&m, "b").await;
    // Columns that never make four in a row within the test's moves.
    let columns = [0u64, 1, 2, 3, 4, 5];
    for revision in 0..2u64 {
        let player = if revision.is_multiple_of(2) { &mut alice } else { &mut bob };
        move_through_failover(player, &m, revision, columns[revision as usize]).await;
        let live = spectator.recv_revision(revision + 1).await;
        assert_eq!(live["fromRevision"], revision, "{live}");
    }
    let mut owner = None;
    for (i, node) in cluster.nodes.iter().enumerate() {
        if owned_by(&cluster, node).await.contains(&match_id) {
            owner = Some(i);
        }
    }
    let owner = owner.expect("a node owns the match");
    cluster.nodes[owner].kill9();
    for revision in 2..6u64 {
        let player = if revision.is_multiple_of(2) { &mut alice } else { &mut bob };
        move_through_failover(player, &m, revision, columns[revision as usize]).await;
        let live = spectator.recv_revision(revision + 1).await;
        assert_eq!(live["fromRevision"], revision, "revision {} came live: {live}", revision + 1);
        assert_eq!((live["seat"].clone(), live["actions"].clone()), (Value::Null, json!([])), "{live}");
    }
    drop(gateway);
    cluster.stop().await;
}
