//! Supervision: a rules panic in one match fails that match's actor only; it restarts from
//! its last commit on next use, and the node's other matches are untouched.

use std::sync::Arc;
use std::time::Duration;

use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::Matches;
use juegoland_bus::LocalBus;
use juegoland_conecta4::{Action as C4Action, Conecta4};
use juegoland_core::{Engine, GameKey, Registry, SeatHolder};
use juegoland_protocol::{ErrorCode, ServerMessage};
use juegoland_sdk::{
    Corrupt, Descriptor, Game, Lifecycle, Offer, Pos, Projection, Recipient, RuleError, Services, Setup, Trans,
};
use juegoland_store::{MemoryStore, Store};
use serde_json::json;

use crate::{applied, drop_cmd, seats};

/// Conecta 4 whose rules panic when a disc goes into column 6: a bug in a rules module.
struct Fragile;

impl Game for Fragile {
    type Config = <Conecta4 as Game>::Config;
    type Data = <Conecta4 as Game>::Data;
    type Action = <Conecta4 as Game>::Action;
    type Event = <Conecta4 as Game>::Event;
    type View = <Conecta4 as Game>::View;
    type Context = <Conecta4 as Game>::Context;
    type VisibleEvent = <Conecta4 as Game>::VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Descriptor { id: "fragile".into(), ..Conecta4.descriptor() }
    }
    fn setup(&self, input: &Setup<Self::Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Conecta4.setup(input, services)
    }
    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        Conecta4.validate_position(p)
    }
    fn apply(&self, p: &Pos<Self>, a: &str, x: &Self::Action, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let C4Action::Drop(d) = x;
        assert!(d.column != 6, "a bug in the rules");
        Conecta4.apply(p, a, x, s)
    }
    fn available_actions(&self, p: &Pos<Self>, r: Recipient<'_>) -> Vec<Offer<Self::Action>> {
        Conecta4.available_actions(p, r)
    }
    fn project(&self, p: &Pos<Self>, r: Recipient<'_>) -> Projection<Self::View, Self::Context> {
        Conecta4.project(p, r)
    }
    fn project_event(
        &self,
        b: &Pos<Self>,
        a: &Pos<Self>,
        e: &Self::Event,
        r: Recipient<'_>,
    ) -> Vec<Self::VisibleEvent> {
        Conecta4.project_event(b, a, e, r)
    }
    fn on_lifecycle(&self, p: &Pos<Self>, e: &Lifecycle, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Conecta4.on_lifecycle(p, e, s)
    }
}

#[tokio::test]
async fn a_rules_panic_restarts_only_that_match_from_its_last_commit() {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(Fragile)).unwrap();
    registry.register(juegoland_sdk::erase(Conecta4)).unwrap();
    let store = Arc::new(MemoryStore::new());
    let prom = prometheus::Registry::new();
    let host = Host::start(
        Arc::new(Engine::new(Arc::new(registry))),
        store.clone(),
        Arc::new(LocalBus::default()),
        Metrics::new(&prom).unwrap(),
        HostConfig { idle_passivation: Duration::from_secs(60), ..Default::default() },
    )
    .await
    .unwrap();
    let fragile = GameKey { id: "fragile".into(), rules_version: "1.0.0".into() };
    let c4 = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let human = || seats(SeatHolder::Principal("bob".into()));
    let a = host.create_match(&fragile, human(), &json!({})).await.unwrap();
    let b = host.create_match(&c4, human(), &json!({})).await.unwrap();
    assert_eq!(applied(&host.command("alice", drop_cmd(a, 0, 3)).await.unwrap()), 1);
    assert_eq!(applied(&host.command("alice", drop_cmd(b, 0, 3)).await.unwrap()), 1);
    assert_eq!(crate::actor_events(&prom, "activation"), 2);

    // The panic: answered INTERNAL, nothing committed, the actor failed.
    match host.command("bob", drop_cmd(a, 1, 6)).await.unwrap() {
        ServerMessage::Error(e) => assert_eq!(e.code, ErrorCode::Internal),
        other => panic!("expected an INTERNAL error, got {other:?}"),
    }
    assert_eq!(store.load(a).await.unwrap().unwrap().revision(), 1, "a panic commits nothing");
    tokio::time::timeout(Duration::from_secs(5), async {
        while crate::actor_events(&prom, "failure") < 1 || host.active_matches().contains(&a) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the supervisor saw the failure and forgot the actor");
    assert_eq!(host.active_matches(), vec![b], "the other match's actor is untouched");

    // The other match goes on in the same actor (no re-activation)...
    assert_eq!(applied(&host.command("bob", drop_cmd(b, 1, 4)).await.unwrap()), 2);
    assert_eq!(crate::actor_events(&prom, "activation"), 2);
    // ...and the failed one restarts from its last commit on next use.
    assert_eq!(applied(&host.command("bob", drop_cmd(a, 1, 4)).await.unwrap()), 2);
    assert_eq!(crate::actor_events(&prom, "activation"), 3);
    assert_eq!(crate::actor_events(&prom, "failure"), 1);
}
