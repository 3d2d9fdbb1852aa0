//! The client edge of the cluster: two players on a gateway process play a whole Conecta 4
//! match; commands go gateway → router → node, publications come back node → Redis stream
//! → gateway → each player's subscription.

use juegoland_edge::Tokens;
use serde_json::json;

use crate::client::{Client, http, uuid};
use crate::harness::{Cluster, Seen, audit, create};
use juegoland_testkit::PrivateRedis;

/// A match between alice and bob on a cluster with a gateway, both players connected to
/// the gateway and synced (`a` and `b` are their sync snapshots).
struct Table {
    cluster: Cluster,
    gateway: crate::harness::Proc,
    tokens: Tokens,
    addr: String,
    m: String,
    alice: Client,
    bob: Client,
    a: serde_json::Value,
    b: serde_json::Value,
}

impl Table {
    async fn seat((cluster, gateway): (Cluster, crate::harness::Proc), secret: &str) -> Table {
        let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
        let m = create(&mut cluster.client(0).await).await.to_string();
        let addr = gateway.http.trim_start_matches("http://").to_owned();
        let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
        let mut bob = Client::connect_to(&addr, &tokens.issue("bob").unwrap()).await;
        let a = alice.sync(&m, "r-a").await;
        let b = bob.sync(&m, "r-b").await;
        Table { cluster, gateway, tokens, addr, m, alice, bob, a, b }
    }
}

