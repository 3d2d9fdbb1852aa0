//! The cluster as real processes on loopback over a private PostgreSQL schema: nodes and
//! routers of the `juegoland` binary, a load of Conecta 4 matches driven through the
//! router's gRPC API, and faults (SIGKILL, SIGSTOP/SIGCONT, rolling restarts). After each
//! run an audit reads the store: every command a client saw applied is there at its
//! revision, no command took effect twice, logs have no fork, and every match replays.

use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_core::ReceiptKey;
use juegoland_rpc::pb;
use juegoland_store::Store;
use tokio::sync::Mutex;

use crate::harness::*;
use juegoland_api::{MatchError, MatchReply, MatchRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_s_matches_are_served_by_the_others_within_3_seconds() {
    let mut cluster = Cluster::start("sigkill", 3, 2).await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let until = Instant::now() + Duration::from_secs(9);
    let mut players = Vec::new();
    for i in 0..24 {
        let client = cluster.client(i % 2).await;
        players.push(tokio::spawn(play(client, until, seen.clone())));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let victims = owned_by(&cluster, &cluster.nodes[1]).await;
    assert!(!victims.is_empty(), "node-1 owns some of the load's matches");
    let killed = Instant::now();
    cluster.nodes[1].kill9();
    cluster
        .supervise(async {
            for p in players {
                p.await.expect("a player");
            }
        })
        .await;
    let seen = seen.lock().await;
    // Every match that lived on the killed node kept being served: the longest pause a
    // client saw on it is the failover time.
    let mut worst = Duration::ZERO;
    for id in &victims {
        if let Some(gap) = seen.longest_gap.get(id) {
            worst = worst.max(*gap);
        }
    }
    println!("failover after SIGKILL: worst pause {worst:?} over {} matches of node-1", victims.len());
    assert!(worst <= Duration::from_secs(3), "failover took {worst:?}");
    assert!(killed.elapsed() > Duration::from_secs(5), "the load ran on after the kill");
    // The routers counted the retries the failover cost, and the survivors' rings shrank.
    let mut retries = 0.0;
    for r in &cluster.routers {
        retries += metric_sum(&r.get("/metrics").await, "juegoland_router_retries_total");
    }
    assert!(retries > 0.0, "retries are counted");
    let ring = metric_sum(&cluster.nodes[0].get("/metrics").await, "juegoland_ring_members");
    assert_eq!(ring, 2.0, "the ring lost the killed node");
    audit(&cluster, &seen).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_owner_that_wakes_up_after_its_match_moved_cannot_commit() {
    let mut cluster = Cluster::start("sigstop", 3, 1).await;
    let mut client = cluster.client(0).await;
    let match_id = create(&mut client).await;
    assert_eq!(applied_revision(&submit(&mut client, "alice", &drop_at(match_id, 0, 3)).await), Some(1));
    let store = cluster.store().await;
    let (owner, _) = store.owner(match_id).await.unwrap().unwrap();
    let owner = owner.expect("an owner");
    let mut frozen = None;
    for (i, node) in cluster.nodes.iter().enumerate() {
        let mut c = pb::node_client::NodeClient::connect(node.grpc.clone()).await.unwrap();
        if c.status(pb::NodeStatusRequest {}).await.unwrap().into_inner().incarnation == owner {
            frozen = Some(i);
        }
    }
    let frozen = frozen.expect("the owner is one of the nodes");
    signal(cluster.nodes[frozen].pid(), "-STOP");

    // While it is frozen its lease lapses and the match moves: a call through the router
    // activates it on another node (claiming it, committing nothing). Calls are repeated
    // until the claim is seen: on a loaded machine a lagging view may still answer a read
    // from an actor of its own for up to a membership refresh.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let revision = router_call(&mut client, &MatchRequest::Revision { match_id }).await;
        assert_eq!(revision.expect("served by another node"), MatchReply::Revision(1));
        let (new_owner, _) = store.owner(match_id).await.unwrap().unwrap();
        if new_owner.as_deref() != Some(owner.as_str()) {
            break;
        }
        assert!(Instant::now() < deadline, "the match never moved off the frozen node");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A command reaches the frozen node directly, as a router with a stale ring would send
    // it: it waits in the socket until the node wakes up, still holding the match's actor
    // at revision 1 — the same revision the store is at.
    let stale = drop_at(match_id, 1, 4);
    let direct = {
        let grpc = cluster.nodes[frozen].grpc.clone();
        let stale = stale.clone();
        tokio::spawn(async move {
            let mut c = NodeClient::connect(grpc).await.expect("connect");
            node_call(&mut c, &command("bob", &stale)).await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal(cluster.nodes[frozen].pid(), "-CONT");
    let answer = direct.await.expect("the direct call");
    if let Ok(reply) = answer {
        let msg = message(reply);
        assert_eq!(applied_revision(&msg), None, "the stale owner must not commit: {msg:?}");
    }
    // The woken node found its lease lapsed and exits, to come back as a new incarnation.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = cluster.nodes[frozen].child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the woken node kept running without its lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!status.success(), "a lost lease is an error exit");

    // The real owner goes on from revision 1: one history, no fork.
    assert_eq!(applied_revision(&submit(&mut client, "bob", &drop_at(match_id, 1, 5)).await), Some(2));
    let key = ReceiptKey { match_id, principal: "bob".into(), command_id: stale.command_id };
    assert!(store.receipt(&key).await.unwrap().is_none(), "the stale command left no receipt");
    store.close().await;
    audit(&cluster, &Seen::default()).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_of_every_node_and_router_loses_nothing() {
    let mut cluster = Cluster::start("rolling", 3, 2).await;
    // Routers on fixed ports, so clients keep their channels across a router restart.
    for r in &mut cluster.routers {
        let port = juegoland_testkit::free_port();
        let http = juegoland_testkit::free_port();
        r.args = router_args(&cluster.schema.url());
        r.args[2] = format!("127.0.0.1:{port}");
        r.args[4] = format!("127.0.0.1:{http}");
        r.terminate();
        r.restart();
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let until = Instant::now() + Duration::from_secs(30);
    let mut players = Vec::new();
    for i in 0..16 {
        let client = cluster.client(i % 2).await;
        players.push(tokio::spawn(play(client, until, seen.clone())));
    }
    cluster.supervise_for(Duration::from_secs(2)).await;
    for i in 0..cluster.nodes.len() {
        assert!(cluster.nodes[i].terminate().success(), "node-{i} drains and exits cleanly");
        cluster.nodes[i].restart();
        cluster.supervise_for(Duration::from_secs(2)).await;
    }
    for i in 0..cluster.routers.len() {
        assert!(cluster.routers[i].terminate().success(), "router-{i} exits cleanly");
        cluster.routers[i].restart();
        cluster.supervise_for(Duration::from_secs(2)).await;
    }
    cluster
        .supervise(async {
            for p in players {
                p.await.expect("a player");
            }
        })
        .await;
    let seen = seen.lock().await;
    println!(
        "rolling restart: {} commands applied, {} calls retried by clients, longest pause {:?}",
        seen.applied.len(),
        seen.failed_calls,
        seen.longest_gap.values().max()
    );
    assert!(seen.applied.len() > 100, "the load made progress through the restarts");
    audit(&cluster, &seen).await;
    cluster.stop().await;
}

/// A stall of the whole cluster longer than the lease ttl (a paused VM, a host under
/// memory pressure): every node finds its lease gone, stops serving and exits with an error;
/// its supervisor starts it again as a new incarnation, and the load goes on with nothing
/// lost and nothing applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_stalled_past_its_lease_fences_itself_and_comes_back() {
    let mut cluster = Cluster::start("stall", 3, 1).await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let until = Instant::now() + Duration::from_secs(14);
    let mut players = Vec::new();
    for _ in 0..8 {
        let client = cluster.client(0).await;
        players.push(tokio::spawn(play(client, until, seen.clone())));
    }
    cluster.supervise_for(Duration::from_secs(3)).await;
    let before = seen.lock().await.applied.len();
    let pids: Vec<u32> = cluster.nodes.iter().map(Proc::pid).collect();
    for pid in &pids {
        signal(*pid, "-STOP");
    }
    // The default ttl is 2 s: 3 s frozen outlives every lease.
    std::thread::sleep(Duration::from_secs(3));
    for pid in &pids {
        signal(*pid, "-CONT");
    }
    cluster
        .supervise(async {
            for p in players {
                p.await.expect("a player");
            }
        })
        .await;
    let seen = seen.lock().await;
    println!(
        "whole-cluster stall: {} commands applied ({before} before it), {} node restarts, {} calls retried",
        seen.applied.len(),
        cluster.restarts,
        seen.failed_calls
    );
    assert_eq!(cluster.restarts, 3, "every node fenced itself and was started again");
    assert!(seen.applied.len() > before + 20, "the load went on after the restarts");
    audit(&cluster, &seen).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refuses_matches_the_ring_gives_to_another_node() {
    let cluster = Cluster::start("not_owner", 3, 1).await;
    let mut client = cluster.client(0).await;
    let match_id = create(&mut client).await;
    let owner = cluster.store().await.owner(match_id).await.unwrap().unwrap().0.expect("an owner");
    let mut refused = 0;
    for node in &cluster.nodes {
        let mut c = pb::node_client::NodeClient::connect(node.grpc.clone()).await.unwrap();
        if c.status(pb::NodeStatusRequest {}).await.unwrap().into_inner().incarnation == owner {
            continue;
        }
        let refusal = node_call(&mut c, &command("alice", &drop_at(match_id, 0, 3))).await;
        assert!(
            matches!(refusal, Err(MatchError::NotOwner(_))),
            "a node that does not own the match refuses it: {refusal:?}"
        );
        refused += 1;
    }
    assert_eq!(refused, 2, "both other nodes refuse");
    // Nothing was applied by the refusals; the owner still takes the command.
    assert_eq!(applied_revision(&submit(&mut client, "alice", &drop_at(match_id, 0, 3)).await), Some(1));
    cluster.stop().await;
}
