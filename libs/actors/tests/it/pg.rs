//! The match host on PostgreSQL, for the cluster rows of `acceptance.md`: two nodes that
//! both believe they own a match (the store's revision fence lets only one commit; no
//! fork), and PostgreSQL restarted under a running workload (`UNAVAILABLE`, then success;
//! nothing applied twice, nothing half-committed).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::{MatchError, Matches};
use juegoland_bus::LocalBus;
use juegoland_core::{Engine, GameKey, LoggedOp, ReceiptKey, ReceiptOutcome, Registry, SeatHolder};
use juegoland_protocol::{AckStatus, Action, CommandEnvelope, ErrorCode, Precondition, Recovery, RejectionCode};
use juegoland_protocol::{ErrorMessage, ServerMessage};
use juegoland_store::{PgStore, Store};
use juegoland_testkit::{TestSchema, ThrowawayPg};
use serde_json::json;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use uuid::Uuid;

fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    Arc::new(registry)
}

async fn pg_store(pool: PgPoolOptions, options: PgConnectOptions) -> Arc<PgStore> {
    Arc::new(PgStore::connect_with(pool, options).await.expect("connect the pg store"))
}

/// One node: a host with its own engine, bus and metrics on `store`.
async fn node(registry: &Arc<Registry>, store: Arc<PgStore>) -> Host {
    Host::start(
        Arc::new(Engine::new(registry.clone())),
        store,
        Arc::new(LocalBus::default()),
        Metrics::new(&prometheus::Registry::new()).unwrap(),
        HostConfig::default(),
    )
    .await
    .expect("start the host")
}

async fn create_conecta4(host: &Host) -> Uuid {
    let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let seats = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Principal("bob".into())),
    ]);
    host.create_match(&key, seats, &json!({})).await.expect("create a match")
}

fn drop_cmd(match_id: Uuid, command_id: u128, revision: u64, column: u8) -> CommandEnvelope {
    CommandEnvelope {
        match_id,
        command_id: Uuid::from_u128(command_id),
        precondition: Precondition::Match { revision },
        action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
    }
}

#[track_caller]
fn applied(msg: &ServerMessage) -> u64 {
    match msg {
        ServerMessage::Ack(a) if a.status == AckStatus::Applied && !a.duplicate => a.revision.unwrap(),
        other => panic!("expected a fresh applied ack, got {other:?}"),
    }
}

/// Whether `msg` is `game.error` UNAVAILABLE telling the client to retry the same command.
fn retry_same_command(msg: &ServerMessage) -> Option<&ErrorMessage> {
    match msg {
        ServerMessage::Error(e) if e.code == ErrorCode::Unavailable => {
            assert_eq!(e.recovery, Recovery::RetrySameCommand, "{e:?}");
            Some(e)
        }
        _ => None,
    }
}

