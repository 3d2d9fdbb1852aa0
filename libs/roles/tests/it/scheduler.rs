//! The deadline scheduler in process, over the real stores: replicas sharing due deadlines,
//! a replica and a host that die with claims and deadlines pending, stale and finished
//! matches, failed firings, and the all-in-one's embedded stores.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::{MatchError, MatchReply, MatchRequest, Matches};
use juegoland_bus::LocalBus;
use juegoland_core::{Engine, GameKey, LifecycleRequest, MatchState, Registry, SeatHolder};
use juegoland_protocol::{AckStatus, Action, CommandEnvelope, Precondition, ServerMessage};
use juegoland_roles::{Scheduler, SchedulerMetrics, SchedulerOptions};
use juegoland_store::{MemoryStore, PgStore, SqliteStore, Store};
use juegoland_testkit::{TempDir, TestSchema};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::audit;
use crate::clocked::{self, Clocked};

fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(Clocked)).expect("register the clocked game");
    Arc::new(registry)
}

async fn host(store: Arc<dyn Store>) -> Host {
    Host::start(
        Arc::new(Engine::new(registry())),
        store,
        Arc::new(LocalBus::default()),
        Metrics::new(&prometheus::Registry::new()).unwrap(),
        // The durable path alone: no local fast-path timers.
        HostConfig { local_deadline_horizon: None, ..HostConfig::default() },
    )
    .await
    .expect("start the host")
}

async fn pg(schema: &TestSchema) -> PgStore {
    PgStore::connect_with(PgStore::pool_options().max_connections(4), schema.options()).await.expect("connect")
}

fn key() -> GameKey {
    GameKey { id: clocked::GAME_ID.into(), rules_version: clocked::RULES_VERSION.into() }
}

fn seats() -> BTreeMap<String, SeatHolder> {
    BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Principal("bob".into())),
    ])
}

async fn create(host: &Host, config: Value) -> Uuid {
    host.create_match(&key(), seats(), &config).await.expect("create a clocked match")
}

/// `action` by whoever is to move, at the match's current revision; the new revision.
async fn act(host: &Host, match_id: Uuid, action: &str) -> u64 {
    let state = host.inspect(match_id).await.expect("inspect");
    let seat = state.position.flow.actors.keys().next().expect("a seat to move").clone();
    let principal = if seat == "p0" { "alice" } else { "bob" };
    let envelope = CommandEnvelope {
        match_id,
        command_id: Uuid::new_v8(rand_bytes()),
        precondition: Precondition::Match { revision: state.revision },
        action: Action { r#type: action.into(), payload: json!({}) },
    };
    match host.command(principal, envelope).await.expect("the host answers") {
        ServerMessage::Ack(a) if a.status == AckStatus::Applied => a.revision.expect("a revision"),
        other => panic!("{action} was not applied: {other:?}"),
    }
}

fn rand_bytes() -> [u8; 16] {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&n.to_le_bytes());
    b[8..].copy_from_slice(&nanos.to_le_bytes());
    b
}

/// The current `turn` deadline of a match: (id, generation).
fn turn(state: &MatchState) -> (String, u64) {
    let d = state.deadlines.get("turn").expect("a turn clock");
    ("turn".into(), d.generation)
}

fn options(claimant: &str) -> SchedulerOptions {
    SchedulerOptions {
        poll_interval: Duration::from_millis(50),
        batch: 8,
        lease: Duration::from_secs(2),
        count_every: Duration::from_millis(100),
        // The hosts here run without local timers.
        grace: Duration::ZERO,
        ..SchedulerOptions::new(claimant)
    }
}

fn start(store: Arc<dyn Store>, matches: Arc<dyn Matches>, options: SchedulerOptions) -> (Scheduler, SchedulerMetrics) {
    let metrics = SchedulerMetrics::new(&prometheus::Registry::new()).unwrap();
    (Scheduler::start(store, matches, options, metrics.clone()), metrics)
}

fn count(m: &SchedulerMetrics, outcome: &str) -> u64 {
    m.deadlines.with_label_values(&[outcome]).get()
}