/// p0 wins with four in column 0 while p1 plays column 1.
const WINNING: [u64; 7] = [0, 1, 0, 1, 0, 1, 0];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_on_a_gateway_play_a_match_through_the_cluster() {
    let secret = "gateway-test-secret-0123456789abcdef0123456789";
    let started = Cluster::start_with_gateway("gateway", 2, secret, &Cluster::shared_redis()).await;
    let Table { cluster, gateway, tokens, addr, m, mut alice, mut bob, a, b } = Table::seat(started, secret).await;
    assert_eq!(
        (a["type"].as_str(), a["revision"].as_u64(), a["seat"].as_str()),
        (Some("game.snapshot"), Some(0), Some("p0"))
    );
    assert_eq!(b["seat"], "p1");

    for (i, column) in WINNING.iter().enumerate() {
        let revision = i as u64;
        let (mover, other) = if i % 2 == 0 { (&mut alice, &mut bob) } else { (&mut bob, &mut alice) };
        let c = uuid();
        mover.drop_disc(&m, &c, revision, *column).await;
        let (ack, _) = mover.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied", "{ack}");
        assert_eq!(ack["revision"], revision + 1);
        // Both players' subscriptions get the new revision from the stream, in order.
        for who in [mover, other] {
            let (live, _) = who.recv_type("game.snapshot").await;
            assert_eq!(live["revision"], revision + 1, "{live}");
            assert_eq!(live["fromRevision"], revision);
        }
    }
    // Someone with no seat, another connection's subscription and a match that does not
    // exist: refused, and nothing of the match is shown.
    let mut mallory = Client::connect_to(&addr, &tokens.issue("mallory").unwrap()).await;
    let e = mallory.sync(&m, "r-m").await;
    assert_eq!((e["type"].as_str(), e["code"].as_str()), (Some("game.error"), Some("FORBIDDEN")), "{e}");
    assert!(e.get("view").is_none());
    mallory.drop_disc(&m, &uuid(), 7, 2).await;
    assert_eq!(mallory.recv().await["code"], "FORBIDDEN");
    let sub = a["subscriptionId"].as_str().unwrap();
    mallory.send(&json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":m,"subscriptionId":sub})).await;
    assert_eq!(mallory.recv().await["code"], "SUBSCRIPTION_NOT_FOUND");
    assert_eq!(mallory.sync(&uuid(), "r-x").await["code"], "MATCH_NOT_FOUND");
    mallory.expect_silence(300).await;

    // Seven discs: p0 has four in column 0.
    let final_sync = alice.sync_answer(&m, "r-end").await;
    assert_eq!(final_sync["revision"], 7);
    assert_ne!(final_sync["result"], json!(null), "the match is over: {final_sync}");

    // The gateway serves the web client players load (clients/web, embedded in the binary).
    let page = gateway.get("/").await;
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("/assets/app.js"), "GET / on the gateway: {page}");
    let script = gateway.get("/assets/app.js").await;
    assert!(
        script.starts_with("HTTP/1.1 200") && script.contains("text/javascript"),
        "{}",
        script.chars().take(300).collect::<String>()
    );
    drop(gateway);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_withdraw_and_cancel_through_a_router_reach_the_players() {
    let secret = "gateway-lifecycle-secret-0123456789abcdef0123456789";
    let started = Cluster::start_with_gateway("lifecycle", 2, secret, &Cluster::shared_redis()).await;
    let Table { cluster, gateway, m, mut alice, mut bob, .. } = Table::seat(started, secret).await;
    let router = cluster.routers[1].http.trim_start_matches("http://").to_owned();
    // Refusals cross node → router → HTTP with their codes.
    let withdraw = format!("/v1/matches/{m}/withdrawals");
    let (status, body) = http(&router, "POST", &withdraw, Some(json!({"seat": "p7"}))).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("UNKNOWN_SEAT")), "{body}");
    let cancel = format!("/v1/matches/{m}/cancellation");
    let (status, body) = http(&router, "POST", &cancel, Some(json!({"reasonCode": "No"}))).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_REASON")), "{body}");
    let (status, body) =
        http(&router, "POST", &format!("/v1/matches/{}/cancellation", uuid()), Some(json!({"reasonCode": "x"}))).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("MATCH_NOT_FOUND")), "{body}");

    let (status, body) = http(&router, "POST", &cancel, Some(json!({"reasonCode": "platform.abandoned"}))).await;
    assert_eq!((status, &body["revision"]), (200, &json!(1)), "{body}");
    for who in [&mut alice, &mut bob] {
        let (live, _) = who.recv_type("game.snapshot").await;
        assert_eq!(live["revision"], 1, "{live}");
        assert_eq!(live["result"], json!({"kind": "cancelled", "reasonCode": "platform.abandoned"}));
        assert_eq!(live["actions"], json!([]));
    }
    let (status, body) = http(&router, "POST", &withdraw, Some(json!({"seat": "p0"}))).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("MATCH_FINISHED")), "{body}");

    // Stored: one revision logged as a cancellation, and the match replays.
    use juegoland_store::Store;
    let store = cluster.store().await;
    let match_id = m.parse().unwrap();
    let log = store.log(match_id).await.unwrap();
    assert!(
        matches!(&log.last().unwrap().op, juegoland_core::LoggedOp::Cancel { reason_code } if reason_code == "platform.abandoned")
    );
    let state = store.load(match_id).await.unwrap().expect("stored");
    juegoland_core::replay(&juegoland_catalog::registry().unwrap(), &state.snapshot, &log).expect("replays");
    drop(gateway);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_and_back_loses_no_move_and_both_players_converge() {
    let secret = "redis-outage-secret-0123456789abcdef0123456789";
    let mut redis = PrivateRedis::start().await;
    let started = Cluster::start_with_gateway("redis_outage", 2, secret, &redis.url()).await;
    let Table { cluster, gateway, m, mut alice, mut bob, .. } = Table::seat(started, secret).await;

    let mut revision = 0u64;
    let play = async |alice: &mut Client, bob: &mut Client, revision: &mut u64| {
        let mover = if revision.is_multiple_of(2) { alice } else { bob };
        mover.drop_disc(&m, &uuid(), *revision, WINNING[*revision as usize]).await;
        let (ack, _) = mover.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied", "{ack}");
        *revision += 1;
        assert_eq!(ack["revision"], *revision);
    };
    // Redis up: live delivery.
    play(&mut alice, &mut bob, &mut revision).await;
    alice.recv_revision(revision).await;
    bob.recv_revision(revision).await;

    // Redis down: commands still commit (acks come back through the routers).
    redis.kill();
    play(&mut alice, &mut bob, &mut revision).await;
    play(&mut alice, &mut bob, &mut revision).await;
    assert_eq!(revision, 3);

    // Redis back: both players converge on the committed revision (the stream's gap or
    // the cursor makes each subscription resync), and live delivery resumes.
    redis.restart().await;
    alice.recv_revision(3).await;
    bob.recv_revision(3).await;
    play(&mut alice, &mut bob, &mut revision).await;
    alice.recv_revision(4).await;
    bob.recv_revision(4).await;

    audit(&cluster, &Seen::default()).await;
    drop(gateway);
    cluster.stop().await;
}

