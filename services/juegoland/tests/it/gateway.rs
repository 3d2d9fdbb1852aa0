//! The client edge of the cluster: two players on a gateway process play a whole Conecta 4
//! match; commands go gateway → router → node, publications come back node → Redis stream
//! → gateway → each player's subscription.

use juegoland_edge::Tokens;
use serde_json::json;

use crate::client::{Client, uuid};
use crate::harness::{Cluster, Seen, audit, create};
use juegoland_testkit::PrivateRedis;

/// p0 wins with four in column 0 while p1 plays column 1.
const WINNING: [u64; 7] = [0, 1, 0, 1, 0, 1, 0];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_on_a_gateway_play_a_match_through_the_cluster() {
    let secret = "gateway-test-secret";
    let (cluster, gateway) = Cluster::start_with_gateway("gateway", 2, secret, &Cluster::shared_redis()).await;
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let mut router = cluster.client(0).await;
    let m = create(&mut router).await.to_string();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
    let mut bob = Client::connect_to(&addr, &tokens.issue("bob").unwrap()).await;
    let a = alice.sync(&m, "r-a").await;
    assert_eq!(
        (a["type"].as_str(), a["revision"].as_u64(), a["seat"].as_str()),
        (Some("game.snapshot"), Some(0), Some("p0"))
    );
    let b = bob.sync(&m, "r-b").await;
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
    let final_sync = alice.sync(&m, "r-end").await;
    assert_eq!(final_sync["revision"], 7);
    assert_ne!(final_sync["result"], json!(null), "the match is over: {final_sync}");
    drop(gateway);
    drop(cluster.nodes);
    drop(cluster.routers);
    cluster.schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_and_back_loses_no_move_and_both_players_converge() {
    let secret = "redis-outage-secret";
    let mut redis = PrivateRedis::start().await;
    let (cluster, gateway) = Cluster::start_with_gateway("redis_outage", 2, secret, &redis.url()).await;
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let mut router = cluster.client(0).await;
    let m = create(&mut router).await.to_string();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut alice = Client::connect_to(&addr, &tokens.issue("alice").unwrap()).await;
    let mut bob = Client::connect_to(&addr, &tokens.issue("bob").unwrap()).await;
    alice.sync(&m, "r-a").await;
    bob.sync(&m, "r-b").await;

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
    drop(cluster.nodes);
    drop(cluster.routers);
    cluster.schema.drop_schema().await;
}
