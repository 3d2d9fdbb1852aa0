//! A seat's presence is a lease: the gateway renews each open subscription, and the match
//! forgets one not renewed in time, so a gateway that dies without telling cannot keep a
//! human counted present (and its seat from the hand-over policy's bot).

use std::time::Duration;

use juegoland_actors::HostConfig;
use juegoland_api::Matches;
use juegoland_core::{ControllerKind, SeatHolder};
use juegoland_sdk::Handover;
use serde_json::json;

use crate::{applied, drop_cmd, host_with, key, seats};

const LEASE: Duration = Duration::from_millis(400);

async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_unrenewed_presence_lapses_and_the_bot_stands_in_while_a_renewed_one_keeps_the_seat() {
    let (host, _store, _prom) = host_with(HostConfig { presence_lease: LEASE, ..Default::default() }).await;
    let handover = Handover::Bot { after_ms: 1_000, profile: juegoland_conecta4::BOT_DEFAULT.into() };
    let bob = SeatHolder::Principal("bob".into());
    let m = host.create_pinned((&key()).into(), seats(bob), &json!({}), Some(handover)).await.unwrap().match_id;
    host.presence(m, "alice", "gw-a/1", true).await.unwrap();
    host.presence(m, "bob", "gw-b/1", true).await.unwrap();
    // Alice's gateway renews; bob's died without telling (no absence, no renewal).
    let renewing = {
        let host = host.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE / 4).await;
                host.presence(m, "alice", "gw-a/1", true).await.unwrap();
            }
        })
    };
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    // Bob's presence lapses after the lease; after the grace his bot plays his turn.
    until("bob's bot stands in and moves", async || {
        let s = host.inspect(m).await.unwrap();
        s.controller("p1") == Some(ControllerKind::Handover) && s.revision >= 3
    })
    .await;
    // Alice, renewing all along, still plays her own seat.
    let s = host.inspect(m).await.unwrap();
    assert_eq!(s.controller("p0"), Some(ControllerKind::Human));
    assert!(s.stand_ins.keys().all(|seat| seat == "p1"), "{:?}", s.stand_ins);
    // Bob comes back through a live gateway: the seat is his again.
    host.presence(m, "bob", "gw-c/7", true).await.unwrap();
    assert_eq!(host.inspect(m).await.unwrap().controller("p1"), Some(ControllerKind::Human));
    renewing.abort();
}
