//! A node that serves clients itself (`juegoland node --edge-http`): the matches it owns are
//! answered in process — no gRPC hop, no stream read — and the others through their owners
//! and the Redis streams, as a gateway serves them; a match that moves to another node while
//! its players follow it here keeps reaching them, after a resync.

use std::time::{Duration, Instant};

use juegoland_cluster::{Member, Ring};
use juegoland_edge::Tokens;
use uuid::Uuid;

use crate::client::{Client, http, uuid};
use crate::harness::{Cluster, Proc, create, node_args, router_args};
use juegoland_testkit::TestSchema;

const SECRET: &str = "near-test-secret-0123456789abcdef0123456789";

fn node_with_edge(url: &str, i: usize) -> Proc {
    let mut args = node_args(url, i);
    args.extend(
        // Cursors far apart: only the edge's following of moved matches can deliver them.
        [
            "--redis-url",
            &Cluster::shared_redis(),
            "--edge-http",
            "127.0.0.1:0",
            "--jwt-secret",
            SECRET,
            "--cursor-interval",
            "600",
        ]
        .map(str::to_owned),
    );
    Proc::spawn(args)
}

/// Where the ring of `nodes` (by id) places `m`.
fn owner(nodes: &[&str], m: Uuid) -> String {
    let members = nodes
        .iter()
        .map(|id| Member { node_id: (*id).to_owned(), incarnation: Uuid::nil(), address: String::new() })
        .collect();
    Ring::new(members).owner(m).expect("a member").node_id.clone()
}

/// Moves a node served over gRPC, and moves the node's own edge forwarded to other nodes.
async fn served(node: &Proc) -> (u64, u64) {
    let metrics = node.get("/metrics").await;
    let count = |name: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| l.starts_with(name) && l.contains("op=\"submit_command\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    (count("juegoland_node_calls_total{"), count("juegoland_router_forwards_total{"))
}

/// Sends the move of `m` at `revision` (column 0 for alice, 1 for bob), again with the same
/// command id until it is applied (a move sent while the match changes hands may be answered
/// UNAVAILABLE; a client retries the same command), and waits until both players see it.
async fn play(alice: &mut Client, bob: &mut Client, m: &str, revision: u64) {
    let command_id = uuid();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mover = if revision.is_multiple_of(2) { &mut *alice } else { &mut *bob };
    loop {
        mover.drop_disc(m, &command_id, revision, revision % 2).await;
        let answer = mover.recv_about(m, &["game.ack", "game.error"]).await;
        if answer["status"] == "applied" {
            break;
        }
        assert!(Instant::now() < deadline, "{m} never took its move: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for who in [alice, bob] {
        snapshot_of(who, m, revision + 1).await;
    }
}

/// Receives until `m`'s snapshot of `revision` (others' snapshots pass by).
async fn snapshot_of(client: &mut Client, m: &str, revision: u64) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let snap = tokio::time::timeout(Duration::from_secs(10), client.recv_about(m, &["game.snapshot"]))
            .await
            .unwrap_or_else(|_| panic!("{m}'s revision {revision} did not arrive within 10 s"));
        if snap["revision"] == revision {
            return;
        }
        assert!(Instant::now() < deadline, "{m} never showed revision {revision}: {snap}");
    }
}

/// The `clientUrl` of the platform API's read of `m`, through the router.
async fn client_url(cluster: &Cluster, m: &str) -> String {
    let router = cluster.routers[0].http.trim_start_matches("http://");
    let (status, body) = http(router, "GET", &format!("/v1/matches/{m}"), None).await;
    assert_eq!(status, 200, "{body}");
    body["clientUrl"].as_str().unwrap_or_else(|| panic!("no clientUrl: {body}")).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_serves_its_own_clients_in_process_and_follows_matches_that_move_away() {
    let schema = TestSchema::create("cluster", "near").await;
    let url = schema.url();
    let node0 = node_with_edge(&url, 0);
    let routers = vec![Proc::spawn(router_args(&url))];
    let mut cluster = Cluster { schema, nodes: vec![node0], routers, restarts: 0 };
    cluster.wait_for_ring().await;
    // Matches all node-0's while it is alone; the ring of two moves some to node-1 (at least
    // one of each kind).
    let mut router = cluster.client(0).await;
    let two = ["node-0", "node-1"];
    let mut ids = Vec::new();
    while ids.len() < 8
        || ids.iter().all(|m| owner(&two, *m) == "node-0")
        || ids.iter().all(|m| owner(&two, *m) == "node-1")
    {
        ids.push(create(&mut router).await);
    }
    let moving = ids.iter().filter(|m| owner(&two, **m) == "node-1").count() as u64;
    let tokens = Tokens::new(SECRET.as_bytes(), 600).expect("keys");
    let edge = cluster.nodes[0].clients.clone().expect("node-0 serves clients");
    for m in &ids {
        assert_eq!(client_url(&cluster, &m.to_string()).await, format!("http://{edge}"));
    }
    // A creation says it too, so the platform points the players at once.
    let router_http = cluster.routers[0].http.trim_start_matches("http://").to_owned();
    let seats = serde_json::json!({"game": "conecta4", "seats": {"p0": "alice", "p1": "bob"}});
    let (status, created) = http(&router_http, "POST", "/v1/matches", Some(seats)).await;
    assert_eq!((status, created["clientUrl"].as_str()), (201, Some(format!("http://{edge}").as_str())), "{created}");
    let mut alice = Client::connect_to(&edge, &tokens.issue("alice").unwrap()).await;
    let mut bob = Client::connect_to(&edge, &tokens.issue("bob").unwrap()).await;
    let ms: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    for (i, m) in ms.iter().enumerate() {
        assert_eq!(alice.sync(m, &format!("a{i}")).await["revision"], 0);
        assert_eq!(bob.sync(m, &format!("b{i}")).await["revision"], 0);
    }

    // Alone, node-0 answers its own clients in process: no move reaches it over gRPC,
    // none is forwarded.
    for m in &ms {
        play(&mut alice, &mut bob, m, 0).await;
    }
    assert_eq!(served(&cluster.nodes[0]).await, (0, 0), "a move took a hop");

    // node-1 joins: the matches the ring gives it move there, and the players, still on
    // node-0's edge, follow them through the forwarder and the stream.
    cluster.nodes.push(node_with_edge(&url, 1));
    cluster.wait_for_ring().await;
    // The platform reads where each match is served without a hop: its owner's edge.
    for (m, id) in ms.iter().zip(&ids) {
        let owner_edge = if owner(&two, *id) == "node-0" { &edge } else { cluster.nodes[1].clients.as_ref().unwrap() };
        assert_eq!(client_url(&cluster, m).await, format!("http://{owner_edge}"), "{m}");
    }
    for m in &ms {
        play(&mut alice, &mut bob, m, 1).await;
    }
    let (grpc0, forwarded) = served(&cluster.nodes[0]).await;
    let (grpc1, _) = served(&cluster.nodes[1]).await;
    assert_eq!(grpc0, 0, "node-0's own matches still take no hop");
    assert_eq!((forwarded, grpc1), (moving, moving), "each moved match's move went to node-1 once");
    drop((alice, bob));
    cluster.stop().await;
}
