//! The deadline scheduler with real processes: scheduler replicas firing Conecta 4 turn
//! clocks through real routers into real nodes over PostgreSQL, the acceptance case
//! "restart with pending deadlines" with SIGKILLed processes, and the all-in-one firing in
//! process across a restart of its embedded store. Every case ends with an audit: each
//! generation the match logs fired appears once, the rows marked `fired` are exactly those
//! generations, and nothing replaced or cancelled fired.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use juegoland_api::MatchRequest;
use juegoland_core::LifecycleRequest;
use juegoland_sdk::clock::CLOCK_DEADLINE;
use juegoland_store::{PgStore, Store};
use serde_json::json;
use uuid::Uuid;

use crate::client::{Server, data_dir};
use crate::harness::{
    Cluster, Proc, RouterClient, Seen, applied_revision, audit, create_with, drop_at, metric_sum, owned_by,
    router_call, scheduler_args, signal, submit,
};

#[path = "../../../../libs/roles/tests/it/audit.rs"]
mod deadline_audit;

type Key = deadline_audit::Key;

/// A Conecta 4 turn clock: `turn_ms` per turn, and what happens when it runs out.
fn clock(turn_ms: u64, policy: &str) -> String {
    json!({ "clock": { "mode": { "kind": "perTurn", "turnMs": turn_ms }, "policy": policy } }).to_string()
}

/// The pending clock deadline of a match: (match, id, generation) and its due instant.
async fn clock_of(store: &PgStore, match_id: Uuid) -> (Key, i64) {
    let state = crate::harness::current_state(store, match_id).await.expect("the match");
    let d = state.deadlines.get(CLOCK_DEADLINE).unwrap_or_else(|| panic!("{match_id} has no pending clock"));
    ((match_id, CLOCK_DEADLINE.to_owned(), d.generation), d.due_ms)
}

/// alice drops a disc in column 3 at revision 0: the clock moves to bob's turn (a new
/// generation replaces the first).
async fn first_drop(client: &mut RouterClient, match_id: Uuid) {
    let answer = submit(client, "alice", &drop_at(match_id, 0, 3)).await;
    assert_eq!(applied_revision(&answer), Some(1), "{answer:?}");
}

async fn cancel(client: &mut RouterClient, match_id: Uuid) {
    let request = LifecycleRequest::Cancel { reason_code: "test-cancelled".into() };
    router_call(client, &MatchRequest::Lifecycle { match_id, request }).await.expect("cancel the match");
}

async fn withdraw(client: &mut RouterClient, match_id: Uuid) {
    let request = LifecycleRequest::Withdraw { seat: "p1".into() };
    router_call(client, &MatchRequest::Lifecycle { match_id, request }).await.expect("withdraw bob");
}