/// Acceptance "change during sync" on the cluster: syncs race a storm of commits; every
/// subscription's snapshots are contiguous (`fromRevision` = the previous revision) or a
/// full resync, never a step back or a silent hole, and each ends at the committed revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncs_racing_a_command_storm_never_leave_a_window() {
    let secret = "sync-storm-secret-0123456789abcdef0123456789";
    let (cluster, gateway) = Cluster::start_with_gateway("sync_storm", 2, secret, &Cluster::shared_redis()).await;
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let mut router = cluster.client(0).await;
    let match_id = create(&mut router).await;
    let m = match_id.to_string();
    let addr = gateway.http.trim_start_matches("http://").to_owned();

    // The storm: the match played to its end through the router, as fast as it goes.
    let storm = tokio::spawn(async move {
        let mut revision = 0u64;
        'moves: loop {
            let principal = if revision.is_multiple_of(2) { "alice" } else { "bob" };
            for k in 0..7 {
                let msg = crate::harness::submit(
                    &mut router,
                    principal,
                    &crate::harness::drop_at(match_id, revision, (revision * 3 + k) % 7),
                )
                .await;
                if let Some(r) = crate::harness::applied_revision(&msg) {
                    revision = r;
                    continue 'moves;
                }
            }
            return revision;
        }
    });

    // Syncers: sync, follow the subscription for a while, unsubscribe, sync again.
    let mut syncers = Vec::new();
    for i in 0..6u64 {
        let (addr, m, token) =
            (addr.clone(), m.clone(), tokens.issue(if i % 2 == 0 { "alice" } else { "bob" }).unwrap());
        syncers.push(tokio::spawn(async move {
            let mut client = Client::connect_to(&addr, &token).await;
            let mut syncs = 0;
            let mut last = 0u64;
            for round in 0..1_000u64 {
                let snap = client.sync_answer(&m, &format!("r-{i}-{round}")).await;
                assert_eq!(snap["type"], "game.snapshot", "{snap}");
                let mut revision = snap["revision"].as_u64().unwrap();
                assert!(revision >= last, "a sync went back from {last} to {revision}");
                syncs += 1;
                let sub = snap["subscriptionId"].as_str().unwrap().to_owned();
                // Follow for a few messages or until quiet.
                for _ in 0..(round % 4) {
                    let Some(v) = client.try_recv(150).await else { break };
                    if v["type"] != "game.snapshot" || v["subscriptionId"] != sub.as_str() {
                        continue;
                    }
                    let r = v["revision"].as_u64().unwrap();
                    match v.get("fromRevision").and_then(|f| f.as_u64()) {
                        Some(from) => assert_eq!((from, r), (revision, revision + 1), "a hole after {revision}: {v}"),
                        None => assert!(r >= revision, "a resync went back: {v}"),
                    }
                    revision = r;
                }
                last = revision;
                client
                    .send(&json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":m,"subscriptionId":sub}))
                    .await;
                if round > 3 && snap["result"] != json!(null) {
                    break;
                }
            }
            (syncs, last)
        }));
    }
    let final_revision = storm.await.unwrap();
    let mut total = 0;
    for s in syncers {
        let (syncs, last) = s.await.unwrap();
        assert!(syncs > 3, "each syncer synced during the storm");
        assert!(last <= final_revision);
        total += syncs;
    }
    println!("{total} syncs raced {final_revision} commits");
    // After the storm every new sync sees the committed end.
    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
    assert_eq!(alice.sync(&m, "end").await["revision"], final_revision);
    audit(&cluster, &Seen::default()).await;
    drop(gateway);
    cluster.stop().await;
}

/// Acceptance "loss of the last publication": the publications of revision 1 are lost on
/// the way to the stream (fault injection in the nodes) and nothing is committed after it;
/// the subscriptions' cursors show revision 1 committed, so both clients resync to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_last_publication_is_recovered_by_the_cursor() {
    let secret = "lost-publication-secret-0123456789abcdef0123456789";
    let started = Cluster::start_with_gateway_and(
        "lost_publication",
        2,
        secret,
        &Cluster::shared_redis(),
        &[("FAILPOINTS", "lose-publications-of-revision=return(1)")],
    )
    .await;
    let Table { cluster, gateway, m, mut alice, mut bob, .. } = Table::seat(started, secret).await;
    alice.drop_disc(&m, &uuid(), 0, 3).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!((ack["status"].as_str(), ack["revision"].as_u64()), (Some("applied"), Some(1)));
    // No live snapshot of revision 1 can come; the cursor (every second here) reports
    // revision 1 and the subscription resyncs: a full snapshot, without `fromRevision`.
    // A cursor sent before the commit (the first one comes at a random point of the first
    // second) still says 0; the next one must say 1.
    for who in [&mut alice, &mut bob] {
        let cursor = loop {
            let (cursor, _) = who.recv_type("game.cursor").await;
            if cursor["revision"] != 0 {
                break cursor;
            }
        };
        assert_eq!(cursor["revision"], 1, "{cursor}");
        let snap = who.recv_revision(1).await;
        assert!(snap.get("fromRevision").is_none(), "a resync, not a live delivery: {snap}");
    }
    drop(gateway);
    cluster.stop().await;
}

