//! Laberinto through the real `juegoland` binary: two people race over WebSocket with
//! `queue` commands, each steering only by its own fog-of-war view, to the end; two bots
//! race from the platform API; every stored match replays; the countdown's and the finish
//! window's deadlines fire on the local fast path, with their lag on `/metrics`; queue
//! commands in flight together, on one connection and through a cluster's router.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Client, Server, data_dir, uuid};
use crate::harness::{Cluster, metric_sum};

const ACCEPT: &str = r#"[{"id":"laberinto","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}]"#;
const SIDES: [(&str, usize); 4] = [("north", 0), ("east", 1), ("south", 2), ("west", 3)];

async fn create(server: &Server, seats: Value, config: Value) -> String {
    let body = json!({ "game": "laberinto", "seats": seats, "config": config });
    let (status, body) = server.http("POST", "/v1/matches", Some(body)).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().expect("matchId").to_owned()
}

/// A player that knows only what its views showed: the cells it has seen, where its key
/// and its exit were last seen.
struct Explorer {
    seat: String,
    width: u32,
    height: u32,
    known: BTreeMap<u32, [bool; 4]>,
    key: Option<u32>,
    exit: Option<u32>,
    me: u32,
    inventory: Option<String>,
    exit_open: bool,
    result: Value,
    records_seen: usize,
}

impl Explorer {
    fn new(seat: &str) -> Explorer {
        Explorer {
            seat: seat.into(),
            width: 0,
            height: 0,
            known: BTreeMap::new(),
            key: None,
            exit: None,
            me: 0,
            inventory: None,
            exit_open: false,
            result: Value::Null,
            records_seen: 0,
        }
    }

    /// Learns from a snapshot: rebuilt from zero each time, so what is visible replaces
    /// what was remembered there.
    fn learn(&mut self, snapshot: &Value) {
        self.result = snapshot["result"].clone();
        let records = snapshot["view"]["records"].as_array().expect("records");
        let mut visible = BTreeSet::new();
        let mut key_here = None;
        for r in records {
            let text = serde_json::to_string(r).unwrap();
            assert!(text.len() <= 512, "a record over 512 bytes: {text}");
            assert_eq!(r["chunks"].as_u64().unwrap() as usize, records.len());
            assert_eq!(r["role"], self.seat.as_str());
            self.records_seen += 1;
            self.width = r["width"].as_u64().unwrap() as u32;
            self.height = r["height"].as_u64().unwrap() as u32;
            if let Some(status) = r.get("status") {
                self.inventory = status["inventory"].as_str().map(str::to_owned);
                self.exit_open = status["exitOpen"] == true;
            }
            if let Some(me) = r["players"].get("self") {
                self.me = me.as_u64().unwrap() as u32;
            }
            for c in r["cells"].as_array().into_iter().flatten() {
                let index = c["index"].as_u64().unwrap() as u32;
                visible.insert(index);
                self.known.insert(index, [c["n"] == true, c["e"] == true, c["s"] == true, c["w"] == true]);
            }
            for o in r["objects"].as_array().into_iter().flatten() {
                let mine = o["owner"] == self.seat.as_str();
                let cell = o["cell"].as_u64().unwrap() as u32;
                match o["kind"].as_str() {
                    Some("key") if mine && o["variant"].is_null() => key_here = Some(cell),
                    Some("exit") if mine => self.exit = Some(cell),
                    _ => {}
                }
            }
        }
        match key_here {
            Some(cell) => self.key = Some(cell),
            None if self.key.is_some_and(|k| visible.contains(&k)) => self.key = None,
            None => {}
        }
    }

    fn neighbour(&self, cell: u32, side: usize) -> Option<u32> {
        let (r, c) = (cell / self.width, cell % self.width);
        match side {
            0 => r.checked_sub(1).map(|r| r * self.width + c),
            1 => (c + 1 < self.width).then(|| cell + 1),
            2 => (r + 1 < self.height).then(|| cell + self.width),
            _ => c.checked_sub(1).map(|c| r * self.width + c),
        }
    }

