//! The match host with the in-memory store and the local bus: activation, passivation,
//! re-activation from the last commit, bot seats, dispatch to the bus, and rule faults that
//! commit nothing. `pg` runs the host on PostgreSQL: two nodes owning one match, and a
//! server restarted under load.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::Matches;
use juegoland_bus::{BusItem, LocalBus};
use juegoland_core::{Engine, GameKey, Registry, SeatHolder};
use juegoland_protocol::{AckStatus, Action, CommandEnvelope, ErrorCode, Precondition, ServerMessage};
use juegoland_store::{MemoryStore, Store};
use serde_json::json;
use uuid::Uuid;

mod agents;
mod pg;
mod presence;
mod queue;
mod supervision;

async fn host(idle: Duration) -> (Host, Arc<MemoryStore>, prometheus::Registry) {
    host_with(HostConfig { idle_passivation: idle, ..Default::default() }).await
}

pub(crate) async fn host_with(config: HostConfig) -> (Host, Arc<MemoryStore>, prometheus::Registry) {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    registry.register(juegoland_sdk::erase(juegoland_hundido::Hundido)).unwrap();
    registry.register(juegoland_sdk::erase(juegoland_laberinto::Laberinto)).unwrap();
    let store = Arc::new(MemoryStore::new());
    let prom = prometheus::Registry::new();
    let host = Host::start(
        Arc::new(Engine::new(Arc::new(registry))),
        store.clone(),
        Arc::new(LocalBus::default()),
        Metrics::new(&prom).unwrap(),
        config,
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
    assert_eq!(store.load(m).await.unwrap().unwrap().revision(), 2);
    // A retry after re-activation still finds its receipt.
    let dup = host.command("alice", drop_cmd(m, 0, 3)).await.unwrap();
    assert!(matches!(dup, ServerMessage::Ack(a) if a.duplicate && a.revision == Some(1)));
}

/// The value of the counter family `name` for the label value `label` (summed).
fn counter(prom: &prometheus::Registry, name: &str, label: &str) -> u64 {
    prom.gather()
        .iter()
        .filter(|f| f.name() == name)
        .flat_map(|f| f.get_metric())
        .filter(|m| m.get_label().iter().any(|l| l.value() == label))
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

fn actor_events(prom: &prometheus::Registry, event: &str) -> u64 {
    counter(prom, "juegoland_actor_events_total", event)
}

/// Receipts live in the actor: judging a command reads none from the store, an exact retry
/// is still answered as a duplicate and a reused id still refused, after re-activation and
/// after cooling (when the actor reads its receipts again, once).
#[tokio::test]
async fn commands_are_judged_from_the_actor_s_receipts() {
    let cool_after = Duration::from_millis(100);
    let (host, store, prom) =
        host_with(HostConfig { cool_after, idle_passivation: Duration::from_secs(60), ..Default::default() }).await;
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    let mut revision = 0;
    for column in [0u8, 1, 0, 1] {
        let player = if revision % 2 == 0 { "alice" } else { "bob" };
        revision = applied(&host.command(player, drop_cmd(m, revision, column)).await.unwrap());
    }
    assert_eq!(actor_events(&prom, "receipts_loaded"), 0, "a match just created knows it has no receipts");
    let duplicate = |msg: ServerMessage, revision| matches!(msg, ServerMessage::Ack(a) if a.duplicate && a.revision == Some(revision));
    assert!(duplicate(host.command("bob", drop_cmd(m, 1, 1)).await.unwrap(), 2), "an exact retry");
    let reused = CommandEnvelope {
        action: Action { r#type: "drop".into(), payload: json!({"column": 6}) },
        ..drop_cmd(m, 1, 1)
    };
    assert!(
        matches!(host.command("bob", reused.clone()).await.unwrap(), ServerMessage::Error(e) if e.code == ErrorCode::CommandIdReused)
    );
    // Another principal may use the same command id: its own command, judged afresh.
    assert!(matches!(host.command("alice", drop_cmd(m, 1, 1)).await.unwrap(), ServerMessage::Ack(a) if !a.duplicate));
    assert_eq!(actor_events(&prom, "receipts_loaded"), 0, "none of that read the store");

    // Quiet: the receipts go with the decoded match, and come back once for the next command.
    tokio::time::sleep(cool_after * 4).await;
    assert!(actor_events(&prom, "cooled") >= 1);
    assert!(duplicate(host.command("alice", drop_cmd(m, 0, 0)).await.unwrap(), 1), "a retry after cooling");
    assert!(duplicate(host.command("bob", drop_cmd(m, 3, 1)).await.unwrap(), 4));
    assert_eq!(actor_events(&prom, "receipts_loaded"), 1, "read once after cooling");

    // Re-activated from the store (as on another node after a failover): read once more.
    host.passivate(m).await;
    assert!(duplicate(host.command("alice", drop_cmd(m, 2, 0)).await.unwrap(), 3));
    assert!(
        matches!(host.command("bob", reused).await.unwrap(), ServerMessage::Error(e) if e.code == ErrorCode::CommandIdReused)
    );
    assert_eq!(actor_events(&prom, "receipts_loaded"), 2);
    assert_eq!(store.receipts(m).await.unwrap().len(), 5, "four moves and alice's rejected reuse of bob's id");
}

#[tokio::test]
async fn a_quiet_match_is_kept_as_text_and_plays_on_with_its_bot() {
    let cool_after = Duration::from_millis(100);
    let (host, store, prom) = host_with(HostConfig { cool_after, ..Default::default() }).await;
    let m = host.create_match(&key(), seats(SeatHolder::Bot("default".into())), &json!({})).await.unwrap();
    for turn in 0..3u64 {
        // Quiet long enough to be kept as text, then a move warms it: same actor, same match.
        tokio::time::sleep(cool_after * 4).await;
        assert!(actor_events(&prom, "cooled") > turn, "cooled after each quiet spell");
        let revision = host.revision(m).await.unwrap();
        assert_eq!(revision, turn * 2, "the bot answered every move");
        let column = u8::try_from(turn).unwrap();
        assert_eq!(applied(&host.command("alice", drop_cmd(m, revision, column)).await.unwrap()), revision + 1);
        tokio::time::timeout(Duration::from_secs(10), async {
            while host.inspect(m).await.unwrap().revision < revision + 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the bot moves");
    }
    assert!(actor_events(&prom, "warmed") >= 3);
    assert_eq!(host.active_actors(), 1, "one actor the whole time");
    assert_eq!(actor_events(&prom, "activation"), 1);
    // What the actor holds after warming is exactly the committed state.
    tokio::time::sleep(cool_after * 4).await;
    let stored = host.engine().restore(store.load(m).await.unwrap().unwrap()).unwrap();
    assert_eq!(&host.inspect(m).await.unwrap(), stored.state());
}

#[tokio::test]
async fn an_active_match_fires_its_short_deadline_locally_once() {
    let (host, store, prom) = host(Duration::from_secs(60)).await;
    let clock = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1000}, "policy": "forfeit"}});
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &clock).await.unwrap();
    // Alice moves in time: her clock's generation is replaced by bob's.
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    // Nobody runs a durable scheduler here: bob's turn expires through the actor's timer.
    let state = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let s = host.inspect(m).await.unwrap();
            if s.is_finished() {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the clock fires");
    assert_eq!(state.revision, 2);
    let result = serde_json::to_value(&state.position.result).unwrap();
    assert_eq!(result["reasonCode"], "timeout", "{result}");
    assert_eq!(result["participants"]["p1"]["outcome"], "loss", "{result}");
    assert!(state.deadlines.is_empty());
    // Alice's replaced generation was armed too: it found itself stale and changed nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let count = |outcome: &str| counter(&prom, "juegoland_local_deadlines_total", outcome);
    assert_eq!((count("fired"), count("stale")), (1, 1));
    let log = store.log(m).await.unwrap();
    assert_eq!(log.len(), 3, "create, alice's drop, one firing");
    juegoland_core::replay(&host.engine().registry, &store.load(m).await.unwrap().unwrap().snapshot, &log).unwrap();
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
    // Marks are written in the background, grouped with other matches' marks.
    tokio::time::timeout(Duration::from_secs(5), async {
        while !store.undispatched(10, Duration::ZERO).await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("dispatched rows are marked");
}

/// Dispatched marks gather between writes (`HostConfig::mark_interval`): publications reach
/// the bus at once while their revisions stay waiting in the outbox; a sweep writes the
/// gathered marks before it reads, so it re-sends nothing; `Host::stop` writes what is left.
#[tokio::test]
async fn dispatched_marks_gather_and_the_sweeper_writes_them_before_it_reads() {
    let config = HostConfig {
        mark_interval: Duration::from_secs(3600),
        sweep_interval: Duration::from_secs(3600),
        ..Default::default()
    };
    let (host, store, prom) = host_with(config).await;
    // The marker's and the sweeper's first rounds run at once; let them pass.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    let mut sub = host.bus().subscribe(m).await.unwrap();
    for revision in 0..3u64 {
        let who = if revision % 2 == 0 { "alice" } else { "bob" };
        assert_eq!(applied(&host.command(who, drop_cmd(m, revision, revision as u8)).await.unwrap()), revision + 1);
    }
    let mut seen = 0;
    while seen < 6 {
        match tokio::time::timeout(Duration::from_secs(5), sub.next()).await.unwrap().unwrap() {
            BusItem::Publication(_) => seen += 1,
            BusItem::Gap => panic!("no gap expected"),
        }
    }
    let waiting: std::collections::BTreeSet<u64> =
        store.undispatched(100, Duration::ZERO).await.unwrap().iter().map(|r| r.publication.revision).collect();
    assert_eq!(waiting, (1..=3).collect(), "every move dispatched, none marked yet");
    host.stop().await;
    assert_eq!(store.undispatched(100, Duration::ZERO).await.unwrap(), vec![], "stopping writes the gathered marks");
    assert_eq!(counter(&prom, "juegoland_outbox_dispatch_total", "swept"), 0);

    // A sweep every 50 ms, marks written only by it: what was dispatched is never re-sent.
    let config = HostConfig {
        mark_interval: Duration::from_secs(3600),
        sweep_interval: Duration::from_millis(50),
        ..Default::default()
    };
    let (host, store, prom) = host_with(config).await;
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    for revision in 0..3u64 {
        let who = if revision % 2 == 0 { "alice" } else { "bob" };
        assert_eq!(applied(&host.command(who, drop_cmd(m, revision, revision as u8)).await.unwrap()), revision + 1);
    }
    tokio::time::timeout(Duration::from_secs(5), async {
        while !store.undispatched(10, Duration::ZERO).await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the sweeper writes the gathered marks");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(counter(&prom, "juegoland_outbox_dispatch_total", "swept"), 0, "nothing re-sent");
}

/// A bus that can be switched off: publishing fails while it is down.
struct SwitchedBus {
    up: std::sync::atomic::AtomicBool,
    inner: LocalBus,
}

#[async_trait::async_trait]
impl juegoland_bus::Bus for SwitchedBus {
    async fn publish(&self, publications: &[juegoland_core::Publication]) -> Result<(), juegoland_bus::BusError> {
        if !self.up.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(juegoland_bus::BusError::Unavailable("switched off".into()));
        }
        self.inner.publish(publications).await
    }

    async fn subscribe(
        &self,
        match_id: Uuid,
    ) -> Result<futures::stream::BoxStream<'static, BusItem>, juegoland_bus::BusError> {
        self.inner.subscribe(match_id).await
    }
}

/// The value of the gauge `name`.
fn gauge(prom: &prometheus::Registry, name: &str) -> f64 {
    let families = prom.gather();
    let family = families.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no {name}"));
    family.get_metric().iter().map(|m| m.get_gauge().get_value()).sum()
}

/// A bus outage: the commit stands, the failed publish is counted, and the sweeper reports
/// the waiting rows and the age of the oldest until the bus is back and it drains them.
#[tokio::test]
async fn a_bus_outage_shows_as_an_outbox_backlog_until_the_sweeper_drains_it() {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    let bus = Arc::new(SwitchedBus { up: false.into(), inner: LocalBus::default() });
    let prom = prometheus::Registry::new();
    let config = HostConfig {
        sweep_interval: Duration::from_millis(50),
        redispatch_after: Duration::from_millis(100),
        ..Default::default()
    };
    let engine = Arc::new(Engine::new(Arc::new(registry)));
    let host = Host::start(engine, Arc::new(MemoryStore::new()), bus.clone(), Metrics::new(&prom).unwrap(), config)
        .await
        .unwrap();
    assert_eq!(gauge(&prom, "juegoland_outbox_backlog"), 0.0);
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1, "the commit stands");
    assert!(counter(&prom, "juegoland_outbox_dispatch_total", "failed") >= 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Revision 1 waits for its two seats (the creation's publications too, if any).
    assert!(gauge(&prom, "juegoland_outbox_backlog") >= 2.0);
    let age = gauge(&prom, "juegoland_outbox_backlog_age_seconds");
    assert!((0.2..60.0).contains(&age), "the oldest row has waited since the commit: {age}");

    bus.up.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(5), async {
        while gauge(&prom, "juegoland_outbox_backlog") > 0.0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the sweeper drains the backlog");
    assert_eq!(gauge(&prom, "juegoland_outbox_backlog_age_seconds"), 0.0);
    assert!(counter(&prom, "juegoland_outbox_dispatch_total", "swept") >= 1);
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
    assert!(matches!(host.inspect(Uuid::from_u128(1)).await, Err(juegoland_api::MatchError::NotFound)));
    let text = prom.gather().iter().map(|f| f.name().to_owned()).collect::<Vec<_>>().join(",");
    assert!(text.contains("juegoland_commands_total"), "{text}");
}

/// A bot seat that has readied waits (its stage allows nothing) and acts again once battle
/// begins: the host asks bots only when their stage allows an action.
#[tokio::test]
async fn a_bot_waits_through_the_rivals_placement_then_fires_back() {
    let (host, _, _) = host(Duration::from_secs(60)).await;
    let hundido = GameKey { id: "hundido".into(), rules_version: "1.0.0".into() };
    let m = host.create_match(&hundido, seats(SeatHolder::Bot("default".into())), &json!({})).await.unwrap();
    let wait_for = |pred: Box<dyn Fn(&juegoland_core::MatchState) -> bool + Send>| {
        let host = host.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(20), async {
                loop {
                    let s = host.inspect(m).await.unwrap();
                    if pred(&s) {
                        return s;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .expect("the bot keeps playing")
        }
    };
    // The bot places its fleet and readies while alice has not placed anything.
    wait_for(Box::new(|s| s.position.flow.actors.get("p1").map(String::as_str) == Some("waiting"))).await;
    let ships = [("carrier", 0), ("battleship", 2), ("cruiser", 4), ("submarine", 6), ("destroyer", 8)];
    for (i, (ship, row)) in ships.iter().chain([("ready", 0)].iter()).enumerate() {
        let s = host.inspect(m).await.unwrap();
        let precondition = Precondition::Actor { phase_epoch: s.phase_epoch, actor_revision: s.actor_revisions["p0"] };
        let (t, payload) = if *ship == "ready" {
            ("ready", json!({}))
        } else {
            ("placeShip", json!({"ship": ship, "row": row, "column": 0, "orientation": "horizontal"}))
        };
        let env = CommandEnvelope {
            match_id: m,
            command_id: Uuid::from_u128(900 + i as u128),
            precondition,
            action: Action { r#type: t.into(), payload },
        };
        applied(&host.command("alice", env).await.unwrap());
    }
    let s = wait_for(Box::new(|s| s.position.flow.phase == "battle")).await;
    let fire = CommandEnvelope {
        match_id: m,
        command_id: Uuid::from_u128(999),
        precondition: Precondition::Match { revision: s.revision },
        action: Action { r#type: "fire".into(), payload: json!({"row": 9, "column": 9}) },
    };
    let after_alice = applied(&host.command("alice", fire).await.unwrap());
    // The bot fires back: its shot is the next revision and it is alice's turn again.
    let s = wait_for(Box::new(move |s| s.revision > after_alice)).await;
    assert_eq!(s.position.flow.actors.keys().collect::<Vec<_>>(), ["p0"]);
}

/// The trace context of a command's commit rides on its publications: written with the outbox
/// rows, and re-dispatched by the sweeper as stored, so a gateway delivering them late still
/// continues the command's trace. A command whose trace nobody exports (no exporter here, no
/// caller's context) stores none. The process logs JSON lines, as a deployed node does, so it
/// keeps the OpenTelemetry layer that continues a caller's trace.
#[tokio::test]
async fn the_sweeper_re_dispatches_publications_with_their_commits_trace_context() {
    use juegoland_bus::Bus;
    use tracing::Instrument;
    let _telemetry = juegoland_telemetry::init_with("juegoland-actors-test", juegoland_telemetry::LogFormat::Json);
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    let bus = Arc::new(SwitchedBus { up: false.into(), inner: LocalBus::default() });
    let store = Arc::new(MemoryStore::new());
    let config = HostConfig { sweep_interval: Duration::from_millis(50), ..Default::default() };
    let engine = Arc::new(Engine::new(Arc::new(registry)));
    let prom = prometheus::Registry::new();
    let host = Host::start(engine, store.clone(), bus.clone(), Metrics::new(&prom).unwrap(), config).await.unwrap();
    let m = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    store.mark_dispatched(&[(m, 0)]).await.unwrap();

    // Revision 1: a trace started here, with nothing to export it.
    assert_eq!(applied(&host.command("alice", drop_cmd(m, 0, 3)).await.unwrap()), 1);
    // Revision 2: within a caller's trace, as a node serves a router's call.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let call = tracing::info_span!("test.call");
    juegoland_telemetry::set_parent_from_text(&call, &format!("00-{trace}-00f067aa0ba902b7-01"));
    assert_eq!(applied(&host.command("bob", drop_cmd(m, 1, 4)).instrument(call).await.unwrap()), 2);

    let waiting: Vec<_> =
        store.undispatched(10, Duration::ZERO).await.unwrap().into_iter().map(|r| r.publication).collect();
    let contexts: Vec<(u64, Option<String>)> =
        waiting.iter().map(|p| (p.revision, p.trace_context.as_deref().map(str::to_owned))).collect();
    // Conecta 4 publishes to its two seats (and to its spectators while any follows it: none does).
    let per_revision = 2;
    assert_eq!(contexts.len(), 2 * per_revision, "two recipients, two revisions: {contexts:?}");
    assert!(contexts[..per_revision].iter().all(|(r, tp)| *r == 1 && tp.is_none()), "{contexts:?}");
    let stored = contexts[per_revision].1.clone().expect("the continued trace's commit stored its context");
    // The commit's own span, in the caller's trace: neither the caller's span nor a new trace.
    assert!(stored.starts_with(&format!("00-{trace}-")) && !stored.contains("00f067aa0ba902b7"), "{stored}");
    assert!(contexts[per_revision..].iter().all(|(r, tp)| *r == 2 && tp.as_deref() == Some(&*stored)), "{contexts:?}");

    // The bus comes back: the sweeper sends both revisions, each with what was stored.
    let mut sub = bus.subscribe(m).await.unwrap();
    bus.up.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut swept = Vec::new();
    while swept.len() < 2 * per_revision {
        match tokio::time::timeout(Duration::from_secs(5), sub.next()).await.expect("the sweeper publishes") {
            Some(BusItem::Publication(p)) => swept.push((p.revision, p.trace_context.as_deref().map(str::to_owned))),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(swept, contexts);
}

#[tokio::test]
async fn a_finished_match_passivates_sooner_than_a_live_one() {
    let (host, store, _) = host_with(HostConfig {
        idle_passivation: Duration::from_secs(60),
        finished_passivation: Duration::from_millis(200),
        ..Default::default()
    })
    .await;
    let live = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    let done = host.create_match(&key(), seats(SeatHolder::Principal("bob".into())), &json!({})).await.unwrap();
    // Alice wins the second match with four in column 0; the first stays at its first move.
    assert_eq!(applied(&host.command("alice", drop_cmd(live, 0, 3)).await.unwrap()), 1);
    let mut revision = 0;
    for column in [0u8, 1, 0, 1, 0, 1, 0] {
        let player = if revision % 2 == 0 { "alice" } else { "bob" };
        revision = applied(&host.command(player, drop_cmd(done, revision, column)).await.unwrap());
    }
    assert!(store.load(done).await.unwrap().unwrap().is_finished());
    assert_eq!(host.active_actors(), 2);
    // The finished one passivates; the live one, quiet as long, stays.
    tokio::time::timeout(Duration::from_secs(5), async {
        while host.active_actors() > 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the finished match passivates");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(host.active_actors(), 1, "the live match stays active");
    // A late retry activates the finished match from the store and is still a duplicate.
    let dup = host.command("alice", drop_cmd(done, 6, 0)).await.unwrap();
    assert!(matches!(&dup, ServerMessage::Ack(a) if a.duplicate && a.revision == Some(7)), "{dup:?}");
}

/// The audit reads matches whose bots keep playing (as a load test's matches do once bots
/// stand in for its departed clients): each match is read with its log as of one revision, so
/// every audit made while they play passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_reads_each_match_in_play_as_of_one_revision() {
    let (host, store, _) = host(Duration::from_secs(60)).await;
    let bots = || {
        BTreeMap::from([
            ("p0".to_string(), SeatHolder::Bot("default".into())),
            ("p1".to_string(), SeatHolder::Bot("default".into())),
        ])
    };
    let mut ids = std::collections::BTreeSet::new();
    for _ in 0..8 {
        ids.insert(host.create_match(&key(), bots(), &json!({})).await.unwrap());
    }
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    let (mut audits_in_play, deadline) = (0, tokio::time::Instant::now() + Duration::from_secs(30));
    loop {
        let mut in_play = false;
        for id in &ids {
            in_play |= !store.load(*id).await.unwrap().unwrap().is_finished();
        }
        let report = juegoland_store::audit::audit(&*store, &registry, &[], Some(&ids)).await.unwrap();
        assert!(report.passed(), "{:?}", report.problems);
        if !in_play {
            break;
        }
        audits_in_play += 1;
        assert!(tokio::time::Instant::now() < deadline, "the bots did not finish within 30 s");
    }
    assert!(audits_in_play > 0, "no audit ran while a match was in play");
}
