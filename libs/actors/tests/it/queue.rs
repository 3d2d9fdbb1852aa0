//! The `queue` policy on the host: the bounded per-match FIFO (RATE_LIMITED, nothing
//! consumed), sequences in acceptance order that stay monotonic across re-activation, and
//! two real-time bots racing a Laberinto to the end at their paced rhythm.

use std::collections::BTreeMap;
use std::time::Duration;

use juegoland_actors::HostConfig;
use juegoland_api::{MatchError, Matches};
use juegoland_core::{GameKey, SeatHolder};
use juegoland_protocol::{AckStatus, Action, CommandEnvelope, Precondition, ServerMessage};
use juegoland_store::Store;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::host_with;

fn laberinto() -> GameKey {
    GameKey { id: "laberinto".into(), rules_version: "1.0.0".into() }
}

fn humans() -> BTreeMap<String, SeatHolder> {
    BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Principal("bob".into())),
    ])
}

/// Racing at once, no cooldown.
fn config() -> Value {
    json!({"width": 7, "height": 7, "countdownMs": 0, "cooldownMs": 0})
}

fn mv(match_id: Uuid, id: u128, direction: &str) -> CommandEnvelope {
    CommandEnvelope {
        match_id,
        command_id: Uuid::from_u128(id),
        precondition: Precondition::Queue,
        action: Action { r#type: "move".into(), payload: json!({ "direction": direction }) },
    }
}

fn ack(msg: &ServerMessage) -> &juegoland_protocol::Ack {
    match msg {
        ServerMessage::Ack(a) => a,
        other => panic!("expected an ack, got {other:?}"),
    }
}

#[tokio::test]
async fn a_full_fifo_answers_rate_limited_and_the_refused_command_is_not_consumed() {
    let (host, store, _) = host_with(HostConfig { queue_capacity: 2, ..Default::default() }).await;
    let m = host.create_match(&laberinto(), humans(), &config()).await.unwrap();
    // All sent at once: every call takes (or is refused) its place before the actor runs.
    let calls = (0..12u128).map(|i| host.command("alice", mv(m, 100 + i, "north")));
    let answers = futures::future::join_all(calls).await;
    let limited: Vec<u128> = answers
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, Err(MatchError::RateLimited(_))))
        .map(|(i, _)| 100 + i as u128)
        .collect();
    let judged: Vec<&ServerMessage> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(judged.len(), 2, "two places in the FIFO: {answers:?}");
    assert_eq!(limited.len(), 10);
    let wire = MatchError::RateLimited(String::new()).wire();
    assert_eq!((wire.protocol.as_str(), wire.http), ("RATE_LIMITED", 429));
    // The refused command left no receipt: sending it again is judged as new.
    let key =
        juegoland_core::ReceiptKey { match_id: m, principal: "alice".into(), command_id: Uuid::from_u128(limited[0]) };
    assert_eq!(store.receipt(&key).await.unwrap(), None);
    let retry = host.command("alice", mv(m, limited[0], "north")).await.unwrap();
    assert!(!ack(&retry).duplicate);
    assert_eq!(ack(&retry).sequence, Some(3), "the next sequence after the two judged");
}

#[tokio::test]
async fn sequences_follow_acceptance_order_and_stay_monotonic_across_reactivation() {
    let (host, _, _) = host_with(HostConfig::default()).await;
    let m = host.create_match(&laberinto(), humans(), &config()).await.unwrap();
    let mut sequences = Vec::new();
    for (i, direction) in ["north", "west", "east", "south", "north"].into_iter().enumerate() {
        let a = host.command("alice", mv(m, i as u128 + 1, direction)).await.unwrap();
        sequences.push((ack(&a).status, ack(&a).sequence.unwrap()));
    }
    // p0 starts in the top-left corner: north and west are the map's border.
    assert_eq!(sequences[0], (AckStatus::Rejected, 1));
    assert_eq!(sequences[1], (AckStatus::Rejected, 2));
    assert_eq!(sequences.iter().map(|s| s.1).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let revision = host.inspect(m).await.unwrap().revision;
    // A rejection is the last thing the match did: its sequence lives only in its receipt.
    let last = host.command("bob", mv(m, 50, "south")).await.unwrap();
    assert_eq!(ack(&last).status, AckStatus::Rejected, "p1 starts bottom-right");
    assert_eq!(ack(&last).sequence, Some(6));
    assert_eq!(host.inspect(m).await.unwrap().revision, revision, "no revision for a rejection");
    host.passivate(m).await;
    assert_eq!(host.active_actors(), 0);
    let next = host.command("bob", mv(m, 51, "east")).await.unwrap();
    assert_eq!(ack(&next).sequence, Some(7), "re-activated, the match goes on above the rejection's sequence");
    let dup = host.command("bob", mv(m, 50, "south")).await.unwrap();
    assert_eq!((ack(&dup).duplicate, ack(&dup).sequence), (true, Some(6)), "a retry gets its receipt again");
}

#[tokio::test]
async fn two_bots_race_a_laberinto_to_the_end() {
    let config = HostConfig { bot_queue_pause: Duration::from_millis(5), ..Default::default() };
    let (host, _, _) = host_with(config).await;
    let bots = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Bot("default".into())),
        ("p1".to_string(), SeatHolder::Bot("default".into())),
    ]);
    let m = host
        .create_match(&laberinto(), bots, &json!({"width": 9, "height": 9, "countdownMs": 50, "cooldownMs": 0}))
        .await
        .unwrap();
    let state = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let state = host.inspect(m).await.unwrap();
            if state.is_finished() {
                return state;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the bots finish: the countdown and finish deadlines fire locally");
    let result = serde_json::to_value(&state.position.result).unwrap();
    assert_eq!(result["kind"], "completed", "{result}");
    assert!(state.queue_sequence > 10, "both bots moved through the queue: {}", state.queue_sequence);
}
