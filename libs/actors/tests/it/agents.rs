//! Agent seats on the match's actor: the declared commands per minute (RATE_LIMITED, nothing
//! consumed, a retry answered from its receipt), the think time (a turn still open when it
//! runs out is counted there and then, and the late move is still judged; under a `bot`
//! hand-over policy the stand-in plays the overrun turn and hands the seat back), and bots
//! never playing an agent's seat otherwise.

use std::sync::Arc;
use std::time::Duration;

use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::Matches;
use juegoland_bus::LocalBus;
use juegoland_conecta4::Conecta4;
use juegoland_core::{ControllerKind, CreateOptions, Engine, GameKey, LogEntry, LoggedOp, Registry, SeatHolder};
use juegoland_protocol::{AckStatus, ErrorCode, Recovery, ServerMessage};
use juegoland_sdk::{
    AgentLimits, Corrupt, Descriptor, Game, Handover, Lifecycle, Offer, Pos, Projection, Recipient, RuleError,
    Services, Setup, Trans,
};
use juegoland_store::MemoryStore;
use serde_json::json;

use crate::{applied, drop_cmd, seats};

/// Conecta 4 whose agents think fast and send little: 300 ms, 4 commands a minute.
struct Hasty;

const HASTY: AgentLimits = AgentLimits { think_time_ms: 300, commands_per_minute: 4 };

impl Game for Hasty {
    type Config = <Conecta4 as Game>::Config;
    type Data = <Conecta4 as Game>::Data;
    type Action = <Conecta4 as Game>::Action;
    type Event = <Conecta4 as Game>::Event;
    type View = <Conecta4 as Game>::View;
    type Context = <Conecta4 as Game>::Context;
    type VisibleEvent = <Conecta4 as Game>::VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor { id: "hasty".into(), ..Conecta4.descriptor() };
        if let Some(agents) = &mut d.agents {
            agents.profiles[0].limits = HASTY;
        }
        d
    }
    fn setup(&self, input: &Setup<Self::Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Conecta4.setup(input, services)
    }
    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        Conecta4.validate_position(p)
    }
    fn apply(&self, p: &Pos<Self>, a: &str, x: &Self::Action, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
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
    fn bot_action(
        &self,
        p: &Pos<Self>,
        seat: &str,
        profile: &str,
        entropy: &mut dyn juegoland_sdk::EntropySource,
    ) -> Option<Self::Action> {
        Conecta4.bot_action(p, seat, profile, entropy)
    }
}

async fn host() -> (Host, prometheus::Registry) {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(Hasty)).unwrap();
    let prom = prometheus::Registry::new();
    let host = Host::start(
        Arc::new(Engine::new(Arc::new(registry))),
        Arc::new(MemoryStore::new()),
        Arc::new(LocalBus::default()),
        Metrics::new(&prom).unwrap(),
        HostConfig { idle_passivation: Duration::from_secs(60), ..Default::default() },
    )
    .await
    .unwrap();
    (host, prom)
}

fn hasty() -> GameKey {
    GameKey { id: "hasty".into(), rules_version: "1.0.0".into() }
}

fn counter(prom: &prometheus::Registry, name: &str, label: Option<(&str, &str)>) -> f64 {
    prom.gather()
        .iter()
        .filter(|f| f.name() == name)
        .flat_map(|f| f.get_metric().iter().map(move |m| (f.get_field_type(), m)))
        .filter(|(_, m)| label.is_none_or(|(k, v)| m.get_label().iter().any(|l| l.name() == k && l.value() == v)))
        .map(|(kind, m)| match kind {
            prometheus::proto::MetricType::HISTOGRAM => m.get_histogram().get_sample_count() as f64,
            _ => m.get_counter().get_value(),
        })
        .sum()
}

fn rejected(msg: &ServerMessage) -> juegoland_protocol::RejectionCode {
    match msg {
        ServerMessage::Ack(a) if a.status == AckStatus::Rejected => a.code.expect("a rejection's code"),
        other => panic!("expected a rejected ack, got {other:?}"),
    }
}

#[tokio::test]
async fn an_agent_seat_gets_its_declared_commands_per_minute_and_no_more() {
    let (host, prom) = host().await;
    let m = host.create_match(&hasty(), seats(SeatHolder::Agent("default".into())), &json!({})).await.unwrap();
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    // Four commands of p1's agent in the minute: each judged (three refused by the rules,
    // which still counts: the match judged them), then one applied.
    for column in [40u8, 41, 42] {
        let msg = host.command("agent:p1", drop_cmd(m, 1, column)).await.unwrap();
        assert_eq!(rejected(&msg), juegoland_protocol::RejectionCode::InvalidPayload);
    }
    assert_eq!(applied(&host.command("agent:p1", drop_cmd(m, 1, 3)).await.unwrap()), 2);
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 2, 4)).await.unwrap()), 3);
    // The fifth: refused before it is judged, consuming nothing (no receipt, no revision).
    let refused = drop_cmd(m, 3, 4);
    match host.command("agent:p1", refused.clone()).await.unwrap() {
        ServerMessage::Error(e) => {
            assert_eq!(
                (e.code, e.recovery, e.command_id),
                (ErrorCode::RateLimited, Recovery::RetrySameCommand, Some(refused.command_id))
            );
        }
        other => panic!("expected RATE_LIMITED, got {other:?}"),
    }
    assert!(matches!(
        host.command_status(m, "agent:p1", refused.command_id).await.unwrap(),
        ServerMessage::CommandUnknown(_)
    ));
    assert_eq!(host.revision(m).await.unwrap(), 3);
    // A retry of a receipted command is answered from its receipt, limit or not.
    match host.command("agent:p1", drop_cmd(m, 1, 3)).await.unwrap() {
        ServerMessage::Ack(a) => assert!(a.duplicate && a.status == AckStatus::Applied, "{a:?}"),
        other => panic!("expected the original receipt, got {other:?}"),
    }
    // The human at p0 has no such limit.
    assert_eq!(counter(&prom, "juegoland_agent_limits_total", Some(("limit", "commands_per_minute"))), 1.0);
    assert_eq!(counter(&prom, "juegoland_commands_total", Some(("outcome", "rate_limited"))), 1.0);
    assert_eq!(counter(&prom, "juegoland_seat_commands_total", Some(("controller", "agent"))), 4.0);
    assert_eq!(counter(&prom, "juegoland_seat_commands_total", Some(("controller", "human"))), 2.0);
}