    /// The first step towards `target` (a known cell), or towards the nearest unknown cell.
    fn route(&self, target: Option<u32>) -> Option<&'static str> {
        let mut first: BTreeMap<u32, &'static str> = BTreeMap::new();
        let mut queue = VecDeque::from([self.me]);
        let mut seen = BTreeSet::from([self.me]);
        while let Some(cell) = queue.pop_front() {
            let walls = self.known.get(&cell)?;
            for (name, side) in SIDES {
                let Some(next) = self.neighbour(cell, side).filter(|_| walls[side]) else { continue };
                if !seen.insert(next) {
                    continue;
                }
                let step = if cell == self.me { name } else { first[&cell] };
                if Some(next) == target || (target.is_none() && !self.known.contains_key(&next)) {
                    return Some(step);
                }
                if self.known.contains_key(&next) {
                    first.insert(next, step);
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// The next command: `(action type, payload)`.
    fn next(&self) -> (String, Value) {
        let go = |d: &str| ("move".to_owned(), json!({ "direction": d }));
        if self.exit_open && Some(self.me) == self.exit {
            // The exit's outward side is its border's.
            let out = if self.me / self.width == 0 { "north" } else { "south" };
            return go(out);
        }
        if self.inventory.as_ref().is_some_and(|k| *k != self.seat) {
            return ("drop".into(), json!({}));
        }
        let target = if self.exit_open || self.inventory.as_deref() == Some(&self.seat) { self.exit } else { self.key };
        let step = target.and_then(|t| self.route(Some(t))).or_else(|| self.route(None));
        // Everything explored and the key out of sight (the rival may hold it): wander.
        go(step.unwrap_or(["north", "east", "south", "west"][(self.me as usize + self.known.len()) % 4]))
    }
}

/// Plays one seat to the end: one `queue` command at a time, at the cooldown's pace.
async fn play(mut client: Client, m: String, seat: &str, cooldown: Duration) -> (Explorer, u64, u64) {
    let mut me = Explorer::new(seat);
    client
        .send(&json!({
            "protocolVersion": 1, "type": "game.sync", "requestId": "r", "matchId": m,
            "accept": serde_json::from_str::<Value>(ACCEPT).unwrap()
        }))
        .await;
    let (mut applied, mut rejected) = (0, 0);
    let mut in_flight: Option<String> = None;
    // Whether the latest snapshot shows the outcome of the last command (an applied one's
    // revision arrives after its receipt), and whether it offers this seat anything (a
    // player who went out has nothing to do but wait).
    let mut current = true;
    let mut awaited_revision = 0;
    let mut seen_revision = 0;
    let mut offered = false;
    let mut racing = false;
    let mut last_sequence = 0;
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(90), "{seat} did not finish");
        if in_flight.is_none() && current && offered && racing && me.result.is_null() {
            let (action, payload) = me.next();
            let id = uuid();
            client
                .send(&json!({
                    "protocolVersion": 1, "type": "game.command", "matchId": m, "commandId": id,
                    "precondition": {"kind": "queue"}, "action": {"type": action, "payload": payload}
                }))
                .await;
            in_flight = Some(id);
        }
        let v = client.recv().await;
        match v["type"].as_str() {
            Some("game.snapshot") => {
                me.learn(&v);
                racing = v["view"]["records"][0]["phase"] == "racing";
                offered = !v["actions"].as_array().unwrap().is_empty();
                seen_revision = seen_revision.max(v["revision"].as_u64().unwrap());
                current = current || seen_revision >= awaited_revision;
                if !me.result.is_null() {
                    return (me, applied, rejected);
                }
            }
            Some("game.ack") if Some(v["commandId"].as_str().unwrap()) == in_flight.as_deref() => {
                let sequence = v["sequence"].as_u64().expect("a queue command's receipt has its sequence");
                assert!(sequence > last_sequence, "sequences only rise: {v}");
                last_sequence = sequence;
                if v["status"] == "applied" {
                    applied += 1;
                    // The view may have come before its receipt.
                    awaited_revision = v["revision"].as_u64().unwrap();
                    current = seen_revision >= awaited_revision;
                } else {
                    assert_eq!(v["code"], "ILLEGAL_ACTION", "{v}");
                    rejected += 1;
                }
                tokio::time::sleep(cooldown).await;
                in_flight = None;
            }
            Some("game.error") => {
                // A full FIFO or the stage `out` after leaving: wait, then go on.
                assert!(["RATE_LIMITED"].contains(&v["code"].as_str().unwrap()), "{v}");
                tokio::time::sleep(cooldown).await;
                in_flight = None;
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn two_people_race_over_websocket_by_their_own_views_to_the_end() {
    let dir = data_dir();
    let server = Server::start_in(&dir, &[]);
    let config = json!({"width": 7, "height": 7, "countdownMs": 300, "cooldownMs": 40, "artifacts": 2});
    let m = create(&server, json!({"p0": "alice", "p1": "bob"}), config).await;
    let cooldown = Duration::from_millis(45);
    let alice = tokio::spawn(play(server.connect("alice").await, m.clone(), "p0", cooldown));
    let bob = tokio::spawn(play(server.connect("bob").await, m.clone(), "p1", cooldown));
    let (a, a_applied, _) = alice.await.unwrap();
    let (b, b_applied, _) = bob.await.unwrap();
    assert_eq!(a.result, b.result, "one result for both");
    assert_eq!(a.result["kind"], "completed", "{}", a.result);
    assert!(a_applied > 0 && b_applied > 0);
    assert!(a.records_seen > 0 && b.records_seen > 0);

    // Both deadlines (the countdown, and the finish window unless both went out together)
    // fired on the local fast path; their lag is on /metrics.
    let (_, metrics) = server.http("GET", "/metrics", None).await;
    let text = metrics.as_str().unwrap();
    let fired = metric_sum(text, "juegoland_local_deadline_lag_seconds_count");
    let lag = metric_sum(text, "juegoland_local_deadline_lag_seconds_sum");
    assert!(fired >= 1.0, "{text}");
    eprintln!("local deadline lag: {fired} fired, mean {:.2} ms", lag / fired * 1000.0);
    assert!(lag / fired < 1.0, "mean local deadline lag {:.1} ms", lag / fired * 1000.0);
    drop(server);
    replay(&dir);
}

#[tokio::test]
async fn two_bots_race_from_the_platform_api_to_the_end() {
    let dir = data_dir();
    let server = Server::start_in(&dir, &[]);
    let bots = json!({"p0": {"bot": "default"}, "p1": {"bot": "default"}});
    let m = create(&server, bots, json!({"width": 7, "height": 7, "countdownMs": 100, "cooldownMs": 50})).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, summary) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
        assert_eq!(status, 200, "{summary}");
        if !summary["result"].is_null() {
            assert_eq!(summary["result"]["kind"], "completed", "{summary}");
            break;
        }
        assert!(Instant::now() < deadline, "the bots did not finish: {summary}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(server);
    replay(&dir);
}

/// Every stored match replays from its log and randomness trace.
fn replay(dir: &std::path::Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .args(["replay", "--data-dir"])
        .arg(dir)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `queue` commands may be several in flight on one connection (no COMMAND_PENDING): each
/// is answered with its own receipt and a distinct sequence.
#[tokio::test]
async fn several_queue_commands_in_flight_each_get_a_receipt_and_a_sequence() {
    let server = Server::start(&[]);
    let config = json!({"width": 7, "height": 7, "countdownMs": 0, "cooldownMs": 0});
    let m = create(&server, json!({"p0": "alice", "p1": "bob"}), config).await;
    let mut alice = server.connect("alice").await;
    let ids: Vec<String> = (0..6).map(|_| uuid()).collect();
    for (id, direction) in ids.iter().zip(["east", "south", "west", "north", "east", "south"]) {
        alice
            .send(&json!({
                "protocolVersion": 1, "type": "game.command", "matchId": m, "commandId": id,
                "precondition": {"kind": "queue"}, "action": {"type": "move", "payload": {"direction": direction}}
            }))
            .await;
    }
    let mut sequences = BTreeSet::new();
    let mut answered = BTreeSet::new();
    while answered.len() < ids.len() {
        let v = alice.recv().await;
        assert_ne!(v["type"], "game.error", "{v}");
        if v["type"] == "game.ack" {
            answered.insert(v["commandId"].as_str().unwrap().to_owned());
            assert!(sequences.insert(v["sequence"].as_u64().expect("a sequence")), "{v}");
        }
    }
    assert_eq!(sequences, (1..=6).collect::<BTreeSet<u64>>());
}

/// On a cluster the order is the owning node's match actor's: queue commands sent at once
/// through a router each get a distinct sequence (or `RATE_LIMITED`, which takes none), the
/// sequences with no gap, and the next command goes on above them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_orders_queue_commands_on_the_owning_node() {
    use juegoland_api::{MatchError, MatchReply, MatchRequest};
    use juegoland_protocol::{Action, CommandEnvelope, Precondition, ServerMessage};

    use crate::harness::{command, rand_u128, router_call};

    let cluster = Cluster::start("laberinto_queue", 2, 1).await;
    let mut client = cluster.client(0).await;
    let match_id = uuid::Uuid::from_u128(rand_u128());
    let seats = [("p0", "alice"), ("p1", "bob")]
        .into_iter()
        .map(|(s, p)| (s.to_owned(), juegoland_core::SeatHolder::Principal(p.to_owned())))
        .collect();
    let create = MatchRequest::Create {
        match_id,
        game: juegoland_core::GameKey { id: "laberinto".into(), rules_version: "1.0.0".into() }.into(),
        seats,
        config: json!({"width": 7, "height": 7, "countdownMs": 0, "cooldownMs": 0}),
        options: Default::default(),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Err(e) = router_call(&mut client, &create).await {
        assert!(Instant::now() < deadline, "creation kept failing: {e}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mv = |i: u128, direction: &str| CommandEnvelope {
        match_id,
        command_id: uuid::Uuid::from_u128(0x1ab_0000 + i),
        precondition: Precondition::Queue,
        action: Action { r#type: "move".into(), payload: json!({ "direction": direction }) },
    };
    let directions = ["east", "south", "west", "north"];
    let calls = (0..40u128).map(|i| {
        let mut c = client.clone();
        let request = command(if i % 2 == 0 { "alice" } else { "bob" }, &mv(i, directions[i as usize % 4]));
        async move { router_call(&mut c, &request).await }
    });
    let answers = futures::future::join_all(calls).await;
    let mut sequences = Vec::new();
    for answer in &answers {
        match answer {
            Ok(MatchReply::Message(ServerMessage::Ack(a))) => sequences.push(a.sequence.expect("a sequence")),
            Err(MatchError::RateLimited(_)) => {}
            other => panic!("an ack or RATE_LIMITED: {other:?}"),
        }
    }
    sequences.sort_unstable();
    let judged = sequences.len() as u64;
    assert!(judged > 0);
    assert_eq!(sequences, (1..=judged).collect::<Vec<_>>(), "one sequence each, no gap");
    let next = router_call(&mut client, &command("alice", &mv(100, "east"))).await.unwrap();
    let MatchReply::Message(ServerMessage::Ack(a)) = next else { panic!("an ack: {next:?}") };
    assert_eq!(a.sequence, Some(judged + 1));
    cluster.stop().await;
}

/// A held arrow key: a burst of 20 `queue` moves on one connection, back and forth through an
/// open side of the player's cell. They must reach the match in the order sent, whatever
/// the path: each receipt's sequence is its place in the burst, every move is applied (out
/// of order, two steps the same way hit a wall or go elsewhere), and the player ends where
/// it started. Over `transport` to the edge at `addr` (`host:port`), with `token` of p0.
async fn burst_in_order(transport: crate::wire::Transport, addr: &str, token: &str, m: &str) {
    use crate::wire::Conn;
    let mut conn = Conn::open_on(transport, addr, token).await.expect("the token is accepted");
    let accept: Value = serde_json::from_str(ACCEPT).unwrap();
    let sync = json!({"protocolVersion": 1, "type": "game.sync", "requestId": "burst", "matchId": m, "accept": accept});
    conn.send(&sync).await;
    let is_snapshot = |v: &Value| v["type"] == "game.snapshot" && v["matchId"] == m;
    let snapshot = conn.answer(Duration::from_secs(10), &mut Vec::new(), is_snapshot).await.expect("a snapshot");
    let mut explorer = Explorer::new("p0");
    explorer.learn(&snapshot);
    let start = explorer.me;
    let walls = explorer.known[&start];
    let (there, back) = [("north", "south"), ("east", "west"), ("south", "north"), ("west", "east")]
        [SIDES.iter().position(|(_, side)| walls[*side]).expect("an open side")];
    let first = snapshot["revision"].as_u64().unwrap();
    let ids: Vec<String> = (0..20).map(|_| uuid()).collect();
    for (i, id) in ids.iter().enumerate() {
        let direction = if i % 2 == 0 { there } else { back };
        conn.send(&json!({
            "protocolVersion": 1, "type": "game.command", "matchId": m, "commandId": id,
            "precondition": {"kind": "queue"}, "action": {"type": "move", "payload": {"direction": direction}}
        }))
        .await;
    }
    let mut receipts = BTreeMap::new();
    let mut last = snapshot;
    let deadline = Instant::now() + Duration::from_secs(30);
    while receipts.len() < ids.len() || last["revision"].as_u64() < Some(first + 20) {
        let wait = deadline.saturating_duration_since(Instant::now());
        let v = conn.answer(wait, &mut Vec::new(), |v| v["matchId"] == m).await.unwrap_or_else(|| {
            panic!("{} of 20 receipts and revision {} of {} in 30 s", receipts.len(), last["revision"], first + 20)
        });
        assert_ne!(v["type"], "game.error", "{v}");
        if v["type"] == "game.ack" {
            assert_eq!(v["status"], "applied", "a move of the burst was judged out of order: {v}");
            receipts.insert(v["commandId"].as_str().unwrap().to_owned(), v["sequence"].as_u64().expect("a sequence"));
        } else if is_snapshot(&v) && v["revision"].as_u64() > last["revision"].as_u64() {
            last = v;
        }
    }
    let sequences: Vec<u64> = ids.iter().map(|id| receipts[id]).collect();
    let base = sequences[0];
    assert_eq!(sequences, (base..base + 20).collect::<Vec<_>>(), "receipts in the order the moves were sent");
    explorer.learn(&last);
    assert_eq!(explorer.me, start, "20 moves back and forth end where they started");
}

/// A Laberinto match of alice (p0) and bob with no countdown and no cooldown.
fn burst_config() -> Value {
    json!({"width": 7, "height": 7, "countdownMs": 0, "cooldownMs": 0})
}

#[tokio::test]
async fn a_burst_of_queue_moves_reaches_the_match_in_the_order_sent() {
    use crate::wire::Transport;
    let server = Server::start(&[]);
    let addr = server.addr.to_string();
    for transport in [Transport::WebSocket, Transport::SocketIo] {
        let m = create(&server, json!({"p0": "alice", "p1": "bob"}), burst_config()).await;
        burst_in_order(transport, &addr, &server.token("alice").await, &m).await;
    }
}

/// The same through a cluster: a gateway, whose commands go to the owner over gRPC, and the
/// owning node's own edge (`--edge-http`), which serves its matches' players in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_queue_moves_reaches_the_match_in_the_order_sent_through_a_cluster() {
    use crate::wire::Transport;
    let secret = "laberinto-burst-secret-0123456789abcdef0123456789";
    let (cluster, gateway) =
        Cluster::start_with_gateway_and_node_edges("laberinto_burst", 1, secret, &Cluster::shared_redis()).await;
    let alice = juegoland_edge::Tokens::new(secret.as_bytes(), 600).unwrap().issue("alice").unwrap();
    let router = cluster.routers[0].http.trim_start_matches("http://").to_owned();
    let body = json!({"game": "laberinto", "seats": {"p0": "alice", "p1": "bob"}, "config": burst_config()});
    let owner_edge = cluster.nodes[0].clients.clone().expect("the node's own edge");
    for edge in [gateway.http.trim_start_matches("http://").to_owned(), owner_edge] {
        for transport in [Transport::WebSocket, Transport::SocketIo] {
            let (status, created) = crate::client::http(&router, "POST", "/v1/matches", Some(body.clone())).await;
            assert_eq!(status, 201, "{created}");
            let m = created["matchId"].as_str().unwrap();
            burst_in_order(transport, &edge, &alice, m).await;
        }
    }
    drop(gateway);
    cluster.stop().await;
}