/// The command ids of a match's log, in revision order, after checking that it has exactly
/// one entry per revision `0..=revision` (no fork, no gap) and that the stored state
/// replays from it.
async fn check_log(registry: &Registry, store: &PgStore, match_id: Uuid) -> Vec<Uuid> {
    let stored = store.load(match_id).await.unwrap().expect("the match is stored");
    let log = store.log(match_id).await.unwrap();
    let revisions: Vec<u64> = log.iter().map(|e| e.revision).collect();
    assert_eq!(revisions, (0..=stored.revision()).collect::<Vec<_>>(), "one log entry per revision");
    juegoland_core::replay(registry, &stored.snapshot, &log).expect("the stored state replays from its log");
    log.iter()
        .skip(1)
        .map(|e| match &e.op {
            LoggedOp::Command { command_id, .. } => *command_id,
            other => panic!("only commands after the creation, got {other:?}"),
        })
        .collect()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(5), "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Two nodes share one schema and both activate the same match. The node whose actor
/// holds an old revision cannot commit on top of the other's commit: its commit fails the
/// revision compare-and-set, it answers UNAVAILABLE (retry the same command) and its actor
/// stops; the retried command is judged on the reloaded state.
#[tokio::test]
async fn two_nodes_owning_one_match_cannot_fork_it() {
    let schema = TestSchema::create("actors", "two_nodes").await;
    let pool = || PgPoolOptions::new().max_connections(4).acquire_timeout(Duration::from_secs(5));
    let (store_a, store_b) = (pg_store(pool(), schema.options()).await, pg_store(pool(), schema.options()).await);
    let registry = registry();
    let (a, b) = (node(&registry, store_a.clone()).await, node(&registry, store_b.clone()).await);

    let m = create_conecta4(&a).await;
    assert_eq!(a.inspect(m).await.unwrap().revision, 0);
    assert_eq!(b.inspect(m).await.unwrap().revision, 0, "node B activates the match too");
    assert_eq!((a.active_actors(), b.active_actors()), (1, 1));

    // Node A applies alice's move.
    assert_eq!(applied(&a.command("alice", drop_cmd(m, 1, 0, 3)).await.unwrap()), 1);

    // Node B still holds revision 0, where alice's other move is legal; the fence refuses it.
    let b1 = drop_cmd(m, 2, 0, 4);
    let answer = b.command("alice", b1.clone()).await.unwrap();
    let e = retry_same_command(&answer).unwrap_or_else(|| panic!("expected UNAVAILABLE, got {answer:?}"));
    assert_eq!((e.match_id, e.command_id), (Some(m), Some(b1.command_id)));
    wait_until("node B's fenced actor stops", || b.active_actors() == 0).await;
    assert_eq!(store_b.load(m).await.unwrap().unwrap().revision(), 1, "B's move did not land");

    // The same command retried through B is judged on the reloaded revision 1: stale, and
    // that rejection is stored (a further retry gets the same receipt).
    let retried = b.command("alice", b1.clone()).await.unwrap();
    let ServerMessage::Ack(ack) = &retried else { panic!("expected a receipt, got {retried:?}") };
    assert_eq!((ack.status, ack.code, ack.duplicate), (AckStatus::Rejected, Some(RejectionCode::StaleRevision), false));
    let again = b.command("alice", b1.clone()).await.unwrap();
    assert!(matches!(&again, ServerMessage::Ack(a) if a.duplicate && a.status == AckStatus::Rejected), "{again:?}");
    assert_eq!(b.inspect(m).await.unwrap().revision, 1);

    // A command built on the new revision applies through B…
    assert_eq!(applied(&b.command("bob", drop_cmd(m, 3, 1, 4)).await.unwrap()), 2);
    // …and now A's actor is the stale one: fenced in turn (its would-be rejection of a
    // revision it has not seen is not stored either), then the retry applies.
    let a2 = drop_cmd(m, 4, 2, 5);
    let answer = a.command("alice", a2.clone()).await.unwrap();
    assert!(retry_same_command(&answer).is_some(), "expected UNAVAILABLE, got {answer:?}");
    wait_until("node A's fenced actor stops", || a.active_actors() == 0).await;
    assert_eq!(applied(&a.command("alice", a2.clone()).await.unwrap()), 3);

    // No fork: one log entry per revision, holding the three applied commands in order.
    let logged = check_log(&registry, &store_a, m).await;
    assert_eq!(logged, [1u128, 3, 4].map(Uuid::from_u128));
    let receipt = |principal: &str, id: u128| {
        let key = ReceiptKey { match_id: m, principal: principal.into(), command_id: Uuid::from_u128(id) };
        let store = store_b.clone();
        async move { store.receipt(&key).await.unwrap().map(|r| r.outcome) }
    };
    assert!(matches!(receipt("alice", 1).await, Some(ReceiptOutcome::Applied { revision: 1, .. })));
    assert!(matches!(
        receipt("alice", 2).await,
        Some(ReceiptOutcome::Rejected { revision: 1, code: RejectionCode::StaleRevision, .. })
    ));
    assert!(matches!(receipt("bob", 3).await, Some(ReceiptOutcome::Applied { revision: 2, .. })));
    assert!(matches!(receipt("alice", 4).await, Some(ReceiptOutcome::Applied { revision: 3, .. })));

    drop((a, b));
    store_a.close().await;
    store_b.close().await;
    schema.drop_schema().await;
}

/// The columns each match plays, alternating alice and bob from alice: two rows with no
/// four in a line, so no match ends early.
const COLUMNS: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5];
const MATCHES: u128 = 3;