/// Waits until the store has no pending deadline.
async fn until_none_pending(store: &dyn Store, within: Duration) {
    let deadline = Instant::now() + within;
    while store.pending_deadlines().await.unwrap() > 0 {
        assert!(Instant::now() < deadline, "deadlines still pending after {within:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Two replicas over the same due deadlines, with replaced, cancelled and finished-match
/// generations among them: every valid generation fires exactly once, nothing else fires,
/// and what the replicas could not fire they counted as stale.
#[tokio::test]
async fn two_replicas_fire_each_valid_generation_once() {
    let schema = TestSchema::create("roles", "two_replicas").await;
    let store: Arc<dyn Store> = Arc::new(pg(&schema).await);
    let host = host(store.clone()).await;
    // 40 matches time out twice (two generations fire each); 8 pass first (their first
    // generation is replaced); 6 resign (cancelled); 6 are withdrawn (finished, with the
    // clock left pending: it must never fire).
    let mut plain = vec![];
    for k in 0..40 {
        plain.push(create(&host, json!({ "turnMs": 400 + k * 10, "timeouts": 2 })).await);
    }
    let (mut passed, mut resigned, mut withdrawn) = (vec![], vec![], vec![]);
    let mut replaced = BTreeSet::new();
    for _ in 0..8 {
        let m = create(&host, json!({ "turnMs": 600, "timeouts": 2 })).await;
        let (id, g) = turn(&host.inspect(m).await.unwrap());
        act(&host, m, "pass").await;
        replaced.insert((m, id, g));
        passed.push(m);
    }
    for _ in 0..6 {
        let m = create(&host, json!({ "turnMs": 300 })).await;
        let (id, g) = turn(&host.inspect(m).await.unwrap());
        act(&host, m, "resign").await;
        replaced.insert((m, id, g));
        resigned.push(m);
    }
    for _ in 0..6 {
        let m = create(&host, json!({ "turnMs": 300 })).await;
        let (id, g) = turn(&host.inspect(m).await.unwrap());
        host.lifecycle(m, LifecycleRequest::Withdraw { seat: "p1".into() }).await.unwrap();
        replaced.insert((m, id, g));
        withdrawn.push(m);
    }

    let matches: Arc<dyn Matches> = Arc::new(host.clone());
    let (a, ma) = start(store.clone(), matches.clone(), options("replica-a"));
    let (b, mb) = start(store.clone(), matches, options("replica-b"));
    until_none_pending(&*store, Duration::from_secs(30)).await;
    a.stop().await;
    b.stop().await;

    let fired = audit::each_fired_once(&*store, &schema.options()).await;
    assert!(fired.is_disjoint(&replaced), "a replaced, cancelled or finished-match generation fired");
    for m in plain.iter().chain(&passed) {
        let state = store.load(*m).await.unwrap().unwrap();
        assert!(state.is_finished(), "{m} timed out twice");
        assert_eq!(fired.iter().filter(|(f, _, _)| f == m).count(), 2, "{m}: two generations fired");
    }
    for m in resigned.iter().chain(&withdrawn) {
        assert!(!fired.iter().any(|(f, _, _)| f == m), "{m} fired after it ended");
    }
    assert_eq!(count(&ma, "fired") + count(&mb, "fired"), fired.len() as u64);
    assert_eq!(fired.len(), 2 * (plain.len() + passed.len()));
    assert!(count(&ma, "fired") > 0 && count(&mb, "fired") > 0, "both replicas fired some");
    assert!(count(&ma, "stale") + count(&mb, "stale") >= withdrawn.len() as u64, "finished matches count as stale");
    assert_eq!(count(&ma, "failed") + count(&mb, "failed"), 0);
    assert_eq!(ma.lag_seconds.get_sample_count(), count(&ma, "fired"));
    let rows = audit::rows_by_state(&schema.options()).await;
    assert_eq!(rows.get("pending"), None, "nothing left pending");
    assert!(
        withdrawn.iter().all(|m| rows["cancelled"].iter().any(|(c, _, _)| c == m)),
        "finished matches' clocks cancelled"
    );
    drop(host);
    schema.drop_schema().await;
}

/// Matches that never answer: a replica firing through them holds its claims until it dies.
struct Stuck(Arc<Registry>);

#[async_trait::async_trait]
impl Matches for Stuck {
    fn registry(&self) -> &Arc<Registry> {
        &self.0
    }
    async fn call(&self, _: MatchRequest) -> Result<MatchReply, MatchError> {
        std::future::pending().await
    }
}

/// Acceptance "restart with pending deadlines", in process: the host and a scheduler replica
/// holding claims die at once (their runtime is dropped, as a SIGKILL would); a new host and
/// replica fire each valid generation exactly once, and replaced or cancelled generations
/// never.
#[test]
fn restart_with_pending_deadlines_fires_each_valid_generation_once() {
    let main = tokio::runtime::Runtime::new().unwrap();
    let schema = main.block_on(TestSchema::create("roles", "restart_pending"));
    let doomed = tokio::runtime::Runtime::new().unwrap();
    // Before the crash: deadlines due in about a second, some replaced and some cancelled;
    // the dying replica claims the first due ones and never answers.
    let (valid, replaced) = doomed.block_on(async {
        let store: Arc<dyn Store> = Arc::new(pg(&schema).await);
        let host = host(store.clone()).await;
        let (mut valid, mut replaced) = (BTreeSet::new(), BTreeSet::new());
        for k in 0..30 {
            let m = create(&host, json!({ "turnMs": 800 + k * 20 })).await;
            let (id, g) = turn(&host.inspect(m).await.unwrap());
            match k % 3 {
                0 => {
                    act(&host, m, "pass").await;
                    replaced.insert((m, id, g));
                    let (id, g) = turn(&host.inspect(m).await.unwrap());
                    valid.insert((m, id, g));
                }
                1 => {
                    act(&host, m, "resign").await;
                    replaced.insert((m, id, g));
                }
                _ => {
                    valid.insert((m, id, g));
                }
            }
        }
        let (dying, _) = start(store.clone(), Arc::new(Stuck(registry())), options("dying"));
        std::mem::forget(dying);
        let deadline = Instant::now() + Duration::from_secs(10);
        while claimed_by(&schema, "dying").await == 0 {
            assert!(Instant::now() < deadline, "the dying replica never claimed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (valid, replaced)
    });
    doomed.shutdown_background();

    main.block_on(async {
        assert!(claimed_by(&schema, "dying").await > 0, "the dead replica left claims behind");
        let store: Arc<dyn Store> = Arc::new(pg(&schema).await);
        let host = host(store.clone()).await;
        let (after, metrics) = start(store.clone(), Arc::new(host.clone()), options("after"));
        until_none_pending(&*store, Duration::from_secs(30)).await;
        after.stop().await;
        let fired = audit::each_fired_once(&*store, &schema.options()).await;
        assert_eq!(fired, valid, "each valid generation fired, exactly once");
        assert!(fired.is_disjoint(&replaced));
        assert_eq!(count(&metrics, "fired"), valid.len() as u64);
        drop(host);
        schema.drop_schema().await;
    });
}

/// How many pending deadlines `claimant` holds a claim on.
async fn claimed_by(schema: &TestSchema, claimant: &str) -> i64 {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect_with(&schema.options()).await.unwrap();
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM deadlines WHERE state = 'pending' AND claimed_by = $1")
        .bind(claimant)
        .fetch_one(&mut c)
        .await
        .unwrap();
    n
}

/// The host, failing its first `failures` firings with UNAVAILABLE.
struct Flaky {
    host: Host,
    failures: AtomicU64,
}

#[async_trait::async_trait]
impl Matches for Flaky {
    fn registry(&self) -> &Arc<Registry> {
        self.host.registry()
    }
    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
        let firing = matches!(request, MatchRequest::Lifecycle { .. });
        if firing && self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Err(MatchError::Unavailable("the node is restarting".into()));
        }
        self.host.call(request).await
    }
}

/// A firing answered UNAVAILABLE is retried once its claim has expired; a stopping replica
/// gives the claims of its failed firings back, so another replica retries them at once.
#[tokio::test]
async fn failed_firings_are_retried_after_the_lease_or_released_on_stop() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let host = host(store.clone()).await;
    let m = create(&host, json!({ "turnMs": 50 })).await;
    let flaky = Arc::new(Flaky { host: host.clone(), failures: AtomicU64::new(1) });
    let lease = Duration::from_millis(700);
    let started = Instant::now();
    let (a, metrics) = start(store.clone(), flaky, SchedulerOptions { lease, ..options("replica-a") });
    until_none_pending(&*store, Duration::from_secs(10)).await;
    assert!(started.elapsed() >= lease, "retried only once the claim expired");
    assert_eq!((count(&metrics, "failed"), count(&metrics, "fired")), (1, 1));
    a.stop().await;
    assert!(store.load(m).await.unwrap().unwrap().is_finished(), "timed out");

    // Always unavailable: the claim is held until the replica stops, then released.
    let m = create(&host, json!({ "turnMs": 10 })).await;
    let down = Arc::new(Flaky { host: host.clone(), failures: AtomicU64::new(u64::MAX) });
    let long = SchedulerOptions { lease: Duration::from_secs(600), ..options("replica-b") };
    let (b, metrics) = start(store.clone(), down, long);
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&metrics, "failed") == 0 {
        assert!(Instant::now() < deadline, "no firing failed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let now = juegoland_actors::shell::now_ms();
    assert_eq!(store.claim_deadlines("replica-c", now, Duration::from_secs(1), 10).await.unwrap(), vec![]);
    b.stop().await;
    let claimed = store.claim_deadlines("replica-c", now, Duration::from_secs(1), 10).await.unwrap();
    assert_eq!(claimed.iter().map(|d| d.match_id).collect::<Vec<_>>(), vec![m], "released on stop");
}

/// The all-in-one's stores: the embedded SQLite store and the in-memory one fire through
/// the host in process, and the metrics see it.
#[tokio::test]
async fn the_all_in_one_stores_fire_in_process() {
    let dir = TempDir::new("scheduler-sqlite");
    let stores: Vec<Arc<dyn Store>> =
        vec![Arc::new(SqliteStore::open(dir.path()).await.unwrap()), Arc::new(MemoryStore::new())];
    for store in stores {
        let host = host(store.clone()).await;
        let ms = [
            create(&host, json!({ "turnMs": 100, "timeouts": 2 })).await,
            create(&host, json!({ "turnMs": 150 })).await,
        ];
        let (s, metrics) = start(store.clone(), Arc::new(host.clone()), options("all-in-one"));
        until_none_pending(&*store, Duration::from_secs(10)).await;
        for m in ms {
            let state = store.load(m).await.unwrap().unwrap();
            assert!(state.is_finished(), "{m} timed out");
        }
        // The counter moves after the firing's commit is visible in the store: wait for it.
        let deadline = Instant::now() + Duration::from_secs(5);
        while count(&metrics, "fired") < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(count(&metrics, "fired"), 3);
        let deadline = Instant::now() + Duration::from_secs(5);
        while metrics.pending.get() != 0 {
            assert!(Instant::now() < deadline, "the pending gauge never came down");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        s.stop().await;
    }
}
