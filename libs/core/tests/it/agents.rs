//! Agent seats: a creation seats an agent only under a profile the game declares, platform
//! principals may not pose as agents, and an agent seat `pN` is played by the principal
//! `agent:pN` and nobody else (bots included).

use std::collections::BTreeMap;

use juegoland_core::{CreateError, Engine, GameKey, SeatHolder};
use juegoland_protocol::{AckStatus, Precondition};
use juegoland_sdk::SplitMix64;
use serde_json::json;
use uuid::Uuid;

use crate::harness::{Answer, Harness, registry};

fn create(game: &str, p0: SeatHolder, p1: SeatHolder) -> Result<(), CreateError> {
    let engine = Engine::new(registry());
    let key = GameKey { id: game.into(), rules_version: "1.0.0".into() };
    let seats = BTreeMap::from([("p0".to_owned(), p0), ("p1".to_owned(), p1)]);
    engine.create(Uuid::from_u128(9), &key, seats, &json!({}), 1_000, &mut SplitMix64(1)).map(|_| ())
}

fn refusal(result: Result<(), CreateError>) -> String {
    match result {
        Err(CreateError::InvalidSeats(message)) => message,
        other => panic!("expected INVALID_SEATS, got {other:?}"),
    }
}

#[test]
fn an_agent_seat_needs_a_declared_profile() {
    let alice = || SeatHolder::Principal("alice".into());
    assert!(create("conecta4", alice(), SeatHolder::Agent("default".into())).is_ok());
    let unknown = refusal(create("conecta4", alice(), SeatHolder::Agent("grandmaster".into())));
    assert_eq!(unknown, "seats.p1: conecta4 declares no agent profile \"grandmaster\"");
    // The fixture game declares no agent seats at all.
    let undeclared = refusal(create("prep", SeatHolder::Agent("default".into()), alice()));
    assert_eq!(undeclared, "seats.p0: prep declares no agent seats, so no agent profile \"default\"");
}

#[test]
fn platform_principals_may_not_pose_as_agents() {
    let message =
        refusal(create("conecta4", SeatHolder::Principal("agent:p1".into()), SeatHolder::Bot("default".into())));
    assert_eq!(message, "seats.p0: a principal may not start with \"bot:\", \"replay:\", \"agent:\", \"spectator:\"");
}

#[test]
fn an_agent_seat_is_played_by_its_agent_principal_alone() {
    let mut h = Harness::conecta4_with(SeatHolder::Agent("default".into()));
    assert_eq!(h.state().seat_of("agent:p1"), Some("p1"));
    // Neither the bot principal of that seat, nor the agent principal of a seat that is not an
    // agent's, nor a human's principal name that happens to look alike.
    assert_eq!(h.state().seat_of("bot:p1"), None);
    assert_eq!(h.state().seat_of("agent:p0"), None);
    assert_eq!(h.state().seat_of("p1"), None);
    assert_eq!(h.drop_disc(3).ack().status, AckStatus::Applied);
    let pre = Precondition::Match { revision: h.state().revision };
    let by_bot = h.envelope(Uuid::from_u128(77), pre, "drop", json!({ "column": 2 }));
    assert_eq!(h.run("bot:p1", &by_bot), Answer::Forbidden);
    let by_agent = h.envelope(Uuid::from_u128(78), pre, "drop", json!({ "column": 2 }));
    assert_eq!(h.run("agent:p1", &by_agent).ack().status, AckStatus::Applied);
    assert_eq!(h.state().revision, 2);
}

#[test]
fn the_agent_declaration_stays_out_of_the_contract_digest() {
    let registry = registry();
    let loaded = registry.get(&GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }).unwrap();
    let d = loaded.descriptor();
    assert!(d.agents.is_some());
    let mut improved = d.clone();
    if let Some(agents) = &mut improved.agents {
        agents.instructions.push_str(" Think twice.");
        agents.profiles[0].limits.think_time_ms += 1;
    }
    let schemas = loaded.game.schemas();
    assert_eq!(juegoland_core::rules_digest(&improved, schemas), loaded.digest);
    improved.bots.push("other".into());
    assert_ne!(juegoland_core::rules_digest(&improved, schemas), loaded.digest, "the rest of it counts");
}