#[tokio::test]
async fn a_turn_held_past_the_think_time_is_counted_when_it_runs_out_and_the_late_move_is_judged() {
    let (host, prom) = host().await;
    let m = host.create_match(&hasty(), seats(SeatHolder::Agent("default".into())), &json!({})).await.unwrap();
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    // p1's agent thinks past its 300 ms: the actor counts it when the time runs out, before
    // any move.
    let counted = async {
        while counter(&prom, "juegoland_agent_limits_total", Some(("limit", "think_time"))) < 1.0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), counted).await.expect("the think time ran out and was counted");
    // The late move is still the rules' to judge, and applies.
    assert_eq!(applied(&host.command("agent:p1", drop_cmd(m, 1, 3)).await.unwrap()), 2);
    assert_eq!(counter(&prom, "juegoland_agent_late_commands_total", None), 1.0);
    assert_eq!(counter(&prom, "juegoland_agent_think_seconds", None), 1.0);
    // A move within the think time is not late, and its turn is not counted.
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 2, 4)).await.unwrap()), 3);
    assert_eq!(applied(&host.command("agent:p1", drop_cmd(m, 3, 4)).await.unwrap()), 4);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(counter(&prom, "juegoland_agent_late_commands_total", None), 1.0);
    assert_eq!(counter(&prom, "juegoland_agent_limits_total", Some(("limit", "think_time"))), 1.0);
    assert_eq!(counter(&prom, "juegoland_agent_think_seconds", None), 2.0);
}

#[tokio::test]
async fn bots_never_play_an_agent_seat() {
    let (host, _prom) = host().await;
    let agent = SeatHolder::Agent("default".into());
    let m = host
        .create_match(&hasty(), [("p0".to_owned(), agent.clone()), ("p1".to_owned(), agent)].into(), &json!({}))
        .await
        .unwrap();
    // Two agent seats, and the game has a bot: nothing moves until an agent does.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(host.revision(m).await.unwrap(), 0);
    assert_eq!(applied(&host.command("agent:p0", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(host.revision(m).await.unwrap(), 1, "p1 waits for its agent, not for a bot");
    // And a bot's principal is refused the agent's seat.
    match host.command("bot:p1", drop_cmd(m, 1, 3)).await.unwrap() {
        ServerMessage::Error(e) => assert_eq!(e.code, ErrorCode::Forbidden),
        other => panic!("expected FORBIDDEN, got {other:?}"),
    }
}

#[tokio::test]
async fn under_a_bot_policy_the_stand_in_plays_an_overrun_turn_and_hands_the_seat_back() {
    let (host, prom) = host().await;
    let handover = Handover::Bot { after_ms: 60_000, profile: juegoland_conecta4::BOT_DEFAULT.into() };
    let created = host
        .create_pinned(
            hasty().into(),
            seats(SeatHolder::Agent("default".into())),
            &json!({}),
            CreateOptions { handover: Some(handover), expiry: None },
        )
        .await
        .unwrap();
    let m = created.match_id;
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    // p1's agent says nothing past its 300 ms: the bot takes the seat (revision 2), drops a
    // disc (3) and hands the seat back (4), all without the agent.
    let played = async {
        while host.revision(m).await.unwrap() < 4 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), played).await.expect("the stand-in played the overrun turn");
    let log: Vec<LogEntry> = host.store().log(m).await.unwrap();
    let ops: Vec<String> = log[2..5]
        .iter()
        .map(|e| match &e.op {
            LoggedOp::Control { seat, stand_in } => format!("control {seat} {stand_in:?}"),
            LoggedOp::Command { principal, .. } => format!("command {principal}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(ops, ["control p1 Some(\"default\")", "command bot:p1", "control p1 None"]);
    let s = host.inspect(m).await.unwrap();
    assert!(s.stand_ins.is_empty(), "the seat is the agent's again");
    assert_eq!(s.controller("p1"), Some(ControllerKind::Agent));
    assert_eq!(counter(&prom, "juegoland_agent_limits_total", Some(("limit", "think_time"))), 1.0);
    // Its next turn is its own: the agent moves within its think time, nobody stands in.
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 4, 4)).await.unwrap()), 5);
    assert_eq!(applied(&host.command("agent:p1", drop_cmd(m, 5, 4)).await.unwrap()), 6);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(host.revision(m).await.unwrap(), 6);
    assert_eq!(counter(&prom, "juegoland_agent_limits_total", Some(("limit", "think_time"))), 1.0);
    // A late move of the agent after the bot played is judged stale, like any command built
    // on an old revision.
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 6, 5)).await.unwrap()), 7);
    tokio::time::timeout(Duration::from_secs(5), async {
        while host.revision(m).await.unwrap() < 10 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the stand-in played the second overrun turn too");
    let late = host.command("agent:p1", drop_cmd(m, 7, 6)).await.unwrap();
    assert_eq!(rejected(&late), juegoland_protocol::RejectionCode::StaleRevision);
}
