//! The match host with the in-memory store and the local bus: activation, passivation,
//! re-activation from the last commit, bot seats, dispatch to the bus, and rule faults that
//! commit nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_bus::{BusItem, LocalBus};
use juegoland_core::{Engine, GameKey, Registry, SeatHolder};
use juegoland_protocol::{AckStatus, Action, CommandEnvelope, ErrorCode, Precondition, ServerMessage};
use juegoland_store::{MemoryStore, Store};
use serde_json::json;
use uuid::Uuid;

async fn host(idle: Duration) -> (Host, Arc<MemoryStore>, prometheus::Registry) {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    let store = Arc::new(MemoryStore::new());
    let prom = prometheus::Registry::new();
    let host = Host::start(
        Arc::new(Engine::new(Arc::new(registry))),
        store.clone(),
        Arc::new(LocalBus::default()),
        Metrics::new(&prom).unwrap(),
        HostConfig { idle_passivation: idle, ..Default::default() },
    )
    .await
    .unwrap();
    (host, store, prom)
}

fn key() -> GameKey {
    GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }
}

fn seats(p1: SeatHolder) -> BTreeMap<String, SeatHolder> {
    BTreeMap::from([("p0".to_string(), SeatHolder::Principal("alice".into())), ("p1".to_string(), p1)])
}

fn drop_cmd(match_id: Uuid, revision: u64, column: u8) -> CommandEnvelope {
    CommandEnvelope {
        match_id,
        command_id: Uuid::from_u128(u128::from(revision) << 8 | u128::from(column)),
        precondition: Precondition::Match { revision },
        action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
    }
}

fn applied(msg: &ServerMessage) -> u64 {
    match msg {
        ServerMessage::Ack(a) if a.status == AckStatus::Applied => a.revision.unwrap(),
        other => panic!("expected an applied ack, got {other:?}"),
    }
}

#[tokio::test]
async fn idle_actors_passivate_and_reactivate_from_the_last_commit() {
    let (host, store, _) = host(Duration::from_millis(200)).await;
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    assert_eq!(host.active_actors(), 1, "creation activates the match");
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);

    // Idle: the actor stops and is forgotten.
    tokio::time::timeout(Duration::from_secs(5), async {
        while host.active_actors() > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the idle actor passivates");

    // The next command re-activates it from the store, at the committed revision.
    assert_eq!(applied(&host.command("bob", drop_cmd(m, 1, 3)).await.unwrap()), 2);
    assert_eq!(host.active_actors(), 1);
    assert_eq!(store.load(m).await.unwrap().unwrap().revision, 2);
    // A retry after re-activation still finds its receipt.
    let dup = host.command("alice", drop_cmd(m, 0, 3)).await.unwrap();
    assert!(matches!(dup, ServerMessage::Ack(a) if a.duplicate && a.revision == Some(1)));
}

#[tokio::test]
async fn publications_reach_the_bus_after_the_commit_and_the_outbox_is_marked() {
    let (host, store, _) = host(Duration::from_secs(60)).await;
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    let mut sub = host.bus().subscribe(m).await.unwrap();
    host.command("alice", drop_cmd(m, 0, 3)).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        match tokio::time::timeout(Duration::from_secs(5), sub.next()).await.unwrap().unwrap() {
            BusItem::Publication(p) => seen.push((p.revision, p.recipient.clone().unwrap())),
            BusItem::Gap => panic!("no gap expected"),
        }
    }
    seen.sort();
    assert_eq!(seen, vec![(1, "p0".to_string()), (1, "p1".to_string())]);
    assert!(store.undispatched(10).await.unwrap().is_empty(), "dispatched rows are marked");
}

#[tokio::test]
async fn a_bot_seat_plays_after_the_human_and_unknown_matches_are_not_found() {
    let (host, _, prom) = host(Duration::from_secs(60)).await;
    let m = host.create_match(&key(), seats(SeatHolder::Bot("default".into())), &json!({})).await.unwrap();
    host.command("alice", drop_cmd(m, 0, 3)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while host.inspect(m).await.unwrap().revision < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the bot answers");
    let state = host.inspect(m).await.unwrap();
    assert_eq!(state.position.flow.actors.keys().collect::<Vec<_>>(), ["p0"], "alice's turn again");
    // A forged bot principal for a human seat is forbidden.
    let forged = host.command("bot:p0", drop_cmd(m, 2, 1)).await.unwrap();
    assert!(matches!(forged, ServerMessage::Error(e) if e.code == ErrorCode::Forbidden));
    assert!(matches!(host.inspect(Uuid::from_u128(1)).await, Err(juegoland_actors::HostError::NotFound)));
    let text = prom.gather().iter().map(|f| f.name().to_owned()).collect::<Vec<_>>().join(",");
    assert!(text.contains("juegoland_commands_total"), "{text}");
}