#[derive(Default)]
struct Counts {
    applied: AtomicU64,
    unavailable: AtomicU64,
    /// Set once the server is back; applied answers after it are counted apart.
    restarted: AtomicBool,
    applied_after_restart: AtomicU64,
}

/// A client playing `COLUMNS` in match `m` (number `n`): each envelope is resent unchanged
/// while the answer is UNAVAILABLE, as the protocol's `retry-same-command` asks.
async fn client(host: Host, m: Uuid, n: u128, counts: Arc<Counts>) -> Vec<Uuid> {
    let mut sent = Vec::new();
    for (i, column) in COLUMNS.into_iter().enumerate() {
        let revision = i as u64;
        let principal = if i % 2 == 0 { "alice" } else { "bob" };
        let envelope = drop_cmd(m, n << 64 | i as u128, revision, column);
        sent.push(envelope.command_id);
        loop {
            match host.command(principal, envelope.clone()).await {
                Ok(ServerMessage::Ack(a)) if a.status == AckStatus::Applied => {
                    // A duplicate ack is the receipt of a commit whose answer was lost.
                    assert_eq!(a.revision, Some(revision + 1), "{a:?}");
                    counts.applied.fetch_add(1, Ordering::SeqCst);
                    if counts.restarted.load(Ordering::SeqCst) {
                        counts.applied_after_restart.fetch_add(1, Ordering::SeqCst);
                    }
                    break;
                }
                Ok(msg) if retry_same_command(&msg).is_some() => {}
                Err(MatchError::Unavailable(_)) => {}
                other => panic!("match {n}, move {i}: unexpected answer {other:?}"),
            }
            counts.unavailable.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    sent
}

/// PostgreSQL crashes under a running workload and comes back a second later: commands
/// meanwhile answer UNAVAILABLE, then succeed when retried; nothing is applied twice and
/// nothing is half-committed.
#[tokio::test]
async fn postgres_restarted_under_a_running_workload() {
    let pg = ThrowawayPg::start();
    let options: PgConnectOptions = pg.url().parse().unwrap();
    // Fail fast while the server is down: a call waits at most 500 ms for a connection.
    let pool = PgPoolOptions::new().max_connections(8).acquire_timeout(Duration::from_millis(500));
    let store = pg_store(pool, options).await;
    let registry = registry();
    let host = node(&registry, store.clone()).await;

    let mut matches = Vec::new();
    for _ in 0..MATCHES {
        matches.push(create_conecta4(&host).await);
    }
    let counts = Arc::new(Counts::default());
    let clients: Vec<_> =
        matches.iter().zip(1..).map(|(&m, n)| tokio::spawn(client(host.clone(), m, n, counts.clone()))).collect();

    // Crash the server once every match is under way, and restart it a second later.
    wait_until("the workload is under way", || counts.applied.load(Ordering::SeqCst) >= 2 * MATCHES as u64).await;
    pg.crash();
    let before_restart = counts.applied.load(Ordering::SeqCst);
    assert!(before_restart < COLUMNS.len() as u64 * MATCHES as u64, "the workload ended before the crash");
    tokio::time::sleep(Duration::from_secs(1)).await;
    pg.restart();
    counts.restarted.store(true, Ordering::SeqCst);

    let mut sent = Vec::new();
    for c in clients {
        sent.push(tokio::time::timeout(Duration::from_secs(20), c).await.expect("the clients finish").unwrap());
    }
    assert!(counts.unavailable.load(Ordering::SeqCst) >= 1, "no command met the outage");
    assert!(counts.applied_after_restart.load(Ordering::SeqCst) >= 1, "nothing succeeded after the restart");

    let mut sql = PgConnection::connect(&pg.url()).await.unwrap();
    for (&m, sent) in matches.iter().zip(&sent) {
        // Every match replays from its log, which holds each command once, in order.
        let logged = check_log(&registry, &store, m).await;
        assert_eq!(&logged, sent, "the log holds each command exactly once");
        // One receipt per command id, every one applied, as many as the revisions.
        let receipts = store.receipts(m).await.unwrap();
        let ids: BTreeSet<Uuid> = receipts.iter().map(|r| r.key.command_id).collect();
        assert_eq!(receipts.len(), ids.len(), "a command id with two receipts");
        assert_eq!(ids, sent.iter().copied().collect(), "one receipt per command sent");
        for receipt in receipts {
            let key = receipt.key;
            assert_eq!(store.receipt(&key).await.unwrap().map(|r| r.outcome), Some(receipt.outcome.clone()));
            let at = sent.iter().position(|id| *id == key.command_id).unwrap() as u64;
            assert_eq!(receipt.outcome, ReceiptOutcome::applied(at + 1), "{key:?}");
        }
        // Nothing half-committed: publications only with logged revisions, and every applied
        // command's publications are there.
        let published: Vec<(i64,)> =
            sqlx::query_as("SELECT revision FROM revisions WHERE match_id = $1 AND publications <> '[]'")
                .bind(m)
                .fetch_all(&mut sql)
                .await
                .unwrap();
        let published: BTreeSet<u64> = published.into_iter().map(|(r,)| r as u64).collect();
        let last = COLUMNS.len() as u64;
        assert!(published.iter().all(|r| *r <= last), "publications beyond the log: {published:?}");
        assert!(
            (1..=last).all(|r| published.contains(&r)),
            "a logged revision without its publications: {published:?}"
        );
        assert_eq!(host.inspect(m).await.unwrap().revision, last);
    }
    let _ = sql.close().await;
    drop(host);
    store.close().await;
}

/// A match that stops on purpose between snapshot points (the idle check, or the host
/// passivating it for a drain or a move) leaves its state as the snapshot: the next
/// activation redoes no revision, and play goes on from it.
#[tokio::test]
async fn a_passivated_match_leaves_its_state_as_the_snapshot() {
    let schema = TestSchema::create("actors", "passivation_snapshot").await;
    let store = pg_store(PgPoolOptions::new().max_connections(4), schema.options()).await;
    let prom = prometheus::Registry::new();
    let config = HostConfig { idle_passivation: Duration::from_millis(300), ..Default::default() };
    let engine = Arc::new(Engine::new(registry()));
    let host = Host::start(engine, store.clone(), Arc::new(LocalBus::default()), Metrics::new(&prom).unwrap(), config)
        .await
        .expect("start the host");
    let (idle, drained) = (create_conecta4(&host).await, create_conecta4(&host).await);
    for m in [idle, drained] {
        for revision in 0..3u64 {
            let who = if revision % 2 == 0 { "alice" } else { "bob" };
            let cmd = drop_cmd(m, 100 + u128::from(revision), revision, revision as u8);
            assert_eq!(applied(&host.command(who, cmd).await.unwrap()), revision + 1);
        }
        let stored = store.load(m).await.unwrap().expect("the match");
        assert_eq!((stored.snapshot.revision, stored.tail.len()), (0, 3), "between snapshot points: a tail");
    }
    host.passivate(drained).await;
    let left = |m| {
        let store = store.clone();
        async move { store.load(m).await.unwrap().expect("the match") }
    };
    let stored = left(drained).await;
    assert_eq!((stored.snapshot.revision, stored.tail.len()), (3, 0), "passivated: the state is the snapshot");
    tokio::time::timeout(Duration::from_secs(10), async {
        while left(idle).await.snapshot.revision != 3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the idle match passivates and leaves its snapshot");
    // Counted once the store answered, so a moment after the snapshot is visible.
    let left_count = || {
        let events = prom.gather().into_iter().find(|f| f.name() == "juegoland_actor_events_total").unwrap();
        events
            .get_metric()
            .iter()
            .find(|m| m.get_label().iter().any(|l| l.value() == "snapshot_left"))
            .map(|m| m.get_counter().get_value())
    };
    tokio::time::timeout(Duration::from_secs(5), async {
        while left_count() != Some(2.0) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("both snapshots counted: {:?}", left_count()));
    // Both play on from their snapshots.
    for m in [idle, drained] {
        assert_eq!(applied(&host.command("bob", drop_cmd(m, 200, 3, 3)).await.unwrap()), 4);
        let stored = store.load(m).await.unwrap().expect("the match");
        assert_eq!((stored.snapshot.revision, stored.tail.len()), (3, 1));
    }
    schema.drop_schema().await;
}