/// Waits until no deadline is pending.
async fn until_none_pending(store: &PgStore, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let pending = store.pending_deadlines().await.expect("count pending deadlines");
        if pending == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{pending} deadlines still pending after {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The scheduler's count of firings with `outcome` in a Prometheus text exposition.
fn fired_in(text: &str, outcome: &str) -> f64 {
    let line = format!("juegoland_scheduler_deadlines_total{{outcome=\"{outcome}\"}}");
    text.lines().find_map(|l| l.strip_prefix(&line)?.trim().parse().ok()).unwrap_or(0.0)
}

async fn outcomes(p: &Proc, outcome: &str) -> f64 {
    fired_in(&p.get("/metrics").await, outcome)
}

/// How many pending deadlines of `matches` `claimant` holds a live claim on.
async fn live_claims(cluster: &Cluster, claimant: &str, matches: &[Uuid]) -> i64 {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect_with(&cluster.schema.options()).await.expect("connect");
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM deadlines
         WHERE state = 'pending' AND claimed_by = $1 AND claim_until > now() AND match_id = ANY($2)",
    )
    .bind(claimant)
    .bind(matches)
    .fetch_one(&mut c)
    .await
    .expect("count claims");
    n
}

/// Nodes without the local fast-path timers: these tests are of the durable scheduler.
const DURABLE_ONLY: &[(&str, &str)] = &[("JUEGOLAND_LOCAL_DEADLINE_HORIZON_MS", "0")];

/// Two scheduler replicas (processes) over the same due deadlines of a two-node cluster:
/// forfeit clocks (one firing), default-move clocks (a firing per turn until cancelled),
/// replaced and withdrawn clocks. Each generation fires exactly once; what a replica could
/// not fire (a generation replaced or a match cancelled under it) it counted as stale.
#[tokio::test(flavor = "multi_thread")]
async fn two_scheduler_replicas_fire_each_deadline_once() {
    let cluster = Cluster::start_with_env("sched_replicas", 2, 2, DURABLE_ONLY).await;
    let (url, routers) = (cluster.schema.url(), cluster.router_urls());
    let extra = ["--lease-ms", "5000", "--batch", "4"];
    let a = Proc::spawn(scheduler_args(&url, &routers, "replica-a", &extra));
    let b = Proc::spawn(scheduler_args(&url, &routers, "replica-b", &extra));
    let store = cluster.store().await;
    let mut client = cluster.client(0).await;

    let mut replaced: BTreeSet<Key> = BTreeSet::new();
    let mut forfeits = vec![];
    for k in 0..30 {
        forfeits.push(create_with(&mut client, &clock(1_000 + k * 40, "forfeit")).await);
    }
    let mut default_moves = vec![];
    for _ in 0..8 {
        default_moves.push(create_with(&mut client, &clock(1_000, "defaultMove")).await);
    }
    // The clocks a move or a withdrawal replaces are long enough for that to come first on a
    // loaded machine (a full run once took over 1.5 s from a creation to its first drop).
    for _ in 0..6 {
        let m = create_with(&mut client, &clock(4_000, "forfeit")).await;
        replaced.insert(clock_of(&store, m).await.0);
        first_drop(&mut client, m).await;
        forfeits.push(m);
    }
    let mut withdrawn = vec![];
    for _ in 0..4 {
        let m = create_with(&mut client, &clock(4_000, "forfeit")).await;
        replaced.insert(clock_of(&store, m).await.0);
        withdraw(&mut client, m).await;
        withdrawn.push(m);
    }
    // The default-move matches play a disc a second on their own; stop them after a few.
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    for m in &default_moves {
        cancel(&mut client, *m).await;
    }
    until_none_pending(&store, Duration::from_secs(30)).await;

    let fired = deadline_audit::each_fired_once(&store, &cluster.schema.options()).await;
    assert!(fired.is_disjoint(&replaced), "a replaced or cancelled generation fired");
    for m in &forfeits {
        assert_eq!(fired.iter().filter(|(f, _, _)| f == m).count(), 1, "{m}: its clock fired once");
        let state = store.load(*m).await.unwrap().unwrap();
        assert!(state.is_finished(), "{m} was forfeited");
    }
    for m in &default_moves {
        assert!(fired.iter().filter(|(f, _, _)| f == m).count() >= 2, "{m}: a default move per expired turn");
    }
    for m in &withdrawn {
        assert!(!fired.iter().any(|(f, _, _)| f == m), "{m} fired after it ended");
    }
    let (fired_a, fired_b) = (outcomes(&a, "fired").await, outcomes(&b, "fired").await);
    assert_eq!(fired_a + fired_b, fired.len() as f64, "the replicas counted every firing once");
    assert!(fired_a > 0.0 && fired_b > 0.0, "both replicas fired ({fired_a}, {fired_b})");
    assert_eq!(outcomes(&a, "failed").await + outcomes(&b, "failed").await, 0.0);
    let text = a.get("/metrics").await;
    assert!(metric_sum(&text, "juegoland_scheduler_lag_seconds_count") == fired_a, "{text}");
    assert!(text.contains("juegoland_scheduler_pending"), "{text}");
    store.close().await;
    drop((a, b));
    audit(&cluster, &Seen::default()).await;
    cluster.stop().await;
}

/// Acceptance "restart with pending deadlines": the scheduler is SIGKILLed holding claims on
/// the due clocks of a node SIGKILLed just before; both restart. Each valid generation fires
/// exactly once; replaced or cancelled generations never fire.
#[tokio::test(flavor = "multi_thread")]
async fn restart_with_pending_deadlines_fires_each_valid_generation_once() {
    let mut cluster = Cluster::start_with_env("sched_restart", 3, 1, DURABLE_ONLY).await;
    let (url, routers) = (cluster.schema.url(), cluster.router_urls());
    let mut scheduler = Proc::spawn(scheduler_args(&url, &routers, "sched", &["--lease-ms", "3000"]));
    let store = cluster.store().await;
    let mut client = cluster.client(0).await;

    // Clocks due in about five seconds: a quarter replaced by a move, a quarter cancelled
    // with the match, a quarter ended by a withdrawal, a quarter left alone.
    let (mut valid, mut replaced) = (BTreeSet::new(), BTreeSet::new());
    let mut first_due = i64::MAX;
    for k in 0..32 {
        let m = create_with(&mut client, &clock(5_000, "forfeit")).await;
        let (first, due) = clock_of(&store, m).await;
        match k % 4 {
            0 => {
                first_drop(&mut client, m).await;
                replaced.insert(first);
                let (next, due) = clock_of(&store, m).await;
                valid.insert(next);
                first_due = first_due.min(due);
            }
            1 => {
                cancel(&mut client, m).await;
                replaced.insert(first);
            }
            2 => {
                withdraw(&mut client, m).await;
                replaced.insert(first);
            }
            _ => {
                valid.insert(first);
                first_due = first_due.min(due);
            }
        }
    }
    let valid_matches: BTreeSet<Uuid> = valid.iter().map(|(m, _, _)| *m).collect();

    // The victim: the node that owns the most matches with a valid clock.
    let mut victim = (0, vec![]);
    for (i, node) in cluster.nodes.iter().enumerate() {
        let owned: Vec<Uuid> =
            owned_by(&cluster, node).await.into_iter().filter(|m| valid_matches.contains(m)).collect();
        if owned.len() > victim.1.len() {
            victim = (i, owned);
        }
    }
    let (victim, victim_matches) = victim;
    assert!(!victim_matches.is_empty(), "some valid clock lives on a node");
    let now = juegoland_actors::shell::now_ms();
    tokio::time::sleep(Duration::from_millis(u64::try_from(first_due - now - 300).unwrap_or(0))).await;
    cluster.nodes[victim].kill9();
    // The scheduler claims the victim's clocks when they fall due (the other nodes fire their
    // own from local timers); its firings go through the router, frozen here so that none can
    // land before the scheduler dies: on a loaded machine the ring can drop the dead node
    // before the claim, and a firing then goes through at once (it flaked CI so). Kill the
    // scheduler holding those claims.
    for router in &cluster.routers {
        signal(router.pid(), "-STOP");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_claims(&cluster, "sched", &victim_matches).await == 0 {
        assert!(Instant::now() < deadline, "the scheduler never claimed the victim's clocks");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    scheduler.kill9();
    let held = live_claims(&cluster, "sched", &victim_matches).await;
    for router in &cluster.routers {
        signal(router.pid(), "-CONT");
    }
    assert!(held > 0, "the dead scheduler left claims on pending deadlines");

    cluster.nodes[victim].restart();
    scheduler.restart();
    until_none_pending(&store, Duration::from_secs(60)).await;

    let fired = deadline_audit::each_fired_once(&store, &cluster.schema.options()).await;
    assert_eq!(fired, valid, "each valid generation fired, exactly once");
    assert!(fired.is_disjoint(&replaced), "a replaced or cancelled generation fired");
    assert!(outcomes(&scheduler, "fired").await >= held as f64, "the restarted scheduler fired what was claimed");
    for m in &valid_matches {
        assert!(store.load(*m).await.unwrap().unwrap().is_finished(), "{m} was forfeited");
    }
    store.close().await;
    drop(scheduler);
    audit(&cluster, &Seen::default()).await;
    cluster.stop().await;
}

/// The all-in-one fires through its host in process, and a clock pending when the process
/// is killed fires once it is back on the same embedded store.
#[tokio::test]
async fn the_all_in_one_fires_in_process_across_a_restart() {
    let dir = data_dir();
    let server = Server::start_in(&dir, &[]);
    let config = serde_json::from_str::<serde_json::Value>(&clock(1_000, "forfeit")).unwrap();
    let body = json!({ "game": "conecta4", "seats": { "p0": "alice", "p1": "bob" }, "config": config });
    let (status, created) = server.http("POST", "/v1/matches", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let m = created["matchId"].as_str().expect("matchId").to_owned();
    drop(server);
    tokio::time::sleep(Duration::from_millis(1_200)).await;

    let server = Server::start_in(&dir, &[]);
    let mut alice = server.connect("alice").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let snap = alice.sync(&m, "r").await;
        if !snap["result"].is_null() {
            assert_eq!(snap["result"]["reasonCode"], "timeout", "{snap}");
            assert_eq!(snap["revision"], 1, "one firing: {snap}");
            break;
        }
        assert!(Instant::now() < deadline, "the clock never fired: {snap}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, metrics) = crate::client::http(&server.addr.to_string(), "GET", "/metrics", None).await;
    let text = metrics.as_str().expect("the metrics as text");
    // The sync re-activated the match, so its actor's local timer may have fired the overdue
    // clock before the scheduler's grace ran out: one firing between the two paths.
    let local = "juegoland_local_deadlines_total{outcome=\"fired\"}";
    let local: f64 = text.lines().find_map(|l| l.strip_prefix(local)?.trim().parse().ok()).unwrap_or(0.0);
    assert_eq!(fired_in(text, "fired") + local, 1.0, "{text}");
}
