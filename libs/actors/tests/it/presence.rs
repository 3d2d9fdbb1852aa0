//! A seat's presence is a lease: the gateway renews each open subscription, and the match
//! forgets one not renewed in time, so a gateway that dies without telling cannot keep a
//! human counted present (and its seat from the hand-over policy's bot). A spectator's is
//! one too: the match's revisions carry the spectators' publication only while a spectator's
//! sync or renewal holds it.

use std::time::Duration;

use juegoland_actors::HostConfig;
use juegoland_api::Matches;
use juegoland_core::{ControllerKind, CreateOptions, SeatHolder};
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
    let m = host
        .create_pinned(
            (&key()).into(),
            seats(bob),
            &json!({}),
            CreateOptions { handover: Some(handover), expiry: None },
        )
        .await
        .unwrap()
        .match_id;
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

/// The next `n` publications the bus delivers, as (revision, recipient).
async fn next_recipients(
    sub: &mut futures::stream::BoxStream<'static, juegoland_bus::BusItem>,
    n: usize,
) -> Vec<(u64, Option<String>)> {
    use futures::StreamExt;
    let mut got = Vec::new();
    while got.len() < n {
        let next = tokio::time::timeout(Duration::from_secs(5), sub.next()).await.expect("a publication");
        let Some(juegoland_bus::BusItem::Publication(p)) = next else { panic!("unexpected {next:?}") };
        got.push((p.revision, p.recipient.clone()));
    }
    got
}

#[tokio::test]
async fn revisions_carry_the_spectators_publication_only_while_a_spectator_follows() {
    let (host, _store, _prom) = host_with(HostConfig { presence_lease: LEASE, ..Default::default() }).await;
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    let mut sub = host.bus().subscribe(m).await.unwrap();
    let seats_only = |r: u64| vec![(r, Some("p0".to_owned())), (r, Some("p1".to_owned()))];
    let with_spectators = |r: u64| [seats_only(r), vec![(r, None)]].concat();
    let mut revision = 0;
    let play = async |host: &juegoland_actors::Host, revision: &mut u64| {
        let player = if revision.is_multiple_of(2) { "alice" } else { "bob" };
        *revision = applied(&host.command(player, drop_cmd(m, *revision, (*revision % 2) as u8)).await.unwrap());
        *revision
    };

    // Nobody watches a match just created: its seats' publications only.
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 2).await, seats_only(r));
    // A spectator's sync: the next revision has the spectators' publication.
    let synced = host.spectate(m).await.unwrap().expect("a spectator's snapshot");
    assert_eq!(synced.revision, r);
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 3).await, with_spectators(r));
    // Not renewed within the lease: the spectator is forgotten.
    tokio::time::sleep(LEASE + LEASE / 4).await;
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 2).await, seats_only(r));
    // A gateway renews a spectator's subscription: watched again.
    let spectator = format!("{}{m}", juegoland_core::state::SPECTATOR_PREFIX);
    host.presence(m, &spectator, "gw/1", true).await.unwrap();
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 3).await, with_spectators(r));
    // An absence changes nothing until the lease ends (spectators are not counted).
    host.presence(m, &spectator, "gw/1", false).await.unwrap();
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 3).await, with_spectators(r));
    tokio::time::sleep(LEASE + LEASE / 4).await;
    // A match activated from the store may have spectators of its previous actor: it
    // publishes to them for a lease, within which their gateways renew.
    host.passivate(m).await;
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 3).await, with_spectators(r));
    tokio::time::sleep(LEASE + LEASE / 4).await;
    let r = play(&host, &mut revision).await;
    assert_eq!(next_recipients(&mut sub, 2).await, seats_only(r));
    assert_eq!(host.inspect(m).await.unwrap().revision, 7);
    // Nothing more: every publication of every revision was counted.
    let more = tokio::time::timeout(Duration::from_millis(200), futures::StreamExt::next(&mut sub)).await;
    assert!(more.is_err(), "an unexpected publication: {more:?}");
}