/// A WebSocket to the gateway at `addr` whose receive buffer is small (4 KiB asked), so that a
/// client that stops reading fills it after a few messages.
async fn small_buffer_ws(addr: &str, token: &str) -> tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(addr.parse().unwrap()).await.expect("connect to the gateway");
    let url = format!("ws://{addr}/v1/ws?access_token={token}");
    tokio_tungstenite::client_async(url, stream).await.expect("websocket handshake").0
}

/// Waits until the gateway counts `n` open connections.
pub(crate) async fn wait_for_connections(gateway: &crate::harness::Proc, n: f64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let open = crate::harness::metric_sum(&gateway.get("/metrics").await, "juegoland_gateway_connections");
        if open == n {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{open} connections open, expected {n}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A client that keeps sending but never reads is disconnected once its outgoing queue
/// overflows (the gateway buffers a bounded amount for it); the players go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_is_disconnected_and_the_others_go_on() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let secret = "stubborn-client-secret-0123456789abcdef0123456789";
    let started = Cluster::start_with_gateway("stubborn", 2, secret, &Cluster::shared_redis()).await;
    let Table { cluster, gateway, tokens, addr, m, mut alice, mut bob, .. } = Table::seat(started, secret).await;
    let mut mallory = small_buffer_ws(&addr, &tokens.issue("mallory").unwrap()).await;
    wait_for_connections(&gateway, 3.0).await;
    // Each undecodable frame is answered with a game.error that mallory never reads. Sending
    // stops being possible once the gateway has dropped the connection.
    let started = std::time::Instant::now();
    let mut sent = 0u64;
    while started.elapsed() < std::time::Duration::from_secs(30) {
        let send = mallory.send(Message::Text("not json".into()));
        match tokio::time::timeout(std::time::Duration::from_secs(5), send).await {
            Ok(Ok(())) => sent += 1,
            Ok(Err(_)) => break,
            Err(_) => panic!("the gateway stopped reading mallory after {sent} frames but kept the connection"),
        }
    }
    println!("mallory sent {sent} frames in {:?}", started.elapsed());
    wait_for_connections(&gateway, 2.0).await;
    // What mallory finds when it reads at last: the end of the connection.
    let end = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(Ok(_)) = mallory.next().await {}
    })
    .await;
    assert!(end.is_ok(), "mallory's connection is still open");
    let errors = crate::harness::metric_sum(&gateway.get("/metrics").await, "juegoland_gateway_errors_total");
    assert!(errors > 0.0, "mallory's frames were answered");

    // The players are unaffected.
    alice.drop_disc(&m, &uuid(), 0, WINNING[0]).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!(ack["status"], "applied", "{ack}");
    alice.recv_revision(1).await;
    bob.recv_revision(1).await;
    drop(gateway);
    cluster.stop().await;
}

/// SIGTERM: every WebSocket session gets a close frame (1001, going away) before the gateway
/// exits, and the gateway exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_websocket_sessions_with_going_away() {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

    let secret = "gateway-sigterm-secret-0123456789abcdef0123456789";
    let started = Cluster::start_with_gateway("sigterm", 2, secret, &Cluster::shared_redis()).await;
    let Table { cluster, mut gateway, tokens, addr, .. } = Table::seat(started, secret).await;
    let url = format!("ws://{addr}/v1/ws?access_token={}", tokens.issue("carol").unwrap());
    let (mut idle, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connect");
    // The players' connections closed with their table; carol's is the one left.
    wait_for_connections(&gateway, 1.0).await;

    crate::harness::signal(gateway.pid(), "-TERM");
    let close = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match idle.next().await {
                Some(Ok(Message::Close(frame))) => return frame,
                Some(Ok(_)) => continue,
                other => panic!("the connection ended without a close frame: {other:?}"),
            }
        }
    })
    .await
    .expect("a close frame within 10 s");
    assert_eq!(close.map(|f| f.code), Some(CloseCode::Away));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = gateway.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the gateway did not exit after SIGTERM");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(status.success(), "the gateway exited with {status}");
    drop(gateway);
    cluster.stop().await;
}
